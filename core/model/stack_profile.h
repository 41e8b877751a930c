// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/gpu_spec.h"
#include "model/memory_estimator.h"
#include "model/tensor_parallel_plan.h"
#include "model/training_options.h"

#include <string>
#include <vector>

namespace membudget {

// A library version such as "4.46.3", compared component by component.
struct LibraryVersion
{
    int major = 0, minor = 0, patch = 0;
    auto operator<=>(const LibraryVersion &) const = default;
};

// Reads "major[.minor[.patch]]" (a leading "v" and a suffix such as ".dev0" or "rc1" allowed).
bool parseLibraryVersion(const std::string &text, LibraryVersion &out);

// The library whose version a stack's `version` names, and the newest behaviour MemBudget knows
// (used when no version is given).
const char *stackLibrary(Stack stack);
LibraryVersion newestKnownVersion(Stack stack);

// Which of the keys a stack sets were written explicitly (and so are kept).
struct ExplicitKeys
{
    bool precision = false, optimizer = false, loss = false, checkpointing = false;
    bool adapter_precision = false, sharding = false, offload = false;
};

// Sets the keys a stack decides when a scenario leaves them out (read a scenario, or pick a stack
// in the app): precision, optimizer, loss, checkpointing, LoRA adapter dtype, sharding and FSDP
// version. Each choice and its upstream source is in stack_profile.cpp and docs/memory-model.md.
void applyStackDefaults(TrainingConfig &training,
                        ParallelismConfig &parallelism,
                        const ExplicitKeys &explicitKeys = {});

// The scenario with the choices a stack makes at estimate time filled in (they depend on other
// keys: PEFT's k-bit preparation on the method and sharding, FSDP's mixed precision on the
// precision, DeepSpeed's buckets on the stage). Keys set in the scenario are kept.
EstimateInput resolveStackChoices(const EstimateInput &input);
// Whether TRL's chunked loss gathers a ZeRO-3 partitioned lm_head inside each chunk (trl/trainer/
// sft_trainer.py, `_chunk`: maybe_gather_lm_head_ctx, DeepSpeed's GatheredParameters; PR #5873,
// TRL 1.6): the head module never runs, so DeepSpeed's hooks never gather it for the loss.
bool trlGathersHeadPerChunk(const EstimateInput &input);
// Whether accelerate wraps the model's forward in autocast (TrainingConfig::trainer_autocast).
bool trainerAutocast(const EstimateInput &in);
// The LoRA adapter dtype a stack chooses for these settings (TRL's sharded QLoRA: the model dtype).
AdapterPrecision stackAdapterPrecision(const TrainingConfig &training,
                                       const ParallelismConfig &parallelism);
// After an edit (method, GPUs, sharding): an adapter dtype that was the stack's choice before
// follows the stack's choice for the edited settings; one the scenario chose stays.
void followStackAdapterPrecision(const TrainingConfig &before,
                                 const ParallelismConfig &parallelBefore,
                                 TrainingConfig &training,
                                 const ParallelismConfig &parallelism);
// Whether a Trainer (or accelerate launch) runs the step: hf-trainer, trl-sft, accelerate-fsdp.
bool runsUnderTrainer(Stack stack);
// DeepSpeed over more than one GPU: it keeps the precision itself (no accelerate autocast; the
// Trainer's bf16/fp16 flag sets DeepSpeed's "auto" precision instead).
bool deepSpeedKeepsPrecision(const ParallelismConfig &parallelism);
// The precision DeepSpeed over several GPUs trains in: fp16 is mixed-fp16 (DeepSpeed has no pure
// fp16), bf16 is mixed-bf16 before DeepSpeed 0.18.3's bf16 master weights or where
// bf16_master_weights is false; under the Trainer's bf16/fp16 flag amp-* and pure 16-bit weights
// are mixed-* (bf16 masters only where bf16_master_weights says so); the rest as given.
Precision deepSpeedPrecision(const TrainingConfig &training, const ParallelismConfig &parallelism);
// Bytes per trainable parameter of the master partition DeepSpeed clones from weights already in
// the master dtype (fp32, AMP, or pure bf16 under ZeRO-1/2; ZeRO-3 before 0.18.2), else 0.
double deepSpeedClonedMasterBytes(const EstimateInput &input);
// bf16.bf16_optimizer_states as DeepSpeed would read it: the scenario's; else the DeepSpeed
// file's where the file asks for bf16 masters (absent there: DeepSpeed's false); unset beside the
// scenario's own bf16_master_weights alone (which means bf16 states too).
std::optional<bool> deepSpeedBf16OptimizerStates(const ParallelismConfig &parallelism);
// DeepSpeed steps bf16 masters with fp32 optimizer states (bf16_optimizer_states false).
bool deepSpeedFp32OptimizerStates(const TrainingConfig &training,
                                  const ParallelismConfig &parallelism);
// Bytes per trainable parameter of the master partition ZeRO-Offload keeps in CPU RAM (2 with
// bf16 masters, else 4); 0 without DeepSpeed's offloaded optimizer.
double deepSpeedOffloadedMasterBytes(const EstimateInput &input);
// Whether DeepSpeed's engine casts every floating-point parameter to the 16-bit training dtype
// (a training step with bf16/fp16 or mixed-* precision under DeepSpeed over several GPUs).
bool deepSpeedCastsModule(const TrainingConfig &training, const ParallelismConfig &parallelism);
// What that cast leaves: DeepSpeed's precision (deepSpeedPrecision), 16-bit LoRA adapters (adapter_precision base) and no fp32 parameters
// from PEFT's k-bit preparation (kbit_fp32_upcast false), whatever the scenario asked for.
void castModuleForDeepSpeed(TrainingConfig &training, const ParallelismConfig &parallelism);
// TrainingArguments' bf16/fp16 flag (accelerate's mixed_precision): the scenario's
// trainer_mixed_precision, or on for 16-bit and AMP training under a Trainer-run stack.
bool trainerMixedPrecision(const TrainingConfig &training);
// Whether that flag is a choice the scenario can make: 16-bit weights under a Trainer-run stack,
// not DeepSpeed over several GPUs (AMP is the flag itself).
bool trainerFlagIsAChoice(const TrainingConfig &training, const ParallelismConfig &parallelism);

// How the layers split over the tensor-parallel group: the scenario's sequence_parallel and
// loss_parallel, or where it does not say, the stack's (resolved or not).
TensorParallelPlan tensorParallelPlan(const ParallelismConfig &parallelism,
                                      const StackConfig &stack);

// The training settings the op graphs are built from: FSDP with a 16-bit param_dtype computes as
// pure 16-bit (gathered units, activations and unsharded gradients in that dtype) whatever the
// sharded parameters' dtype. `input` must be resolved.
TrainingConfig graphTrainingConfig(const EstimateInput &input);

// Whether the stack's gradient checkpointing is reentrant (torch.utils.checkpoint
// use_reentrant=True): transformers' gradient_checkpointing_enable before 5.0, TRL's SFTTrainer
// before 0.27.
bool stackCheckpointsReentrant(const StackConfig &stack);

// Whether PEFT's prepare_model_for_kbit_training runs (a resolved QLoRA training step).
bool kbitUpcast(const TrainingConfig &training);
// TRL before 0.26 then casts the embeddings and lm_head back to bf16 when training in bf16
// (trl/models/utils.py, peft_module_casting_to_bf16); the norms stay fp32.
bool kbitKeepsHead16bit(const TrainingConfig &training);

// Whether a training forward builds transformers' DynamicCache (`use_cache`, or where the scenario
// leaves it out the stack's choice): its keys and values stay in the model output until the loss
// is taken. transformers turns it off under its own gradient checkpointing, whole layers
// (`gradient_checkpointing: full`); FSDP's activation checkpointing hides itself from transformers,
// and such a run needs use_cache off (docs/memory-model.md). The selective policies leave it on.
bool trainingKvCache(const TrainingConfig &training);
// Whether the stack's model is one of transformers' (torchtune's and torchtitan's are their own
// and build no cache in training).
bool buildsTransformersCache(Stack stack);

// Whether transformers builds its 4-D attention mask as bool (masking_utils, 4.53 and later, every
// stack but an older hf-trainer) or, before, additive in the hidden states' dtype.
bool boolAttentionMask(const StackConfig &stack);
// Whether transformers' decoder layer keeps eager attention's weights until it returns (4.48 and
// later: `hidden_states, _ = self.self_attn(...)`) rather than until the attention returns
// (before: LlamaAttention.forward drops them when output_attentions is off): every stack but an
// older hf-trainer.
bool attentionWeightsHeldByLayer(const StackConfig &stack);
// The same for GPT-2's block, from transformers 4.52 (`attn_output, self_attn_weights =
// self.attn(...)`, PR #35761); before, GPT2Attention.forward's `attn_weights` kept them until it
// returned.
bool gpt2AttentionWeightsHeldByBlock(const StackConfig &stack);
// Whether transformers' DynamicCache stores copies of the prompt's keys and values (4.56 and later:
// DynamicLayer.lazy_initialization, then torch.cat onto an empty tensor; PR #39797) rather than the
// attention's own tensors (before): every stack but an older hf-trainer.
bool dynamicCacheCopiesPrompt(const StackConfig &stack);
// Whether the stack's own model copies grouped keys and values to every query head before SDPA
// whatever the mask and torch (transformers before 4.54, torchtitan before 0.2.2).
bool stackRepeatsGroupedKv(const StackConfig &stack);
// Whether DeepSpeed ZeRO-3's step checks the 16-bit gradient partition for inf and nan: with fp16
// always, with bf16 before DeepSpeed 0.11.2 (PR #4512). Stacks other than deepspeed name no
// DeepSpeed release: the newest behaviour.
bool deepSpeedZero3ChecksOverflow(const TrainingConfig &training);
// Whether the stack asks SDPA for its cuDNN backend first itself on a GPU of compute capability
// `cc`: torchtitan from 0.2.0 on every GPU (models/common/attention.py, ScaledDotProductAttention,
// `sdpa_kernel([CUDNN_ATTENTION, FLASH_ATTENTION, MATH], set_priority=True)`, PR #1776); 0.1.x on
// compute capability 10.0 and above (models/attention.py, `has_cuda_capability(10, 0)`, PR #1196,
// in v0.1.0), flash first elsewhere; older releases flash first. Other stacks leave the order to
// PyTorch.
bool stackPrefersCudnnAttention(const StackConfig &stack, ComputeCapability cc);
// Whether DeepSpeed's ZeRO optimizer steps on this GPU, with its own gradient flatten, cast and
// norm (memory-model.md, "DeepSpeed's step"): ZeRO in effect (several GPUs, or one with offloaded
// parameters), a training step whose optimizer is not offloaded, in DeepSpeed's precision (or
// with fp32 masters of 16-bit weights, which ZeRO's optimizer keeps on a single GPU too).
bool deepSpeedStepsOnGpu(const EstimateInput &input);

// One choice that decides bytes, as the estimate used it, for people to see.
struct StackChoice
{
    std::string key;         // scenario key: "training.optimizer"
    std::string value;       // "adamw-fused"
    bool from_stack = false; // the value the stack itself sets (else the scenario or MemBudget)
};

// The stack's resolved choices for `input` (resolved or not), in the scenario's key order.
std::vector<StackChoice> stackChoices(const EstimateInput &input);

// "hf-trainer (transformers 4.46)" or "plain-torch".
std::string describeStack(const StackConfig &stack);

} // namespace membudget
