// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/inference_options.h"
#include "model/weight_format_options.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace membudget {

enum class Mode { Train, Inference };
// Ia3 trains IA3 vectors on a frozen base, quantized or not (PEFT IA3Config).
enum class Method { Full, Lora, Qlora, Ia3 };

// The precisions people really train with (see docs/scenario-format.md):
//  fp32      weights, grads, states fp32; compute fp32
//  amp-*     fp32 weights, grads and states; autocast computes matmuls in 16-bit (HF Trainer bf16=True)
//  bf16/fp16 pure 16-bit: weights, grads and torch optimizer states all 16-bit (torchtune, FSDP-QLoRA)
//  mixed-*   16-bit weights and grads plus an fp32 master copy and fp32 states (DeepSpeed, Megatron)
enum class Precision { Fp32, AmpBf16, AmpFp16, Bf16, Fp16, MixedBf16, MixedFp16 };

// Storage of the frozen base weights (QLoRA, or quantized inference); bytes per weight and the
// kernels' transients in model/weight_format.h.
enum class Quantization {
    None,
    Int8,      // bitsandbytes LLM.int8
    Nf4,       // bitsandbytes 4-bit NormalFloat
    Nf4Double, // ... with double quantization
    Fp4,       // bitsandbytes 4-bit float (bnb_4bit_quant_type="fp4"): the same bytes as NF4
    Fp4Double,
    Gptq,        // GPTQ (AutoGPTQ / GPTQModel packing)
    Awq,         // AWQ (AutoAWQ GEMM packing)
    Fp8,         // float8 e4m3 weights with fp32 scales (W8A8)
    Hqq,         // HQQ
    TorchaoInt4, // torchao int4_weight_only (tinygemm)
    TorchaoInt8, // torchao int8_weight_only
    Q4K,         // llama.cpp GGUF k-quants and Q8_0
    Q5K,
    Q6K,
    Q8_0,
};

// AdamWFused is torch.optim.AdamW(fused=True): the same states, no foreach temporaries.
enum class Optimizer {
    AdamW,
    AdamW8bit,
    PagedAdamW,
    PagedAdamW8bit,
    Sgd,
    SgdMomentum,
    Adafactor,
    Lion,
    AdamWFused
};

// Activation checkpointing. Full: torch.utils.checkpoint around whole decoder layers. Selective:
// the attention core recomputed (Korthikanti et al. 2022, arXiv:2205.05198, section 5; Megatron's
// "selective"). OpSelective: every layer checkpointed with a policy that keeps the outputs of every
// second matmul and of the attention kernels and recomputes the rest (torchtitan's op-level
// selective AC, selective_ac_option "op"; selective_checkpoint_policy.h).
enum class Checkpointing { None, Full, Selective, OpSelective };

enum class Attention { Eager, Sdpa, Flash };

// How a batch's sequences are laid out, which decides whether attention gets an explicit mask
// (transformers masking_utils): equal lengths need none; padding to the longest sequence or
// packing several into one row (padding-free, position_ids restart) make SDPA take a 4-D
// (b, 1, q, kv) mask; flash attention unpads or runs varlen instead and gets no mask.
enum class BatchPadding { None, Padded, Packed };

enum class Sharding { None, Zero1, Zero2, Zero3, FsdpFull, FsdpGradOp };

// The order in which a pipeline stage runs its micro-batches' forwards and backwards
// (pipeline_parallel.h): GPipe (Huang et al. 2019) runs every forward, then every backward; 1F1B
// (Narayanan et al. 2021, PipeDream-Flush) alternates once the pipeline is full; interleaved 1F1B
// (Narayanan et al. 2021, section 2.2) gives each GPU several non-adjacent chunks of layers.
enum class PipelineSchedule { OneFOneB, GPipe, Interleaved1F1B };

