// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace membudget {

enum class Mode { Train, Inference };
enum class Method { Full, Lora, Qlora };

// The precisions people really train with (see docs/scenario-format.md):
//  fp32      weights, grads, states fp32; compute fp32
//  amp-*     fp32 weights, grads and states; autocast computes matmuls in 16-bit (HF Trainer bf16=True)
//  bf16/fp16 pure 16-bit: weights, grads and torch optimizer states all 16-bit (torchtune, FSDP-QLoRA)
//  mixed-*   16-bit weights and grads plus an fp32 master copy and fp32 states (DeepSpeed, Megatron)
enum class Precision { Fp32, AmpBf16, AmpFp16, Bf16, Fp16, MixedBf16, MixedFp16 };

// Storage of the frozen base weights (QLoRA, or quantized inference).
enum class Quantization { None, Int8, Nf4, Nf4Double };

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

enum class Checkpointing { None, Full, Selective };

enum class Attention { Eager, Sdpa, Flash };

enum class Sharding { None, Zero1, Zero2, Zero3, FsdpFull, FsdpGradOp };

// How the causal-LM loss is computed, which decides the size of the logits spike.
enum class LossImplementation {
    Hf, // transformers >= 4.46 ForCausalLMLoss: fp32 upcast inside the loss, outputs dropped (Trainer)
    HfLegacy, // transformers < 4.46: fp32 logits kept in the model output plus a shifted fp32 copy
    Chunked,  // chunked / fused cross-entropy (torchtune, Liger): logits never exist whole in fp32
};

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
    Optimizer optimizer = Optimizer::AdamW;
    std::int64_t micro_batch_size = 1;
    std::int64_t sequence_length = 2048;
    std::int64_t gradient_accumulation_steps = 1;
    Checkpointing checkpointing = Checkpointing::None;
    Attention attention = Attention::Sdpa;
    LossImplementation loss = LossImplementation::Hf;
    LoraConfig lora;
    OffloadConfig offload;
};

struct ParallelismConfig
{
    std::int64_t gpus = 1;
    Sharding sharding = Sharding::None;
    std::int64_t tensor_parallel = 1;
    std::int64_t dataParallel() const
    {
        return tensor_parallel > 0 ? gpus / tensor_parallel : gpus;
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
bool parseCheckpointing(const std::string &s, Checkpointing &v);
const char *attentionName(Attention v);
bool parseAttention(const std::string &s, Attention &v);
const char *shardingName(Sharding v);
bool parseSharding(const std::string &s, Sharding &v);
const char *lossName(LossImplementation v);
bool parseLoss(const std::string &s, LossImplementation &v);
const char *adapterPrecisionName(AdapterPrecision v);
bool parseAdapterPrecision(const std::string &s, AdapterPrecision &v);
const char *loraTargetName(LoraTarget t);
bool parseLoraTarget(const std::string &s, unsigned &bits); // also accepts "all-linear"
std::vector<std::string> loraTargetNames(unsigned bits);    // ["all-linear"] when all are set

// The allowed names of each option, for error messages and pickers.
std::string allowedNames(const char *const *names, int count);
extern const char *const kModeNames[2];
extern const char *const kMethodNames[3];
extern const char *const kPrecisionNames[7];
extern const char *const kQuantizationNames[4];
extern const char *const kOptimizerNames[9];
extern const char *const kCheckpointingNames[3];
extern const char *const kAttentionNames[3];
extern const char *const kShardingNames[6];
extern const char *const kAdapterPrecisionNames[2];
extern const char *const kLossNames[3];
extern const char *const kLoraTargetNames[7];

// Bytes per element of the precision's 16-bit or 32-bit compute type.
bool isAmp(Precision p);
bool isPure16(Precision p);
bool isMixedMaster(Precision p);
bool is16bitWeights(Precision p);

} // namespace membudget
