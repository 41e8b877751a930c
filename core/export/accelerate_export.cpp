// SPDX-License-Identifier: GPL-3.0-or-later
// An `accelerate launch --config_file` YAML: FSDP for fsdp-full / fsdp-grad-op, the DeepSpeed
// plugin for ZeRO, DDP otherwise. Key names and values as `accelerate config` writes them
// (accelerate v1.14 commands/config/cluster.py, config_args.py; FSDP options as documented in
// `accelerate launch --help` and usage_guides/fsdp.md).
#include "export/export_text.h"
#include "export/training_export.h"
#include "model/stack_profile.h"

#include <yaml-cpp/yaml.h>

namespace membudget {

namespace {

bool isFsdp(Sharding s)
{
    return s == Sharding::FsdpFull || s == Sharding::FsdpGradOp;
}

int zeroStage(Sharding s)
{
    return s == Sharding::Zero1 ? 1 : s == Sharding::Zero2 ? 2 : s == Sharding::Zero3 ? 3 : 0;
}

void fsdpConfig(const ExportPlan &plan, YAML::Emitter &y, std::vector<std::string> &notes)
{
    const Scenario &s = plan.scenario;
    const TrainingConfig &t = s.training;
    y << YAML::Key << "fsdp_config" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "fsdp_activation_checkpointing" << YAML::Value
      << (t.checkpointing != Checkpointing::None);
    y << YAML::Key << "fsdp_auto_wrap_policy" << YAML::Value << "TRANSFORMER_BASED_WRAP";
    y << YAML::Key << "fsdp_cpu_ram_efficient_loading" << YAML::Value << true;
    y << YAML::Key << "fsdp_offload_params" << YAML::Value << t.offload.parameters;
    // FSDP1 takes a ShardingStrategy name here; the hybrid ones shard within each node.
    const bool hybrid = s.parallelism.shard_group > 0;
    y << YAML::Key << "fsdp_reshard_after_forward" << YAML::Value
      << (s.parallelism.sharding == Sharding::FsdpFull
              ? (hybrid ? "HYBRID_SHARD" : "FULL_SHARD")
              : (hybrid ? "HYBRID_SHARD_ZERO2" : "SHARD_GRAD_OP"));
    y << YAML::Key << "fsdp_state_dict_type" << YAML::Value << "SHARDED_STATE_DICT";
    y << YAML::Key << "fsdp_sync_module_states" << YAML::Value << true;
    y << YAML::Key << "fsdp_use_orig_params" << YAML::Value << true;
    y << YAML::Key << "fsdp_version" << YAML::Value << 1;
    y << YAML::EndMap;
    if (t.offload.optimizer && !t.offload.parameters)
        notes.push_back("FSDP cannot offload the optimizer alone (fsdp_offload_params moves "
                        "parameters and gradients): use ZeRO with offload_optimizer_device, or "
                        "offload parameters too");
    if (t.precision == Precision::MixedBf16 || t.precision == Precision::MixedFp16)
        notes.push_back("FSDP keeps no separate fp32 master copy: the parameters stay in the "
                        "dtype the model was loaded in (fp32 = MemBudget's amp-*, 16-bit = pure "
                        "16-bit)");
}

void deepspeedConfig(const ExportPlan &plan, YAML::Emitter &y, std::vector<std::string> &notes)
{
    const Scenario &s = plan.scenario;
    const TrainingConfig &t = s.training;
    const int stage = zeroStage(s.parallelism.sharding);
    y << YAML::Key << "deepspeed_config" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "gradient_accumulation_steps" << YAML::Value << t.gradient_accumulation_steps;
    y << YAML::Key << "offload_optimizer_device" << YAML::Value
      << (t.offload.optimizer ? "cpu" : "none");
    y << YAML::Key << "offload_param_device" << YAML::Value
      << (t.offload.parameters ? "cpu" : "none");
    if (stage == 3)
        y << YAML::Key << "zero3_init_flag" << YAML::Value << true;
    y << YAML::Key << "zero_stage" << YAML::Value << stage;
    y << YAML::EndMap;
    if (deepSpeedPrecision(t, s.parallelism) == Precision::Bf16)
        notes.push_back("pure bf16 (no fp32 master copy) needs DeepSpeed's "
                        "bf16_master_weights_and_grads and bf16_optimizer_states: point "
                        "deepspeed_config_file at the --format deepspeed file instead of these "
                        "keys");
}

} // namespace

TrainingExport exportAccelerateYaml(const ExportPlan &plan)
{
    const Scenario &s = plan.scenario;
    const TrainingConfig &t = s.training;
    std::vector<std::string> notes = plan.notes;
    const Sharding sharding = s.parallelism.sharding;
    const char *distributed = isFsdp(sharding)          ? "FSDP"
                              : zeroStage(sharding) > 0 ? "DEEPSPEED"
                              : s.parallelism.gpus > 1  ? "MULTI_GPU"
                                                        : "NO";
    const char *mixed = !plan.mixedPrecisionFlag ? "no" : plan.bf16 ? "bf16" : "fp16";

    YAML::Emitter y;
    y << YAML::BeginMap;
    y << YAML::Key << "compute_environment" << YAML::Value << "LOCAL_MACHINE";
    y << YAML::Key << "distributed_type" << YAML::Value << YAML::DoubleQuoted
      << distributed; // "NO" is not a boolean
    if (isFsdp(sharding))
        fsdpConfig(plan, y, notes);
    else if (zeroStage(sharding) > 0)
        deepspeedConfig(plan, y, notes);
    else if (t.offload.optimizer || t.offload.parameters)
        notes.push_back("offloading to CPU RAM needs ZeRO or FSDP");
    y << YAML::Key << "machine_rank" << YAML::Value << 0;
    y << YAML::Key << "main_training_function" << YAML::Value << "main";
    y << YAML::Key << "mixed_precision" << YAML::Value << YAML::DoubleQuoted << mixed;
    y << YAML::Key << "num_machines" << YAML::Value << 1;
    y << YAML::Key << "num_processes" << YAML::Value << s.parallelism.gpus;
    y << YAML::Key << "rdzv_backend" << YAML::Value << "static";
    y << YAML::Key << "same_network" << YAML::Value << true;
    y << YAML::Key << "use_cpu" << YAML::Value << false;
    y << YAML::EndMap;

    if (s.parallelism.gpus > 8)
        notes.push_back("num_machines is 1: for " + std::to_string(s.parallelism.gpus)
                        + " GPUs on several machines set num_machines, machine_rank and "
                          "main_process_ip on each");
    notes.push_back("micro-batch size (" + std::to_string(t.micro_batch_size)
                    + "), sequence length, optimizer and gradient checkpointing belong to the "
                      "training script: see --format trainer or sft");

    TrainingExport e;
    e.header = exportHeader(plan, "accelerate v1.14 (accelerate config / accelerate launch)", notes);
    std::string text;
    for (const std::string &line : e.header)
        text += "# " + line + "\n";
    text += "\n";
    e.text = text + y.c_str() + "\n";
    e.notes = notes;
    e.fileName = "accelerate_config.yaml";
    return e;
}

} // namespace membudget