// How the causal-LM loss is computed, which decides the size of the logits spike.
enum class LossImplementation {
    Hf, // transformers >= 4.49 ForCausalLMLoss: fp32 upcast inside the loss, outputs dropped (Trainer)
    HfLegacy, // transformers < 4.46: fp32 logits kept in the model output plus a shifted fp32 copy
    Chunked,  // a generic chunked cross-entropy: one chunk's fp32 chain at a time (kept as written)
    Hf446,    // transformers 4.46-4.48 ForCausalLMLoss: fp32 upcast plus a shifted fp32 copy
    LigerFused, // Liger fused_linear_cross_entropy: no T x V logits, gradients made in forward
    TorchtuneChunked, // torchtune CEWithChunkedOutputLoss: every chunk's fp32 log-softmax kept
    NoUpcast,   // CrossEntropyLoss on the model's own logits after a shifted copy, no fp32 upcast
    Fp32Output, // the model returns output(h).float(), dropped before backward (torchtitan 2024)
    Fp32OutputKept, // the same output kept through backward (torchtitan before 2024-06-12)
    TrlChunkedNll,  // TRL SFTTrainer chunked_nll: 256-token chunks of lm_head + loss, checkpointed
};

// The software stack that runs the step. It sets the defaults the way that stack does (optimizer,
// loss, PEFT's k-bit preparation, FSDP mixed precision, DeepSpeed buckets...); explicit keys win.
// PlainTorch is MemBudget's behaviour before stacks existed.
enum class Stack {
    PlainTorch,
    HfTrainer,
    TrlSft,
    AccelerateFsdp,
    DeepSpeed,
    Torchtune,
    Torchtitan
};

struct StackConfig
{
    Stack name = Stack::PlainTorch;
    std::string version; // the stack's main library version ("4.46", "0.25.1"); empty: newest known
    std::string torch;   // PyTorch's version under a library stack ("2.0"); plain-torch: `version`
    bool operator==(const StackConfig &) const = default;
};

// A parameter dtype for FSDP's mixed-precision policy.
enum class ParamDtype { Fp32, Bf16, Fp16 };

// Bytes of one element of a ParamDtype.
constexpr double paramDtypeBytes(ParamDtype d)
{
    return d == ParamDtype::Fp32 ? 4.0 : 2.0;
}

// Hugging Face Llama module names; other families map their own names onto these.
enum LoraTarget : unsigned {
    TargetQ = 1u << 0,
    TargetK = 1u << 1,
    TargetV = 1u << 2,
    TargetO = 1u << 3,
    TargetGate = 1u << 4,
    TargetUp = 1u << 5,
    TargetDown = 1u << 6,
    TargetAllLinear = 0x7fu,
};

enum class AdapterPrecision {
    Fp32, // PEFT's default (autocast_adapter_dtype=True): adapters in fp32 on a 16-bit base
    Base, // adapters in the training precision (torchtune, fsdp_qlora)
};

struct LoraConfig
{
    std::int64_t rank = 16;
    double alpha = 16.0;
    double dropout = 0.0;
    unsigned targets = TargetQ | TargetK | TargetV | TargetO;
    AdapterPrecision adapter_precision = AdapterPrecision::Fp32;
    // PEFT LoraConfig(use_dora=True): a trainable magnitude per output row and the norm of
    // W + scaling * B A computed in every forward (peft/tuners/lora/dora.py).
    bool use_dora = false;
    // rsLoRA (PEFT use_rslora: scaling alpha / sqrt(r)) and LoRA+ (create_loraplus_optimizer: B
    // learns loraplus_lr_ratio times faster) change numbers, not tensors: the same bytes as LoRA.
    bool use_rslora = false;
    double loraplus_lr_ratio = 0; // 0: off
};

// PEFT IA3Config: a learned vector scales each targeted module's output, or, for the feed-forward
// output projection (down_proj, PEFT's feedforward_modules), its input.
struct Ia3Config
{
    unsigned targets = TargetK | TargetV | TargetDown; // PEFT's default for Llama and Mistral
};

struct OffloadConfig
{
    bool optimizer = false;  // optimizer states (and master weights) live in CPU RAM
    bool parameters = false; // sharded parameters live in CPU RAM (ZeRO-3 / FSDP)
};

