// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/memory_estimator.h"

#include "model/context_parallel.h"
#include "model/model_states.h"
#include "model/pipeline_parallel.h"
#include "model/stack_profile.h"
#include "model/step_model.h"
#include "model/weight_format.h"

namespace membudget {

namespace {

// The weight formats, IA3 and the inference keys (issue 14).
std::string validateFormats(const TrainingConfig &t, std::string *key)
{
    auto problem = [key](const char *where, const char *message) {
        if (key)
            *key = where;
        return std::string(message);
    };
    const QuantizationOptions &o = t.quantization_options;
    const std::int64_t bits = o.bits;
    if (bits != 0 && t.quantization == Quantization::Gptq && bits != 2 && bits != 3 && bits != 4
        && bits != 8)
        return problem("training.quantization_options.bits", "gptq stores 2, 3, 4 or 8 bits");
    if (bits != 0 && t.quantization == Quantization::Hqq && bits != 1 && bits != 2 && bits != 3
        && bits != 4 && bits != 8)
        return problem("training.quantization_options.bits", "hqq stores 1, 2, 3, 4 or 8 bits");
    const bool ggml = quantKernel(t.quantization) == QuantKernel::Fused
                      && t.quantization != Quantization::Gptq
                      && t.quantization != Quantization::TorchaoInt4;
    if (t.mode == Mode::Train && ggml)
        return problem("training.quantization",
                       "llama.cpp formats (q4_k, q5_k, q6_k, q8_0) are for inference: "
                       "transformers dequantizes GGUF weights when it loads them");
    if (t.method == Method::Ia3 && t.ia3.targets == 0)
        return problem("training.ia3.targets", "IA3 needs at least one target module");
    const InferenceConfig &inf = t.inference;
    if (t.mode == Mode::Inference && inf.kv_cache == KvCacheKind::Static && inf.max_cache_len > 0
        && inf.max_cache_len < t.sequence_length + inf.generated_tokens)
        return problem("training.inference.max_cache_len",
                       "max_cache_len must hold the prompt and the generated tokens");
    if (inf.kv_cache == KvCacheKind::Quantized && inf.kv_cache_dtype != KvCacheDtype::Model)
        return problem("training.inference.kv_cache_dtype",
                       "a quantized cache has its own bits: kv_cache_dtype model");
    return {};
}

// torchtune's recipes refuse gradient accumulation and clipping with optimizer_in_bwd
// (recipes/full_finetune_single_device.py); a GradScaler unscales every gradient before the step,
// and DeepSpeed's master-weight optimizers and CPU Adam step outside torch's autograd hooks.
std::string validateOptimizerInBackward(const TrainingConfig &t,
                                        const ParallelismConfig &p,
                                        std::string *key)
{
    if (!t.optimizer_in_backward || t.mode != Mode::Train)
        return {};
    std::string problem;
    if (t.gradient_accumulation_steps > 1)
        problem = "the optimizer step in backward frees each gradient at once: no gradient "
                  "accumulation (gradient_accumulation_steps 1)";
    else if (t.precision == Precision::AmpFp16)
        problem = "amp-fp16's GradScaler unscales all gradients before one step: not with the "
                  "optimizer step in backward (use amp-bf16 or bf16)";
    else if (isMixedMaster(t.precision))
        problem = "mixed-* precision steps an fp32 master copy (DeepSpeed, Megatron): the "
                  "optimizer step in backward runs on the parameters themselves (use bf16 or "
                  "amp-bf16)";
    else if (t.offload.optimizer)
        problem = "offloaded optimizer states are stepped on the CPU after backward: not with the "
                  "optimizer step in backward";
    else if (p.gpus > 1)
        problem = "the optimizer step in backward is modelled on one GPU (torchtune "
                  "full_finetune_single_device): gpus 1";
    if (!problem.empty() && key)
        *key = "training.optimizer_in_backward";
    return problem;
}

// torchtune refuses activation offloading without activation checkpointing (its recipes'
// _setup_model); what it offloads then is each checkpointed layer's input.
std::string validateActivationOffloading(const TrainingConfig &t, std::string *key)
{
    if (!t.activation_offloading || t.mode != Mode::Train)
        return {};
    if (t.checkpointing != Checkpointing::Full || t.checkpoint_every != 1) {
        if (key)
            *key = "training.activation_offloading";
        return "activation offloading moves the checkpointed layers' inputs to CPU RAM: it needs "
               "gradient_checkpointing full on every layer (checkpoint_every 1)";
    }
    return {};
}

// torchao's float8 training converts the 16-bit (bf16) linears of a full training run; LoRA
// adapters over float8 bases and fp16 or fp32 runs are not what torchtitan trains.
std::string validateFloat8(const TrainingConfig &t, std::string *key)
{
    if (!t.float8 || t.mode != Mode::Train)
        return {};
    const bool bf16 = t.precision == Precision::Bf16 || t.precision == Precision::AmpBf16
                      || t.precision == Precision::MixedBf16;
    const char *problem = nullptr;
    if (t.method != Method::Full)
        problem = "float8 training is modelled for full fine-tuning (torchao Float8Linear on "
                  "trained weights): use method full";
    else if (!bf16)
        problem = "float8 training keeps bf16 as its high precision: use precision bf16, "
                  "amp-bf16 or mixed-bf16";
    if (!problem)
        return {};
    if (key)
        *key = "training.float8";
    return problem;
}

// TRL's chunked_nll runs `lm_head.weight.float()` (trl/trainer/sft_trainer.py, _chunk): a
// quantized lm_head has no such weight.
std::string validateTrlChunkedLoss(const EstimateInput &in, std::string *key)
{
    const TrainingConfig &t = in.training;
    if (t.loss != LossImplementation::TrlChunkedNll || t.mode != Mode::Train
        || t.quantization == Quantization::None || !t.quantization_options.lm_head
        || in.arch.tied_embeddings)
        return {};
    if (key)
        *key = "training.loss";
    return "trl-chunked-nll casts lm_head.weight with .float(), which a quantized lm_head cannot "
           "do: use loss hf (TRL's loss_type nll), or leave lm_head unquantized";
}

// torchtune's and torchtitan's decoders take no cache in a training forward.
std::string validateTrainingCache(const TrainingConfig &t, std::string *key)
{
    if (!t.use_cache.value_or(false) || t.mode != Mode::Train
        || buildsTransformersCache(t.stack.name))
        return {};
    if (key)
        *key = "training.use_cache";
    return std::string("use_cache is transformers' KV cache: ") + stackName(t.stack.name)
           + "'s model builds none in training (use_cache false, or a transformers stack)";
}

// trainer_mixed_precision is TrainingArguments' bf16/fp16 flag: a Trainer-run stack's, said of
// 16-bit weights, and what makes AMP under it. Under DeepSpeed the same flag sets DeepSpeed's
// precision ("auto").
std::string validateTrainerMixedPrecision(const EstimateInput &in, std::string *key)
{
    const TrainingConfig &t = in.training;
    if (!t.trainer_mixed_precision || t.mode != Mode::Train)
        return {};
    const bool on = *t.trainer_mixed_precision;
    const char *problem = nullptr;
    if (!runsUnderTrainer(t.stack.name))
        problem = "trainer_mixed_precision is the Trainer's bf16/fp16 flag: use stack hf-trainer, "
                  "trl-sft or accelerate-fsdp, or leave it out";
    else if (on && t.precision == Precision::Fp32)
        problem = "fp32 weights under the Trainer's bf16/fp16 flag are AMP: use precision "
                  "amp-bf16 or amp-fp16";
    else if (!on && isAmp(t.precision))
        problem = "amp-bf16 and amp-fp16 are the Trainer's bf16/fp16 flag on fp32 weights: use "
                  "precision fp32, or leave trainer_mixed_precision out";
    else if (!isPure16(t.precision) && !isAmp(t.precision) && t.precision != Precision::Fp32)
        problem = "trainer_mixed_precision is said of bf16 or fp16 weights (mixed-bf16 and "
                  "mixed-fp16 keep DeepSpeed's or Megatron's own master copy): leave it out";
    else if (!on && deepSpeedKeepsPrecision(in.parallelism))
        problem = "under DeepSpeed the Trainer's bf16/fp16 flag sets DeepSpeed's precision, which "
                  "without it trains in fp32: leave trainer_mixed_precision out";
    if (!problem)
        return {};
    if (key)
        *key = "training.trainer_mixed_precision";
    return problem;
}

// bf16_optimizer_states as DeepSpeed checks it (base_optimizer.py, _configure_master_weights):
// bf16 states need bf16 masters, and bf16 masters with fp32 states need ZeRO-Offload.
std::string validateDeepSpeedOptimizerStates(const EstimateInput &in, std::string *key)
{
    const TrainingConfig &t = in.training;
    const ParallelismConfig &p = in.parallelism;
    const std::optional<bool> bf16States = deepSpeedBf16OptimizerStates(p);
    if (!bf16States || !deepSpeedKeepsPrecision(p) || t.mode != Mode::Train)
        return {};
    const bool bf16Masters = deepSpeedPrecision(t, p) == Precision::Bf16;
    const char *problem = nullptr;
    if (*bf16States && !bf16Masters)
        problem = "bf16_optimizer_states needs bf16 master weights (precision bf16 with "
                  "bf16_master_weights true): DeepSpeed refuses it otherwise";
    else if (!*bf16States && bf16Masters && !t.offload.optimizer)
        problem = "bf16 master weights with fp32 optimizer states (bf16_optimizer_states false, "
                  "DeepSpeed's default) need the optimizer offloaded to DeepSpeedCPUAdam: set "
                  "training.offload.optimizer, or bf16_optimizer_states true";
    if (!problem)
        return {};
    if (key)
        *key = "parallelism.deepspeed.bf16_optimizer_states";
    return problem;
}

} // namespace

std::string validateInput(const EstimateInput &in, std::string *key)
{
    const ModelArchitecture &m = in.arch;
    const TrainingConfig &t = in.training;
    const ParallelismConfig &p = in.parallelism;
    auto problem = [key](const char *where, const char *message) {
        if (key)
            *key = where;
        return std::string(message);
    };
    if (m.layers < 1 || m.hidden_size < 1 || m.attention_heads < 1 || m.kv_heads < 1
        || m.head_dim < 1 || m.vocab_size < 1 || m.intermediate_size < 1)
        return problem("model",
                       "the model needs at least one layer, head, KV head and vocabulary entry and "
                       "a positive width");
    if (m.kv_heads > m.attention_heads)
        return problem("model.kv_heads", "kv_heads must not exceed attention_heads");
    if (m.attention_heads % m.kv_heads != 0)
        return problem("model.kv_heads",
                       "attention_heads must be a multiple of kv_heads (grouped-query attention)");
    if (m.experts_per_token < 1 || m.experts_per_token > m.experts)
        return problem("model.experts_per_token", "experts_per_token must be between 1 and experts");
    if (t.method == Method::Qlora && t.quantization == Quantization::None)
        return problem("training.quantization",
                       "qlora needs a quantized base: quantization int8, nf4, gptq, awq, hqq or "
                       "another format");
    if (t.mode == Mode::Train && t.method == Method::Full && t.quantization != Quantization::None)
        return problem("training.quantization",
                       "full fine-tuning cannot train quantized weights: use method qlora, or "
                       "quantization none");
    if (t.mode == Mode::Train && t.method == Method::Lora && t.quantization != Quantization::None)
        return problem("training.quantization", "a quantized base is QLoRA: use method qlora");
    if ((t.method == Method::Lora || t.method == Method::Qlora) && t.lora.targets == 0)
        return problem("training.lora.targets", "LoRA needs at least one target module");
    if (const std::string bad = validateFormats(t, key); !bad.empty())
        return bad;
    if (p.tensor_parallel < 1 || p.gpus < 1)
        return problem("parallelism", "gpus and tensor_parallel must be at least 1");
    if (p.gpus % p.tensor_parallel != 0)
        return problem("parallelism.tensor_parallel", "gpus must be a multiple of tensor_parallel");
    if (p.shard_group > 0 && p.dataParallel() % p.shard_group != 0)
        return problem("parallelism.shard_group",
                       "shard_group must divide the data-parallel GPUs (gpus / tensor_parallel)");
    if (m.attention_heads % p.tensor_parallel != 0)
        return problem("parallelism.tensor_parallel",
                       "attention_heads must be divisible by tensor_parallel");
    if (const std::string bad = validateOptimizerInBackward(t, p, key); !bad.empty())
        return bad;
    if (const std::string bad = validateActivationOffloading(t, key); !bad.empty())
        return bad;
    if (p.pipeline_parallel < 1 || p.gpus % (p.tensor_parallel * p.pipeline_parallel) != 0)
        return problem("parallelism.pipeline_parallel",
                       "gpus must be a multiple of tensor_parallel x pipeline_parallel");
    if (const std::string bad = validatePipelineParallel(in, key); !bad.empty())
        return bad;
    if (const std::string bad = validateContextParallel(t, p, key); !bad.empty())
        return bad;
    if (const std::string bad = validateTrainingCache(t, key); !bad.empty())
        return bad;
    if (const std::string bad = validateTrainerMixedPrecision(in, key); !bad.empty())
        return bad;
    if (const std::string bad = validateDeepSpeedOptimizerStates(in, key); !bad.empty())
        return bad;
    if (const std::string bad = validateTrlChunkedLoss(in, key); !bad.empty())
        return bad;
    if (const std::string bad = validateFloat8(t, key); !bad.empty())
        return bad;
    if (t.offload.parameters && !shardsParameters(p.sharding))
        return problem("training.offload",
                       "offloading parameters needs sharding zero3 or fsdp-full");
    return {};
}

// One step on one GPU, phase by phase, as views of the step's timeline (step_model.h).
MemoryEstimate estimateMemory(const EstimateInput &in)
{
    return StepModel(in).estimate();
}

} // namespace membudget
