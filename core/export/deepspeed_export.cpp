// SPDX-License-Identifier: GPL-3.0-or-later
// A DeepSpeed config JSON: batch, precision, ZeRO stage and offload (DeepSpeed v0.19 docs,
// docs/_pages/config-json.md: https://www.deepspeed.ai/docs/config-json/). JSON has no comments, so
// the header and the notes go back to the caller.
#include "export/export_text.h"
#include "export/training_export.h"
#include "model/stack_profile.h"

#include <nlohmann/json.hpp>

#include <cstdint>

namespace membudget {

namespace {

using Json = nlohmann::ordered_json;

int stageOf(const ExportPlan &plan, std::vector<std::string> &notes)
{
    switch (plan.scenario.parallelism.sharding) {
    case Sharding::None:
        return 0;
    case Sharding::Zero1:
        return 1;
    case Sharding::Zero2:
        return 2;
    case Sharding::Zero3:
        return 3;
    case Sharding::FsdpFull:
        notes.push_back("an FSDP scenario written for DeepSpeed: FULL_SHARD is ZeRO stage 3 (the "
                        "equivalence accelerate's documentation draws)");
        return 3;
    case Sharding::FsdpGradOp:
        notes.push_back("an FSDP scenario written for DeepSpeed: SHARD_GRAD_OP is ZeRO stage 2");
        return 2;
    }
    return 0;
}

// bf16 / fp16 / torch_autocast sections for the precision the estimate steps in (under the
// Trainer's flag amp-* and pure 16-bit weights are DeepSpeed's bf16/fp16: deepSpeedPrecision).
void precision(const ExportPlan &plan, int stage, Json &j, std::vector<std::string> &notes)
{
    const Precision p = deepSpeedPrecision(plan.scenario.training, plan.scenario.parallelism);
    const std::string dtype = plan.bf16 ? "bfloat16" : "float16";
    switch (p) {
    case Precision::Fp32:
        return;
    case Precision::AmpBf16:
    case Precision::AmpFp16:
        // torch.autocast on fp32 weights, what MemBudget calls amp-*.
        j["torch_autocast"] = {{"enabled", true}, {"dtype", dtype}};
        return;
    case Precision::MixedBf16:
        j["bf16"] = {{"enabled", true}};
        return;
    case Precision::MixedFp16:
        j["fp16"] = {{"enabled", true}};
        return;
    case Precision::Bf16:
        if (stage == 0) {
            notes.push_back("pure bf16 needs ZeRO stage 1-3 in DeepSpeed; stage 0 keeps an fp32 "
                            "master copy (MemBudget's mixed-bf16)");
            j["bf16"] = {{"enabled", true}};
            return;
        }
        j["bf16"] = {{"enabled", true},
                     {"bf16_master_weights_and_grads", true},
                     {"bf16_optimizer_states",
                      deepSpeedBf16OptimizerStates(plan.scenario.parallelism).value_or(true)}};
        return;
    case Precision::Fp16:
        notes.push_back("DeepSpeed's fp16 keeps an fp32 master copy (MemBudget's mixed-fp16): "
                        "pure fp16 has no DeepSpeed setting");
        j["fp16"] = {{"enabled", true}};
        return;
    }
}

} // namespace

TrainingExport exportDeepSpeedJson(const ExportPlan &plan)
{
    const Scenario &s = plan.scenario;
    const TrainingConfig &t = s.training;
    std::vector<std::string> notes = plan.notes;
    const int stage = stageOf(plan, notes);

    Json j;
    j["train_micro_batch_size_per_gpu"] = t.micro_batch_size;
    j["gradient_accumulation_steps"] = t.gradient_accumulation_steps;
    j["train_batch_size"] = t.micro_batch_size * t.gradient_accumulation_steps * plan.dataParallel;
    precision(plan, stage, j, notes);
    Json zero = {{"stage", stage}};
    if (t.offload.optimizer)
        zero["offload_optimizer"] = {{"device", "cpu"}, {"pin_memory", true}};
    if (t.offload.parameters)
        zero["offload_param"] = {{"device", "cpu"}, {"pin_memory", true}};
    // The scenario's own ZeRO sizes (DeepSpeed's defaults otherwise); whole numbers of elements.
    const DeepSpeedConfig &ds = s.parallelism.deepspeed;
    if (ds.reduce_bucket_size && stage > 0)
        zero["reduce_bucket_size"] = static_cast<std::int64_t>(*ds.reduce_bucket_size);
    if (ds.overlap_comm && stage > 0)
        zero["overlap_comm"] = *ds.overlap_comm;
    if (ds.sub_group_size && stage == 3)
        zero["sub_group_size"] = static_cast<std::int64_t>(*ds.sub_group_size);
    if (plan.scenario.parallelism.shard_group > 0) {
        if (stage == 3) // MiCS (DeepSpeed docs, zero3.rst): partition within groups of this size
            zero["mics_shard_size"] = plan.scenario.parallelism.shard_group;
        else
            notes.push_back("DeepSpeed shards over groups (MiCS, mics_shard_size) with ZeRO stage "
                            "3 only: this stage shards over every data-parallel GPU, which needs "
                            "less memory than estimated");
    }
    if ((t.offload.optimizer || t.offload.parameters) && stage == 0)
        notes.push_back("offloading to CPU RAM needs ZeRO stage 1 or more (parameters: stage 3)");
    j["zero_optimization"] = zero;
    if (t.optimizer == Optimizer::AdamW || t.optimizer == Optimizer::AdamWFused) {
        // "auto": the HF Trainer / accelerate fill these from TrainingArguments.
        j["optimizer"]
            = {{"type", "AdamW"},
               {"params",
                {{"lr", "auto"}, {"betas", "auto"}, {"eps", "auto"}, {"weight_decay", "auto"}}}};
        notes.push_back("optimizer parameters are \"auto\", filled in by the HF Trainer or "
                        "accelerate; with deepspeed.initialize() write numbers");
    } else {
        notes.push_back("the " + plan.optim
                        + " optimizer is not DeepSpeed's: the Trainer creates it from "
                          "TrainingArguments(optim=...) and DeepSpeed wraps it"
                        + (t.offload.optimizer ? "; optimizer offload runs DeepSpeed's CPU Adam "
                                                 "instead, so it needs adamw"
                                               : ""));
    }
    if (t.checkpointing != Checkpointing::None)
        notes.push_back("gradient checkpointing is the model's: "
                        "TrainingArguments(gradient_checkpointing=True)");
    if (t.loss == LossImplementation::Chunked)
        notes.push_back(
            "the chunked loss is Liger's kernel: TrainingArguments(use_liger_kernel=True)");

    TrainingExport e;
    e.text = j.dump(2) + "\n";
    e.header = exportHeader(plan, "DeepSpeed v0.19 (config JSON)", notes);
    e.notes = notes;
    e.fileName = "ds_config.json";
    return e;
}

} // namespace membudget