struct TrainingConfig
{
    Mode mode = Mode::Train;
    Method method = Method::Full;
    Precision precision = Precision::Bf16;
    Quantization quantization = Quantization::None;
    QuantizationOptions quantization_options;
    Optimizer optimizer = Optimizer::AdamW;
    std::int64_t micro_batch_size = 1;
    std::int64_t sequence_length = 2048;
    std::int64_t gradient_accumulation_steps = 1;
    Checkpointing checkpointing = Checkpointing::None;
    // With full checkpointing, only every N-th decoder layer is checkpointed (layers N-1, 2N-1, ...,
    // torchtitan's layer-selective AC, selective_ac_option "N"); the others keep their activations.
    std::int64_t checkpoint_every = 1;
    Attention attention = Attention::Sdpa;
    BatchPadding batch_padding = BatchPadding::None;
    LossImplementation loss = LossImplementation::Hf;
    LoraConfig lora;
    Ia3Config ia3;
    OffloadConfig offload;
    InferenceConfig inference; // mode inference: prompt, generated tokens and the KV cache
    StackConfig stack;
    // PEFT prepare_model_for_kbit_training for QLoRA: non-quantized parameters cast to fp32 (norms,
    // embeddings, lm_head), input require-grads. Unset: the stack decides (stack_profile.h).
    std::optional<bool> kbit_fp32_upcast;
    // transformers' `use_cache` in a training forward: without gradient checkpointing the model
    // builds a DynamicCache whose per-layer keys and values live in the model output until the loss
    // is taken. Unset: the stack decides (stack_profile.h, trainingKvCache).
    std::optional<bool> use_cache;
    // A Trainer-run stack's bf16=True / fp16=True (TrainingArguments; accelerate's mixed_precision
    // under accelerate-fsdp) with 16-bit weights: accelerate wraps the forward in autocast. Unset:
    // on, as recipes and TRL >= 0.19 set it (stack_profile.h, trainerMixedPrecision).
    std::optional<bool> trainer_mixed_precision;
    // Derived by resolveStackChoices, never read from a file: a Trainer-run stack's bf16/fp16 flag
    // makes accelerate wrap the model's forward in autocast, 16-bit weights included.
    bool trainer_autocast = false;
    // Derived by resolveStackChoices, never read from a file: TRL's chunked loss under DeepSpeed
    // ZeRO-3 gathers lm_head inside each chunk's matmul, not for the head's whole forward and
    // backward (stack_profile.h, trlGathersHeadPerChunk).
    bool head_gathered_per_chunk = false;
    // The optimizer steps each parameter in backward as soon as its gradient is accumulated, and
    // frees that gradient (torchtune optimizer_in_bwd: one optimizer per parameter stepped from a
    // post-accumulate-grad hook; torch.distributed.optim._apply_optimizer_in_backward). One GPU,
    // no gradient accumulation, no GradScaler (torchtune refuses both).
    bool optimizer_in_backward = false;
    // The checkpointed layers' inputs copied to pinned CPU RAM in forward and back in backward
    // (torchtune enable_activation_offloading, training/_activation_offloading.py
    // OffloadActivations on a side stream): each stays on the GPU until kActivationOffloadStash
    // more tensors are offloaded. Needs full checkpointing on every layer (torchtune refuses it
    // without activation checkpointing).
    bool activation_offloading = false;
    // torchao float8 training (Float8Linear, tensorwise dynamic scaling; torchtitan's
    // model.converters float8): every decoder-layer linear casts its input and weight to fp8 for the
    // forward matmul and its output gradient, weight and input again for the backward ones, keeping
    // the 16-bit input and the weight for backward as before (torchao/float8/float8_linear.py).
    // lm_head stays 16-bit (torchtitan's filter_fqns "output").
    bool float8 = false;
};

// OffloadActivations' max_fwd_stash_size default: a tensor being offloaded stays alive until this
// many later ones have been packed (one per checkpointed layer: its input).
inline constexpr int kActivationOffloadStash = 5;

// DeepSpeed's defaults (deepspeed/runtime/zero/config.py), which Hugging Face's configs keep:
// sub_group_size, and stage3_max_reuse_distance (not a scenario key), in elements.
constexpr double kDeepSpeedSubGroupSize = 1e9;
constexpr double kDeepSpeedReuseDistance = 1e9;

