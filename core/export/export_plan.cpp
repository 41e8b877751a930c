// SPDX-License-Identifier: GPL-3.0-or-later
#include "export/export_plan.h"

#include "hub/hub_model_ref.h"
#include "io/preset_catalog.h"
#include "model/memory_estimator.h"
#include "model/weight_format.h"

namespace membudget {

namespace {

// transformers training_args.py OptimizerNames; Trainer.get_optimizer_cls_and_kwargs maps "sgd" to
// torch.optim.SGD with the learning rate only (no momentum) and "lion_32bit" to bitsandbytes' Lion.
std::string optimName(Optimizer o, std::vector<std::string> &notes)
{
    switch (o) {
    case Optimizer::AdamW:
        return "adamw_torch";
    case Optimizer::AdamWFused:
        return "adamw_torch_fused";
    case Optimizer::AdamW8bit:
        return "adamw_bnb_8bit";
    case Optimizer::PagedAdamW:
        return "paged_adamw_32bit";
    case Optimizer::PagedAdamW8bit:
        return "paged_adamw_8bit";
    case Optimizer::Sgd:
        return "sgd";
    case Optimizer::SgdMomentum:
        notes.push_back(
            "optimizer sgd-momentum: the Trainer's \"sgd\" has no momentum buffer; pass "
            "torch.optim.SGD(params, lr=..., momentum=0.9) through "
            "Trainer(optimizers=(optimizer, None)) to train what was estimated");
        return "sgd";
    case Optimizer::Adafactor:
        return "adafactor";
    case Optimizer::Lion:
        return "lion_32bit";
    }
    return "adamw_torch";
}

const char *attnName(Attention a)
{
    switch (a) {
    case Attention::Eager:
        return "eager";
    case Attention::Sdpa:
        return "sdpa";
    case Attention::Flash:
        return "flash_attention_2";
    }
    return "sdpa";
}

// The Hugging Face id of the model: the one it was fetched by, or the one its preset came from
// (presets name their config.json as "owner/name config.json").
void findModelId(const Scenario &s, const PresetCatalog &catalog, ExportPlan &plan)
{
    std::string candidate = s.model.source;
    if (candidate.empty() && !s.model.preset.empty())
        if (const ModelPreset *p = catalog.findModel(s.model.preset)) {
            candidate = p->source.substr(0, p->source.find(' '));
            plan.modelName = p->name;
        }
    std::string problem;
    if (const auto ref = parseHubModelRef("hf:" + candidate, {}, problem);
        !candidate.empty() && ref && ref->repoId.find('/') != std::string::npos) {
        plan.modelId = ref->repoId;
        plan.revision = ref->revision == "main" ? std::string() : ref->revision;
    }
    if (plan.modelName.empty())
        plan.modelName = plan.modelId.empty() ? std::string("a custom model") : plan.modelId;
    // A preset or an imported model whose architecture was edited is no longer that checkpoint.
    ModelSpec plain;
    plain.preset = s.model.preset;
    const bool edited = !s.model.preset.empty() && !(s.model == plain);
    if (edited && !plan.modelId.empty())
        plan.notes.push_back("the scenario changes the architecture of " + plan.modelId
                             + "; the checkpoint named here is the unchanged model");
    if (plan.modelId.empty())
        plan.notes.push_back("the scenario names no Hugging Face model: replace "
                             "\"path/to/your/model\" with your checkpoint");
}

void precision(const TrainingConfig &t, ExportPlan &plan)
{
    plan.halfCompute = t.precision != Precision::Fp32;
    plan.bf16 = t.precision == Precision::AmpBf16 || t.precision == Precision::Bf16
                || t.precision == Precision::MixedBf16;
    plan.computeDtype = !plan.halfCompute ? "float32" : plan.bf16 ? "bfloat16" : "float16";
    plan.mixedPrecisionFlag = plan.halfCompute && t.trainer_mixed_precision.value_or(true);
}

void sharedNotes(const Scenario &s, ExportPlan &plan)
{
    const TrainingConfig &t = s.training;
    if (s.parallelism.tensor_parallel > 1)
        plan.notes.push_back(
            "tensor parallelism (degree " + std::to_string(s.parallelism.tensor_parallel)
            + ") has no setting here: these files run " + std::to_string(s.parallelism.gpus)
            + " data-parallel processes, each holding what MemBudget splits "
              "across the tensor-parallel group");
    if (t.float8 && t.mode == Mode::Train)
        plan.notes.push_back(
            "float8 training is torchao's Float8Linear (torchtitan "
            "model.converters float8, or torchao.float8.convert_to_float8_training "
            "on the model): these files do not set it up");
    if (s.parallelism.context_parallel > 1)
        plan.notes.push_back(
            "context parallelism (degree " + std::to_string(s.parallelism.context_parallel)
            + ") has no setting here: it is torchtitan's parallelism.context_parallel_degree "
              "(torch.distributed.tensor.experimental.context_parallel); these files give each "
              "process whole sequences");
    if (s.parallelism.pipeline_parallel > 1)
        plan.notes.push_back(
            "pipeline parallelism (" + std::to_string(s.parallelism.pipeline_parallel) + " stages, "
            + pipelineScheduleName(s.parallelism.pipeline_schedule)
            + ") has no setting here: it is torchtitan's parallelism.pipeline_parallel_degree "
              "and pipeline_parallel_schedule (torch.distributed.pipelining); these files give "
              "each process the whole model");
    if (t.checkpointing == Checkpointing::Selective)
        plan.notes.push_back("selective (attention-only) checkpointing has no Trainer, accelerate "
                             "or DeepSpeed setting: full gradient checkpointing is written, which "
                             "needs less memory and more compute than estimated");
    if (t.checkpointing == Checkpointing::OpSelective)
        plan.notes.push_back("op-level selective checkpointing (torchtitan's selective_ac_option "
                             "\"op\") has no Trainer, accelerate or DeepSpeed setting: full "
                             "gradient checkpointing is written, which needs less memory and more "
                             "compute than estimated");
    if (t.activation_offloading && t.mode == Mode::Train)
        plan.notes.push_back("activation offloading is torchtune's enable_activation_offloading: "
                             "True; the Trainer, accelerate and DeepSpeed have no setting that "
                             "offloads the checkpointed layers' inputs, which stay on the GPU "
                             "(more memory than estimated)");
    if (t.optimizer_in_backward && t.mode == Mode::Train)
        plan.notes.push_back("the optimizer step in backward is torchtune's optimizer_in_bwd: True "
                             "(full_finetune_single_device); the Trainer, accelerate and "
                             "DeepSpeed step after backward and hold every gradient until then, "
                             "which needs more memory than estimated");
    if (s.parallelism.shard_group > 0 && s.parallelism.sharding != Sharding::None)
        plan.notes.push_back("shard_group " + std::to_string(s.parallelism.shard_group)
                             + ": FSDP's hybrid strategies shard within each node, so this "
                               "should be the GPUs per node (DeepSpeed's MiCS takes the size "
                               "itself)");
    if (t.checkpointing == Checkpointing::Full && t.checkpoint_every > 1)
        plan.notes.push_back("checkpoint_every: " + std::to_string(t.checkpoint_every)
                             + " (torchtitan's layer-selective checkpointing) has no Trainer, "
                               "accelerate or DeepSpeed setting: every layer is checkpointed, "
                               "which needs less memory and more compute than estimated");
    if (t.lora.loraplus_lr_ratio > 0)
        plan.notes.push_back(
            "LoRA+ (loraplus_lr_ratio) has no Trainer setting: build the optimizer "
            "with peft.optimizers.create_loraplus_optimizer and pass it to the "
            "trainer; memory is the same as LoRA's");
    if (t.loss == LossImplementation::HfLegacy)
        plan.notes.push_back("loss hf-legacy is how transformers before 4.46 computed the loss; "
                             "no setting selects it");
    if (t.loss == LossImplementation::TrlChunkedNll)
        plan.notes.push_back("loss trl-chunked-nll is TRL's SFTTrainer loss_type \"chunked_nll\" "
                             "(its default from TRL 1.7); only the SFT export (--format sft) "
                             "sets it");
    if (t.loss == LossImplementation::NoUpcast)
        plan.notes.push_back("loss no-upcast is how a model's own code (remote code such as "
                             "Qwen (v1)) computes the loss on its 16-bit logits; no setting "
                             "selects it");
    if (t.loss == LossImplementation::Fp32Output || t.loss == LossImplementation::Fp32OutputKept)
        plan.notes.push_back(std::string("loss ") + lossName(t.loss)
                             + " is how torchtitan's training loop computes the loss (its model "
                               "returns fp32 logits); no Trainer setting selects it");
    if (t.method != Method::Full && plan.family != ModelFamily::Llama
        && plan.family != ModelFamily::Gemma
        && plan.loraTargets != std::vector<std::string>{"all-linear"})
        plan.notes.push_back("LoRA target modules use Llama's names (q_proj, ...); GPT-2, "
                             "StarCoder and Falcon name their projections differently "
                             "(c_attn, query_key_value, ...): adapt target_modules");
}

} // namespace

std::string ExportPlan::modelIdOrPlaceholder() const
{
    return modelId.empty() ? std::string("path/to/your/model") : modelId;
}

std::optional<ExportPlan> makeExportPlan(const Scenario &scenario,
                                         const PresetCatalog &catalog,
                                         std::string &problem)
{
    const auto input = resolveScenario(scenario, catalog, problem);
    if (!input)
        return std::nullopt;
    if (scenario.training.mode != Mode::Train) {
        problem = "this is an inference scenario; the exported files configure training (set "
                  "training.mode: train)";
        return std::nullopt;
    }
    const TrainingConfig &t = scenario.training;
    if (t.method == Method::Ia3) {
        problem = "IA3 has no export yet: the exported files configure LoRA and QLoRA";
        return std::nullopt;
    }
    if (t.quantization != Quantization::None && !isBitsandbytes(t.quantization)) {
        problem = std::string("quantization ") + quantizationName(t.quantization)
                  + " has no export yet: the exported files load bitsandbytes formats (int8, "
                    "nf4, nf4-double, fp4, fp4-double)";
        return std::nullopt;
    }
    ExportPlan plan;
    plan.scenario = scenario;
    plan.family = input->arch.family;
    plan.peakPerGpu = estimateMemory(*input).device_total;
    ParallelismConfig processes = scenario.parallelism;
    processes.pipeline_parallel = 1; // the files run no pipeline: each process the whole model
    plan.dataParallel = processes.dataParallel();
    findModelId(scenario, catalog, plan);
    plan.optim = optimName(scenario.training.optimizer, plan.notes);
    plan.attnImplementation = attnName(scenario.training.attention);
    precision(scenario.training, plan);
    plan.loraTargets = loraTargetNames(scenario.training.lora.targets);
    sharedNotes(scenario, plan);
    return plan;
}

} // namespace membudget