// DeepSpeed ZeRO settings that change the bytes (deepspeed/runtime/zero/config.py); unset: the
// stack's default. Sizes are in elements.
struct DeepSpeedConfig
{
    std::optional<double> reduce_bucket_size; // ZeRO-1/2 gradient buckets
    std::optional<bool> overlap_comm;
    // ZeRO-3 steps the optimizer over sub-groups of parameters of about this many elements of the
    // local partition each, one fp32 gradient at a time (stage3.py, _create_fp16_sub_groups).
    std::optional<double> sub_group_size;
    // bf16.bf16_master_weights_and_grads with bf16_optimizer_states (DeepSpeed 0.18.3): a bf16 run
    // keeps its master partition and optimizer states in bf16. Unset: the stack decides
    // (stack_profile.h, deepSpeedPrecision).
    std::optional<bool> bf16_master_weights;
    // bf16.bf16_optimizer_states: false keeps fp32 Adam states beside bf16 masters, which DeepSpeed
    // allows only with the optimizer offloaded to DeepSpeedCPUAdam (base_optimizer.py,
    // _configure_master_weights). Unset: a DeepSpeed file's where it asks for bf16 masters
    // (DeepSpeed's default false where it says nothing), else true (stack_profile.h).
    std::optional<bool> bf16_optimizer_states;
    bool operator==(const DeepSpeedConfig &) const = default;
};

struct ParallelismConfig
{
    std::int64_t gpus = 1;
    Sharding sharding = Sharding::None;
    std::int64_t tensor_parallel = 1;
    // Sequence parallelism with tensor_parallel > 1 (tensor_parallel_plan.h); unset: the stack
    // decides (torchtitan shards the sequence, Hugging Face's tp_plan does not).
    std::optional<bool> sequence_parallel;
    // The loss on each rank's vocabulary share (tensor_parallel_plan.h); unset: the stack decides
    // (Hugging Face's tp_plan gathers the logits: "colwise_rep").
    std::optional<bool> loss_parallel;
    // FSDP MixedPrecision(param_dtype, reduce_dtype); unset: the stack decides (none: the
    // parameters' own dtype).
    std::optional<ParamDtype> fsdp_param_dtype;
    std::optional<ParamDtype> fsdp_reduce_dtype;
    DeepSpeedConfig deepspeed;
    std::string deepspeed_config;        // a DeepSpeed JSON file to read ZeRO settings from (io/)
    DeepSpeedConfig deepspeed_from_file; // what that file says, under the keys above (not saved)
    // Hybrid sharding (FSDP HYBRID_SHARD / FSDP2 HSDP, DeepSpeed MiCS): states, gradients and
    // weights are sharded over groups of this many data-parallel GPUs and replicated across the
    // groups; 0: over all of them.
    std::int64_t shard_group = 0;
    // Context parallelism (torch.distributed.tensor.experimental.context_parallel, torchtitan's
    // context_parallel_degree): this many GPUs share each sequence, each holding 1/cp of its tokens
    // (context_parallel.h). They hold the same weights, so they count among the data-parallel GPUs
    // that gradients are reduced and states sharded over (torchtitan's dp_shard x cp mesh).
    std::int64_t context_parallel = 1;
    // Pipeline parallelism: the layers are split into this many consecutive stages, one per group
    // of GPUs; the step's micro-batches (gradient_accumulation_steps) flow through them in
    // `pipeline_schedule` order (pipeline_parallel.h). Interleaved 1F1B gives each GPU
    // `pipeline_virtual_stages` chunks of layers.
    std::int64_t pipeline_parallel = 1;
    PipelineSchedule pipeline_schedule = PipelineSchedule::OneFOneB;
    std::int64_t pipeline_virtual_stages = 2; // interleaved-1f1b only
    // Decoder layers of each stage, first to last, where the split is set by hand (Megatron-LM's
    // --decoder-first/last-pipeline-num-layers, torchtitan's split points); empty: an even split.
    std::vector<std::int64_t> pipeline_layers;
    // The GPUs that gradients are reduced and states sharded over: one stage's replicas,
    // gpus / (tensor_parallel x pipeline_parallel).
    std::int64_t dataParallel() const
    {
        const std::int64_t split = std::max<std::int64_t>(1, tensor_parallel)
                                   * std::max<std::int64_t>(1, pipeline_parallel);
        return std::max<std::int64_t>(1, gpus / split);
    }
    // The micro-batch replicas a step runs side by side: gpus / (tensor_parallel x context_parallel).
    std::int64_t batchReplicas() const
    {
        return std::max<std::int64_t>(1,
                                      dataParallel() / std::max<std::int64_t>(1, context_parallel));
    }
    // The GPUs one shard of the sharded states is divided over.
    std::int64_t shardDegree() const
    {
        const std::int64_t dp = std::max<std::int64_t>(1, dataParallel());
        return shard_group > 0 ? std::min(shard_group, dp) : dp;
    }
};

// Memory outside torch's allocated bytes.
struct OverheadConfig
{
    std::int64_t cuda_context_bytes = 512LL << 20; // CUDA context + kernels with lazy loading
    std::int64_t nccl_bytes = 1LL << 30; // NCCL communicator buffers per rank, only with >1 GPU
    // What PyTorch's caching allocator reserves beyond what it allocates is modelled by replaying
    // the step through a model of the allocator (core/allocator), with these settings
    // (PYTORCH_CUDA_ALLOC_CONF text such as "expandable_segments:True"). An explicit fraction
    // (reserved = allocated x (1 + fraction)) overrides the model, e.g. one calibrated from a run.
    std::optional<double> allocator_reserve_fraction;
    std::string allocator_conf;
    // Bytes the program keeps on the GPU beyond the model's weights and states (buffers, caches,
    // gradients kept between steps, another model), live through the whole step: measured from a
    // memory snapshot by Calibrate (the trace's baseline less the modelled resident tensors).
    std::int64_t extra_resident_bytes = 0;
};

// Names as they appear in scenario files. Each parse function returns false for an unknown name.
const char *modeName(Mode v);
bool parseMode(const std::string &s, Mode &v);
const char *methodName(Method v);
bool parseMethod(const std::string &s, Method &v);
const char *precisionName(Precision v);
bool parsePrecision(const std::string &s, Precision &v);
const char *quantizationName(Quantization v);
bool parseQuantization(const std::string &s, Quantization &v);
const char *optimizerName(Optimizer v);
bool parseOptimizer(const std::string &s, Optimizer &v);
const char *checkpointingName(Checkpointing v);
// How many of `layers` decoder layers run inside a checkpoint: full checkpointing wraps every one
// unless checkpoint_every > 1 (torchtitan's _apply_layer_sac counts layers from 1 and wraps those
// whose count N divides); op-level selective checkpointing wraps every one.
std::int64_t checkpointedLayers(const TrainingConfig &t, std::int64_t layers);
bool parseCheckpointing(const std::string &s, Checkpointing &v);
const char *attentionName(Attention v);
bool parseAttention(const std::string &s, Attention &v);
const char *batchPaddingName(BatchPadding v);
bool parseBatchPadding(const std::string &s, BatchPadding &v);
const char *shardingName(Sharding v);
bool parseSharding(const std::string &s, Sharding &v);
const char *pipelineScheduleName(PipelineSchedule v);
bool parsePipelineSchedule(const std::string &s, PipelineSchedule &v);
const char *lossName(LossImplementation v);
bool parseLoss(const std::string &s, LossImplementation &v);
const char *stackName(Stack v);
bool parseStack(const std::string &s, Stack &v);
const char *paramDtypeName(ParamDtype v);
bool parseParamDtype(const std::string &s, ParamDtype &v);
const char *adapterPrecisionName(AdapterPrecision v);
bool parseAdapterPrecision(const std::string &s, AdapterPrecision &v);
const char *loraTargetName(LoraTarget t);
bool parseLoraTarget(const std::string &s, unsigned &bits); // also accepts "all-linear"
std::vector<std::string> loraTargetNames(unsigned bits);    // ["all-linear"] when all are set

// The allowed names of each option, for error messages and pickers.
std::string allowedNames(const char *const *names, int count);
extern const char *const kModeNames[2];
extern const char *const kMethodNames[4];
extern const char *const kPrecisionNames[7];
extern const char *const kQuantizationNames[16];
extern const char *const kOptimizerNames[9];
extern const char *const kCheckpointingNames[4];
extern const char *const kAttentionNames[3];
extern const char *const kBatchPaddingNames[3];
extern const char *const kShardingNames[6];
extern const char *const kPipelineScheduleNames[3];
extern const char *const kAdapterPrecisionNames[2];
extern const char *const kLossNames[10];
extern const char *const kStackNames[7];
extern const char *const kParamDtypeNames[3];
extern const char *const kLoraTargetNames[7];

// Bytes per element of the precision's 16-bit or 32-bit compute type.
bool isAmp(Precision p);
bool isPure16(Precision p);
// fp16 in any form: amp-fp16, fp16 or mixed-fp16.
bool isFp16(Precision p);
bool isMixedMaster(Precision p);
bool is16bitWeights(Precision p);
// LoRA-style adapters on a frozen base: lora, qlora and ia3.
bool isAdapterMethod(Method m);

} // namespace membudget
