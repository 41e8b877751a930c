// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/stack_profile.h"

#include "model/model_states.h"
#include "model/torch_release.h"

#include <cctype>
#include <cstdio>
#include <optional>

namespace membudget {

namespace {

// The keys a stack decides when a scenario leaves them out.
struct StaticDefaults
{
    std::optional<Precision> precision;
    Optimizer optimizer = Optimizer::AdamW;
    LossImplementation loss = LossImplementation::Hf;
    std::optional<Checkpointing> checkpointing;
    std::int64_t checkpoint_every = 1;
    AdapterPrecision adapter = AdapterPrecision::Fp32;
    std::optional<Sharding> sharding;
};

LibraryVersion effectiveVersion(const StackConfig &s)
{
    LibraryVersion v;
    if (!s.version.empty() && parseLibraryVersion(s.version, v))
        return v;
    return newestKnownVersion(s.name);
}

bool before(const LibraryVersion &v, int major, int minor, int patch = 0)
{
    return v < LibraryVersion{major, minor, patch};
}

// transformers' causal-LM loss by release (src/transformers/loss/loss_utils.py, ForCausalLMLoss):
// before 4.46 the model upcast the logits itself and sliced a shifted contiguous fp32 copy; 4.46 to
// 4.48 moved that into ForCausalLMLoss (still a shifted fp32 copy of the logits); from 4.49 the
// labels are padded and shifted instead, so only the fp32 upcast remains.
LossImplementation transformersLoss(const LibraryVersion &v)
{
    if (before(v, 4, 46))
        return LossImplementation::HfLegacy;
    if (before(v, 4, 49))
        return LossImplementation::Hf446;
    return LossImplementation::Hf;
}

// TrainingArguments.optim: "adamw_torch" (torch.optim.AdamW, foreach on CUDA) from 4.32
// (transformers PR #25109), "adamw_torch_fused" with torch >= 2.8 from 4.54 (PR #37358). Before
// 4.32 "adamw_hf", transformers' own per-tensor AdamW: no group-wide temporaries, as the fused one.
Optimizer transformersOptimizer(const LibraryVersion &v, const LibraryVersion &torch)
{
    if (before(v, 4, 32))
        return Optimizer::AdamWFused;
    if (before(v, 4, 54) || before(torch, 2, 8))
        return Optimizer::AdamW;
    return Optimizer::AdamWFused;
}

StaticDefaults staticDefaults(const TrainingConfig &t)
{
    StaticDefaults d;
    const LibraryVersion v = effectiveVersion(t.stack);
    const bool qlora = t.method == Method::Qlora;
    switch (t.stack.name) {
    case Stack::PlainTorch:
        break;
    case Stack::HfTrainer:
        d.optimizer = transformersOptimizer(v, torchRelease(t.stack));
        d.loss = transformersLoss(v);
        // The PEFT QLoRA recipe: prepare_model_for_kbit_training(model) turns gradient
        // checkpointing on by default (peft/utils/other.py, use_gradient_checkpointing=True).
        if (qlora)
            d.checkpointing = Checkpointing::Full;
        break;
    case Stack::TrlSft:
        // TRL >= 0.22 requires transformers >= 4.55 (adamw_torch_fused with torch >= 2.8) and defaults SFTConfig's
        // gradient_checkpointing to True (trl/trainer/sft_config.py); TRL >= 0.26 no longer
        // prepares k-bit models and casts the adapters of a quantized model to bf16
        // (trl/trainer/sft_trainer.py).
        d.optimizer = before(v, 0, 22) || before(torchRelease(t.stack), 2, 8)
                          ? Optimizer::AdamW
                          : Optimizer::AdamWFused;
        if (!before(v, 0, 22))
            d.checkpointing = Checkpointing::Full;
        if (qlora && !before(v, 0, 26))
            d.adapter = AdapterPrecision::Base;
        // SFTConfig.loss_type defaults to "chunked_nll" from TRL 1.7 (PR #5846; "nll" with
        // use_liger_kernel, whose loss MemBudget calls liger-fused). It reads lm_head.weight
        // directly, which a quantized lm_head does not have.
        if (!before(v, 1, 7)
            && !(t.quantization != Quantization::None && t.quantization_options.lm_head))
            d.loss = LossImplementation::TrlChunkedNll;
        break;
    case Stack::AccelerateFsdp:
        // FullyShardedDataParallelPlugin: FULL_SHARD, fsdp_version 1 unless FSDP_VERSION says 2
        // (accelerate/utils/dataclasses.py); the script's own torch.optim.AdamW (foreach).
        d.sharding = Sharding::FsdpFull;
        break;
    case Stack::DeepSpeed:
        // An "AdamW" optimizer in the DeepSpeed config runs as FusedAdam (multi-tensor, in place).
        d.optimizer = Optimizer::AdamWFused;
        break;
    case Stack::Torchtune:
        // Recipes: dtype bf16, torch.optim.AdamW(fused=True), LoRA adapters in the model dtype,
        // FSDP in the distributed recipes; the loss is CEWithChunkedOutputLoss
        // (recipes/configs/llama3_1/8B_lora*.yaml, torchtune/modules/loss/ce_chunked_output_loss.py).
        d.precision = Precision::Bf16;
        d.optimizer = Optimizer::AdamWFused;
        d.loss = LossImplementation::TorchtuneChunked;
        d.adapter = AdapterPrecision::Base;
        d.sharding = Sharding::FsdpFull;
        break;
    case Stack::Torchtitan:
        // fp32 parameters with bf16 compute (training.mixed_precision_param), AdamW
        // implementation "fused", FSDP (torchtitan/config/configs.py, trainer.py,
        // components/optimizer/optimizer.py); activation checkpointing mode "selective" with
        // selective_ac_option "2": every second layer wrapped whole (config/job_config.py,
        // ActivationCheckpoint; distributed/activation_checkpoint.py, _apply_layer_sac). The
        // model returns its 16-bit output, the loss upcasts it (cross_entropy(pred.float()), since
        // torchtitan PR #642, 2024-10-22) and the trainer drops `pred` before backward: hf's
        // bytes (fp32-output and fp32-output-kept for the months before).
        d.precision = Precision::AmpBf16;
        d.checkpointing = Checkpointing::Full;
        d.checkpoint_every = 2;
        d.optimizer = Optimizer::AdamWFused;
        d.sharding = Sharding::FsdpFull;
        break;
    }
    return d;
}

bool shardsOverFsdp(const EstimateInput &in)
{
    const Sharding s = in.parallelism.sharding;
    return (s == Sharding::FsdpFull || s == Sharding::FsdpGradOp)
           && (in.parallelism.gpus > 1 || in.training.offload.parameters);
}

bool shardedQlora(const ParallelismConfig &p)
{
    return p.gpus > 1 && (shardsParameters(p.sharding) || p.sharding == Sharding::FsdpGradOp);
}

bool shardedQlora(const EstimateInput &in)
{
    return shardedQlora(in.parallelism);
}

// PEFT prepare_model_for_kbit_training: the PEFT QLoRA recipe with the Trainer calls it; TRL's
// SFTTrainer did before 0.26 unless the 4-bit weights are sharded (FSDP / ZeRO-3 QLoRA keep them on
// the CPU or meta device first: trl/models/utils.py, prepare_peft_model).
bool stackUpcastsKbit(const EstimateInput &in)
{
    if (in.training.method != Method::Qlora || in.training.mode != Mode::Train)
        return false;
    const StackConfig &s = in.training.stack;
    switch (s.name) {
    case Stack::HfTrainer:
        return !shardedQlora(in);
    case Stack::TrlSft:
        return before(effectiveVersion(s), 0, 26) && !shardedQlora(in);
    default:
        return false;
    }
}

// transformers' models build a DynamicCache in a training forward when `use_cache` is on (the
// config's default, true for the decoder models) and the model's own gradient checkpointing is off
// (the check sits in the model's forward before 4.54, in `check_model_inputs` to 5.1 and in
// `merge_with_config_defaults` from 5.2, utils/generic.py). The Trainer sets config.use_cache =
// args.use_cache (False) from transformers 5.0 (PR #41585, merged 2025-10-16); TRL's SFTTrainer
// passes use_cache=False to every forward from 0.22 (PR #3891).
bool stackBuildsTrainingCache(const TrainingConfig &t)
{
    if (t.mode != Mode::Train)
        return false;
    const StackConfig &s = t.stack;
    switch (s.name) {
    case Stack::HfTrainer:
        return before(effectiveVersion(s), 5, 0);
    case Stack::TrlSft:
        return before(effectiveVersion(s), 0, 22);
    default:
        return false;
    }
}

// accelerate's FSDP plugin: MixedPrecision(param_dtype=reduce_dtype=buffer_dtype=the mixed
// precision) for FSDP1, MixedPrecisionPolicy(param_dtype, reduce_dtype, output_dtype) for FSDP2
// (set_mixed_precision); torchtitan: param bf16, reduce fp32.
void fsdpMixedPrecision(EstimateInput &in)
{
    ParallelismConfig &p = in.parallelism;
    const Precision prec = in.training.precision;
    if (!shardsOverFsdp(in) || !isAmp(prec))
        return;
    const ParamDtype half = prec == Precision::AmpFp16 ? ParamDtype::Fp16 : ParamDtype::Bf16;
    switch (in.training.stack.name) {
    case Stack::HfTrainer:
    case Stack::TrlSft:
    case Stack::AccelerateFsdp:
        if (!p.fsdp_param_dtype)
            p.fsdp_param_dtype = half;
        if (!p.fsdp_reduce_dtype)
            p.fsdp_reduce_dtype = *p.fsdp_param_dtype;
        break;
    case Stack::Torchtitan:
        if (!p.fsdp_param_dtype)
            p.fsdp_param_dtype = ParamDtype::Bf16;
        if (!p.fsdp_reduce_dtype)
            p.fsdp_reduce_dtype = ParamDtype::Fp32;
        break;
    default:
        break;
    }
}

// ZeRO-1/2 buckets (deepspeed/runtime/zero/config.py, stage_1_and_2.py): DeepSpeed's own
// defaults are 5e8-element buckets and overlap_comm only for stage 3; Hugging Face's integration
// fills reduce_bucket_size "auto" with hidden_size^2 and its example configs turn overlap_comm on
// (MemBudget's behaviour before stacks, kept for plain-torch).
void deepSpeedBuckets(EstimateInput &in)
{
    DeepSpeedConfig &d = in.parallelism.deepspeed;
    const DeepSpeedConfig &file = in.parallelism.deepspeed_from_file;
    if (!d.reduce_bucket_size)
        d.reduce_bucket_size = file.reduce_bucket_size;
    if (!d.overlap_comm)
        d.overlap_comm = file.overlap_comm;
    if (!d.sub_group_size)
        d.sub_group_size = file.sub_group_size;
    if (!d.bf16_optimizer_states)
        d.bf16_optimizer_states = deepSpeedBf16OptimizerStates(in.parallelism);
    if (!d.bf16_master_weights)
        d.bf16_master_weights = file.bf16_master_weights;
    const double h = static_cast<double>(in.arch.hidden_size);
    const bool native = in.training.stack.name == Stack::DeepSpeed;
    if (!d.reduce_bucket_size)
        d.reduce_bucket_size = native ? 5e8 : h * h;
    if (!d.overlap_comm)
        d.overlap_comm = native ? in.parallelism.sharding == Sharding::Zero3 : true;
    if (!d.sub_group_size)
        d.sub_group_size = kDeepSpeedSubGroupSize;
}

std::string dtypeText(const std::optional<ParamDtype> &d)
{
    return d ? paramDtypeName(*d) : "none (the parameters' dtype)";
}

std::string number(double v)
{
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    return text;
}

} // namespace

// TRL's SFTTrainer makes a sharded QLoRA's adapters in the model dtype: get_peft_model(...,
// autocast_adapter_dtype=False) (trl/trainer/sft_trainer.py from 0.9, trl/models/utils.py
// prepare_peft_model to 0.25); from 0.26 every quantized model's (staticDefaults).
AdapterPrecision stackAdapterPrecision(const TrainingConfig &t, const ParallelismConfig &p)
{
    if (t.stack.name == Stack::TrlSft && t.method == Method::Qlora && shardedQlora(p))
        return AdapterPrecision::Base;
    if (deepSpeedCastsModule(t, p))
        return AdapterPrecision::Base;
    return staticDefaults(t).adapter;
}

bool parseLibraryVersion(const std::string &text, LibraryVersion &out)
{
    std::size_t i = !text.empty() && (text[0] == 'v' || text[0] == 'V') ? 1 : 0;
    int parts[3] = {0, 0, 0};
    int count = 0;
    while (count < 3 && i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
        long value = 0;
        while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
            value = value * 10 + (text[i] - '0');
            if (value > 100000)
                return false;
            ++i;
        }
        parts[count++] = static_cast<int>(value);
        if (i < text.size() && text[i] == '.' && i + 1 < text.size()
            && std::isdigit(static_cast<unsigned char>(text[i + 1])))
            ++i;
        else
            break;
    }
    if (count == 0)
        return false;
    for (; i < text.size(); ++i) { // a suffix: ".dev0", "rc1", "+cu121"
        const char c = text[i];
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '+')
            return false;
    }
    out = {parts[0], parts[1], parts[2]};
    return true;
}

const char *stackLibrary(Stack stack)
{
    switch (stack) {
    case Stack::PlainTorch:
        return "PyTorch";
    case Stack::HfTrainer:
        return "transformers";
    case Stack::TrlSft:
        return "TRL";
    case Stack::AccelerateFsdp:
        return "accelerate";
    case Stack::DeepSpeed:
        return "DeepSpeed";
    case Stack::Torchtune:
        return "torchtune";
    case Stack::Torchtitan:
        return "torchtitan";
    }
    return "";
}

LibraryVersion newestKnownVersion(Stack stack)
{
    switch (stack) {
    case Stack::PlainTorch:
        return {2, 11, 0}; // SDPA prefers cuDNN on Hopper and B200 (throughput/attention_kernel.h)
    case Stack::HfTrainer:
        return {5, 0, 0}; // the Trainer turns use_cache off (stackBuildsTrainingCache)
    case Stack::TrlSft:
        return {1, 9, 0}; // chunked_nll by default (staticDefaults)
    case Stack::AccelerateFsdp:
        return {1, 10, 0};
    case Stack::DeepSpeed:
        return {0, 18, 3};
    case Stack::Torchtune:
        return {0, 6, 1};
    case Stack::Torchtitan:
        return {0, 2, 2};
    }
    return {};
}

void followStackAdapterPrecision(const TrainingConfig &before,
                                 const ParallelismConfig &parallelBefore,
                                 TrainingConfig &t,
                                 const ParallelismConfig &p)
{
    if (t.lora.adapter_precision == stackAdapterPrecision(before, parallelBefore))
        t.lora.adapter_precision = stackAdapterPrecision(t, p);
}

void applyStackDefaults(TrainingConfig &t, ParallelismConfig &p, const ExplicitKeys &x)
{
    const StaticDefaults d = staticDefaults(t);
    if (d.precision && !x.precision)
        t.precision = *d.precision;
    if (!x.optimizer)
        t.optimizer = d.optimizer;
    if (!x.loss)
        t.loss = d.loss;
    if (d.checkpointing && !x.checkpointing)
        t.checkpointing = *d.checkpointing;
    if (!x.checkpointing)
        t.checkpoint_every = d.checkpoint_every;
    if (d.sharding && !x.sharding)
        p.sharding = *d.sharding;
    if (!x.adapter_precision)
        t.lora.adapter_precision = stackAdapterPrecision(t, p);
}

namespace {

// torchtitan's apply_tp (torchtitan/models/llama3/infra/parallelize.py) puts SequenceParallel on
// every norm and Shard(1) layouts between the blocks whenever tensor parallelism is on; Hugging
// Face's tp_plan ("colwise" / "rowwise" styles, transformers/integrations/tensor_parallel.py)
// replicates the hidden states between them.
bool shardsSequence(const StackConfig &stack)
{
    return stack.name == Stack::Torchtitan;
}

// transformers' tp_plan puts "colwise_rep" on lm_head (models/llama/modeling_llama.py _tp_plan;
// integrations/tensor_parallel.py: ColwiseParallel with Replicate outputs): every rank gets the
// whole vocabulary's logits and runs the usual loss. torchtitan's loss_parallel is on unless
// disable_loss_parallel; plain-torch keeps Megatron's vocab-parallel cross-entropy.
bool parallelizesLoss(const StackConfig &stack)
{
    switch (stack.name) {
    case Stack::HfTrainer:
    case Stack::TrlSft:
    case Stack::AccelerateFsdp:
        return false;
    default:
        return true;
    }
}

constexpr const char *kTorchtitanAllocatorConf = "expandable_segments:True";

// torchtitan's launcher runs training with PYTORCH_ALLOC_CONF="expandable_segments:True"
// (run_train.sh); a scenario's own allocator_conf wins.
void launcherAllocatorConf(EstimateInput &in)
{
    if (in.training.stack.name == Stack::Torchtitan && in.overheads.allocator_conf.empty())
        in.overheads.allocator_conf = kTorchtitanAllocatorConf;
}

} // namespace

TensorParallelPlan tensorParallelPlan(const ParallelismConfig &p, const StackConfig &stack)
{
    TensorParallelPlan plan(p.tensor_parallel,
                            p.sequence_parallel.value_or(shardsSequence(stack)),
                            p.loss_parallel.value_or(parallelizesLoss(stack)));
    plan.context_parallel = std::max<std::int64_t>(1, p.context_parallel);
    return plan;
}

bool runsUnderTrainer(Stack s)
{
    return s == Stack::HfTrainer || s == Stack::TrlSft || s == Stack::AccelerateFsdp;
}

// TrainingArguments' bf16 and fp16 default to off; recipes set one with 16-bit weights, and TRL's
// SFTConfig defaults bf16 to on from 0.19 (PR #3515): unset, MemBudget takes it as set.
bool trainerMixedPrecision(const TrainingConfig &t)
{
    const bool half = isPure16(t.precision) || isAmp(t.precision);
    return runsUnderTrainer(t.stack.name) && half && t.trainer_mixed_precision.value_or(true);
}

bool trainerFlagIsAChoice(const TrainingConfig &t, const ParallelismConfig &p)
{
    return runsUnderTrainer(t.stack.name) && isPure16(t.precision) && !deepSpeedKeepsPrecision(p);
}

// accelerate wraps the model's forward in autocast for the Trainer's bf16/fp16 flag whatever the
// weights' dtype (accelerator.py, prepare_model with native_amp), except under DeepSpeed, which
// keeps the precision itself (native_amp is off for DistributedType.DEEPSPEED).
bool trainerAutocast(const EstimateInput &in)
{
    return trainerMixedPrecision(in.training) && !deepSpeedKeepsPrecision(in.parallelism)
           && in.training.mode == Mode::Train;
}

bool deepSpeedKeepsPrecision(const ParallelismConfig &p)
{
    return isDeepSpeed(p.sharding) && p.gpus > 1;
}

// DeepSpeed's ZeRO optimizers step a master partition of what trains in their
// master_weights_and_grads_dtype, fp32 unless told otherwise (deepspeed/runtime/base_optimizer.py,
// _configure_master_weights; stage_1_and_2.py single_partition_of_fp32_groups, stage3.py
// fp32_partitioned_groups_flat). Pure fp16 has no DeepSpeed setting: it is mixed-fp16. Pure bf16
// is bf16_master_weights_and_grads with bf16_optimizer_states (0.18.3, PR #7700; what MemBudget's
// DeepSpeed export writes for it); before 0.18.3 it is mixed-bf16. AMP is DeepSpeed's
// torch_autocast on fp32 weights (the export's too), and stays.
// Under the Trainer (hf-trainer, trl-sft, accelerate) the bf16/fp16 flag turns DeepSpeed's
// bf16/fp16 section on and nothing else (accelerate utils/dataclasses.py,
// DeepSpeedPlugin.set_mixed_precision: `{"enabled": True}` where the file has no section, "auto"
// filled otherwise), and accelerate's own autocast is off under DeepSpeed: amp-* and pure 16-bit
// weights both step as mixed-*, with bf16 masters only where the scenario or its DeepSpeed file
// says bf16_master_weights.
Precision deepSpeedPrecision(const TrainingConfig &t, const ParallelismConfig &p)
{
    if (!deepSpeedKeepsPrecision(p) || t.mode != Mode::Train)
        return t.precision;
    const std::optional<bool> masters = p.deepspeed.bf16_master_weights
                                            ? p.deepspeed.bf16_master_weights
                                            : p.deepspeed_from_file.bf16_master_weights;
    if (trainerMixedPrecision(t)) {
        if (isFp16(t.precision))
            return Precision::MixedFp16;
        return t.precision == Precision::Bf16 && masters.value_or(false) ? Precision::Bf16
                                                                         : Precision::MixedBf16;
    }
    if (t.precision == Precision::Fp16)
        return Precision::MixedFp16;
    const bool bf16Masters = masters.value_or(t.stack.name != Stack::DeepSpeed
                                              || !before(effectiveVersion(t.stack), 0, 18, 3));
    if (t.precision == Precision::Bf16 && !bf16Masters)
        return Precision::MixedBf16;
    return t.precision;
}

// ZeRO-1/2 make their master partition with a clone even where the weights have the master dtype
// already (stage_1_and_2.py: `weights_partition = ....detach().clone().to(master dtype)`): fp32
// and torch_autocast training (AMP) keep a second fp32 copy of their partition, pure bf16 a bf16
// one. ZeRO-3 did the same until 0.18.2, which steps such weights in place (stage3.py,
// _create_fp32_partitions, PR #7651); its version is known under the deepspeed stack, the newest
// behaviour elsewhere. Returns bytes per trainable parameter (0: none, or an fp32 master of
// 16-bit weights, which mixed-* precision counts).
double deepSpeedClonedMasterBytes(const EstimateInput &in)
{
    const TrainingConfig &t = in.training;
    const ParallelismConfig &p = in.parallelism;
    if (!deepSpeedKeepsPrecision(p) || t.mode != Mode::Train)
        return 0;
    const Precision trained = deepSpeedPrecision(t, p);
    if (isMixedMaster(trained))
        return 0;
    if (p.sharding == Sharding::Zero3
        && !(t.stack.name == Stack::DeepSpeed && before(effectiveVersion(t.stack), 0, 18, 2)))
        return 0;
    return trained == Precision::Bf16 ? 2 : 4;
}

std::optional<bool> deepSpeedBf16OptimizerStates(const ParallelismConfig &p)
{
    const DeepSpeedConfig &file = p.deepspeed_from_file;
    if (p.deepspeed.bf16_optimizer_states)
        return p.deepspeed.bf16_optimizer_states;
    if (file.bf16_master_weights.value_or(false)) // the file's bf16 masters come with its states
        return file.bf16_optimizer_states;
    if (p.deepspeed.bf16_master_weights)
        return std::nullopt; // MemBudget's key alone: bf16 masters with bf16 states
    return file.bf16_optimizer_states;
}

// With bf16 masters DeepSpeed keeps fp32 Adam states unless bf16_optimizer_states is on; that
// needs ZeRO-Offload with DeepSpeedCPUAdam (base_optimizer.py, _configure_master_weights;
// engine.py passes fp32_optimizer_states=True to DeepSpeedCPUAdam then), which validateInput
// asks for.
bool deepSpeedFp32OptimizerStates(const TrainingConfig &t, const ParallelismConfig &p)
{
    return deepSpeedKeepsPrecision(p) && t.mode == Mode::Train
           && deepSpeedPrecision(t, p) == Precision::Bf16
           && !deepSpeedBf16OptimizerStates(p).value_or(true);
}

// ZeRO-Offload makes the master partition in CPU RAM in the master dtype, a copy even where the
// weights have that dtype (stage_1_and_2.py: the partition's clone().to(master dtype) pinned on
// the CPU; stage3.py, _create_fp32_partitions: the offload_optimizer branch clones). Bytes per
// trainable parameter: 2 with bf16 masters, else 4; 0 without DeepSpeed's offloaded optimizer.
double deepSpeedOffloadedMasterBytes(const EstimateInput &in)
{
    const TrainingConfig &t = in.training;
    if (!deepSpeedKeepsPrecision(in.parallelism) || t.mode != Mode::Train || !t.offload.optimizer)
        return 0;
    return deepSpeedPrecision(t, in.parallelism) == Precision::Bf16 ? 2 : 4;
}

// DeepSpeed's engine casts the whole module to its 16-bit dtype when bf16 or fp16 is enabled
// (deepspeed/runtime/engine.py, _configure_distributed_model: module.bfloat16() / half(); from
// 0.19.2 a cast of every parameter to the policy's dtype): fp32 LoRA adapters and the fp32 norms,
// embeddings and lm_head of PEFT's k-bit preparation are 16-bit again. Quantized weights are not
// floating point and stay as they are.
bool deepSpeedCastsModule(const TrainingConfig &t, const ParallelismConfig &p)
{
    const Precision trained = deepSpeedPrecision(t, p);
    return deepSpeedKeepsPrecision(p) && t.mode == Mode::Train
           && (isPure16(trained) || isMixedMaster(trained));
}

void castModuleForDeepSpeed(TrainingConfig &t, const ParallelismConfig &p)
{
    if (!deepSpeedCastsModule(t, p))
        return;
    t.precision = deepSpeedPrecision(t, p);
    t.lora.adapter_precision = AdapterPrecision::Base;
    t.kbit_fp32_upcast = false;
}

// With tied embeddings embed_tokens keeps the shared weight gathered and TRL's context does
// nothing (trl/trainer/utils.py, maybe_gather_lm_head_ctx); a tensor-parallel lm_head is a DTensor
// that TRL gathers once (full_tensor()). A quantized lm_head is refused with this loss
// (validateTrlChunkedLoss).
bool trlGathersHeadPerChunk(const EstimateInput &in)
{
    const TrainingConfig &t = in.training;
    const ParallelismConfig &p = in.parallelism;
    return t.mode == Mode::Train && t.loss == LossImplementation::TrlChunkedNll
           && p.sharding == Sharding::Zero3 && p.gpus > 1 && p.tensor_parallel <= 1
           && !in.arch.tied_embeddings;
}

EstimateInput resolveStackChoices(const EstimateInput &input)
{
    EstimateInput in = input;
    in.training.trainer_autocast = trainerAutocast(in);
    castModuleForDeepSpeed(in.training, in.parallelism);
    in.training.head_gathered_per_chunk = trlGathersHeadPerChunk(in);
    if (!in.training.kbit_fp32_upcast)
        in.training.kbit_fp32_upcast = stackUpcastsKbit(in);
    if (!in.training.use_cache)
        in.training.use_cache = stackBuildsTrainingCache(in.training);
    const TensorParallelPlan plan = tensorParallelPlan(in.parallelism, in.training.stack);
    in.parallelism.sequence_parallel = plan.sequence_parallel;
    in.parallelism.loss_parallel = plan.loss_parallel;
    fsdpMixedPrecision(in);
    deepSpeedBuckets(in);
    launcherAllocatorConf(in);
    // transformers' tensor-parallel plans (Llama's base_model_tp_plan, integrations/
    // tensor_parallel.py) split the attention and MLP projections and lm_head, not embed_tokens:
    // an untied embedding stays whole on every rank. A tied one shares lm_head's split weight.
    const Stack s = in.training.stack.name;
    if (runsUnderTrainer(s) && !in.arch.tied_embeddings)
        in.arch.tensor_parallel_embedding = false;
    return in;
}

TrainingConfig graphTrainingConfig(const EstimateInput &in)
{
    TrainingConfig t = in.training;
    const auto param = in.parallelism.fsdp_param_dtype;
    if (param && *param != ParamDtype::Fp32 && shardsOverFsdp(in) && in.training.mode == Mode::Train
        && (t.precision == Precision::Fp32 || isAmp(t.precision))) {
        // FSDP casts every parameter of a unit (LoRA adapters included) to param_dtype when it
        // gathers it: the layers compute as a pure 16-bit model.
        t.precision = *param == ParamDtype::Fp16 ? Precision::Fp16 : Precision::Bf16;
        t.lora.adapter_precision = AdapterPrecision::Base;
    }
    return t;
}

std::vector<StackChoice> stackChoices(const EstimateInput &input)
{
    const EstimateInput in = resolveStackChoices(input);
    const TrainingConfig &t = in.training;
    const ParallelismConfig &p = in.parallelism;
    const StaticDefaults d = staticDefaults(t);
    const bool train = t.mode == Mode::Train;
    std::vector<StackChoice> out;
    out.push_back(
        {"training.precision",
         precisionName(t.precision),
         (d.precision && *d.precision == t.precision) || t.precision != input.training.precision});
    if (!train)
        return out;
    out.push_back({"training.optimizer", optimizerName(t.optimizer), d.optimizer == t.optimizer});
    out.push_back({"training.loss", lossName(t.loss), d.loss == t.loss});
    out.push_back({"training.gradient_checkpointing",
                   checkpointingName(t.checkpointing),
                   d.checkpointing && *d.checkpointing == t.checkpointing});
    if (t.checkpointing == Checkpointing::Full && t.checkpoint_every != 1)
        out.push_back({"training.checkpoint_every",
                       std::to_string(t.checkpoint_every),
                       d.checkpoint_every == t.checkpoint_every});
    if (t.method != Method::Full)
        out.push_back({"training.lora.adapter_precision",
                       adapterPrecisionName(t.lora.adapter_precision),
                       stackAdapterPrecision(t, p) == t.lora.adapter_precision});
    if (t.method == Method::Qlora)
        out.push_back({"training.kbit_fp32_upcast",
                       *t.kbit_fp32_upcast ? "true" : "false",
                       !input.training.kbit_fp32_upcast.has_value() || deepSpeedCastsModule(t, p)});
    if (t.checkpointing != Checkpointing::Full && buildsTransformersCache(t.stack.name))
        out.push_back({"training.use_cache",
                       *t.use_cache ? "true" : "false",
                       !input.training.use_cache.has_value()});
    if (trainerFlagIsAChoice(t, p))
        out.push_back({"training.trainer_mixed_precision",
                       trainerMixedPrecision(t) ? "true" : "false",
                       !input.training.trainer_mixed_precision.has_value()});
    if (p.gpus > 1 || t.offload.parameters || t.offload.optimizer)
        out.push_back({"parallelism.sharding",
                       shardingName(p.sharding),
                       d.sharding && *d.sharding == p.sharding});
    if (p.tensor_parallel > 1) {
        out.push_back({"parallelism.sequence_parallel",
                       *p.sequence_parallel ? "true" : "false",
                       !input.parallelism.sequence_parallel.has_value()});
        if (train)
            out.push_back({"parallelism.loss_parallel",
                           *p.loss_parallel ? "true" : "false",
                           !input.parallelism.loss_parallel.has_value()});
    }
    if (shardsOverFsdp(in)) {
        out.push_back({"parallelism.fsdp_param_dtype",
                       dtypeText(p.fsdp_param_dtype),
                       !input.parallelism.fsdp_param_dtype.has_value()});
        out.push_back({"parallelism.fsdp_reduce_dtype",
                       dtypeText(p.fsdp_reduce_dtype ? p.fsdp_reduce_dtype : p.fsdp_param_dtype),
                       !input.parallelism.fsdp_reduce_dtype.has_value()});
    }
    if (t.stack.name == Stack::Torchtitan)
        out.push_back({"overheads.allocator_conf",
                       in.overheads.allocator_conf,
                       input.overheads.allocator_conf.empty()});
    if (isDeepSpeed(p.sharding) && p.gpus > 1) {
        const DeepSpeedConfig &ds = p.deepspeed;
        const DeepSpeedConfig &given = input.parallelism.deepspeed;
        out.push_back({"parallelism.deepspeed.reduce_bucket_size",
                       number(*ds.reduce_bucket_size),
                       !given.reduce_bucket_size.has_value()});
        out.push_back({"parallelism.deepspeed.overlap_comm",
                       *ds.overlap_comm ? "true" : "false",
                       !given.overlap_comm.has_value()});
        if (p.sharding == Sharding::Zero3)
            out.push_back({"parallelism.deepspeed.sub_group_size",
                           number(*ds.sub_group_size),
                           !given.sub_group_size.has_value()});
        if (t.mode == Mode::Train && deepSpeedPrecision(t, p) == Precision::Bf16)
            out.push_back({"parallelism.deepspeed.bf16_optimizer_states",
                           deepSpeedFp32OptimizerStates(t, p) ? "false" : "true",
                           !given.bf16_optimizer_states.has_value()});
    }
    return out;
}

bool trainingKvCache(const TrainingConfig &t)
{
    return t.use_cache.value_or(stackBuildsTrainingCache(t)) && t.mode == Mode::Train
           && t.checkpointing != Checkpointing::Full;
}

bool buildsTransformersCache(Stack stack)
{
    return stack != Stack::Torchtune && stack != Stack::Torchtitan;
}

// transformers set use_reentrant=True when no gradient_checkpointing_kwargs are given (PR #28538)
// until PR #43203 (released in 5.0) made it False; TRL's SFTTrainer defaults it to False from 0.27
// (PR #4811). Other stacks checkpoint without reentrancy (torchtune, torchtitan, accelerate's
// FSDP activation checkpointing) or with their own (DeepSpeed, Megatron).
bool stackCheckpointsReentrant(const StackConfig &stack)
{
    switch (stack.name) {
    case Stack::HfTrainer:
        return before(effectiveVersion(stack), 5, 0);
    case Stack::TrlSft:
        return before(effectiveVersion(stack), 0, 27);
    default:
        return false;
    }
}

bool kbitUpcast(const TrainingConfig &t)
{
    return t.kbit_fp32_upcast.value_or(false) && t.mode == Mode::Train && t.method == Method::Qlora;
}

bool kbitKeepsHead16bit(const TrainingConfig &t)
{
    const bool bf16 = t.precision == Precision::Bf16 || t.precision == Precision::AmpBf16
                      || t.precision == Precision::MixedBf16;
    return kbitUpcast(t) && bf16 && t.stack.name == Stack::TrlSft
           && before(effectiveVersion(t.stack), 0, 26);
}

// torchtitan's Llama called repeat_kv before SDPA until PR #2259 ("GQA without kv repeats",
// torchtitan/models/llama3/model/model.py), first released in 0.2.2; since then SDPA gets the
// grouped keys and values with enable_gqa. transformers' SDPA path repeated them always (4.46's
// LlamaSdpaAttention, 4.48-4.53's integrations/sdpa_attention.py) until use_gqa_in_sdpa
// (PR #39412, 2025-07-21, first in 4.54).
bool stackRepeatsGroupedKv(const StackConfig &stack)
{
    const LibraryVersion v = effectiveVersion(stack);
    if (stack.name == Stack::HfTrainer)
        return before(v, 4, 54);
    return stack.name == Stack::Torchtitan && before(v, 0, 2, 2);
}

// deepspeed/runtime/zero/stage3.py, step(): check_overflow() ran whatever the dtype until PR #4512
// made it `if self.dtype == torch.float16` (read at v0.10.0 and in 0.19).
bool deepSpeedZero3ChecksOverflow(const TrainingConfig &t)
{
    if (t.precision == Precision::MixedFp16 || t.precision == Precision::Fp16)
        return true;
    return t.stack.name == Stack::DeepSpeed && before(effectiveVersion(t.stack), 0, 11, 2);
}

bool stackPrefersCudnnAttention(const StackConfig &stack, ComputeCapability cc)
{
    if (stack.name != Stack::Torchtitan)
        return false;
    const LibraryVersion v = effectiveVersion(stack);
    return !before(v, 0, 2, 0) || (!before(v, 0, 1, 0) && cc.major >= 10);
}

bool deepSpeedStepsOnGpu(const EstimateInput &in)
{
    const TrainingConfig &t = in.training;
    const ParallelismConfig &p = in.parallelism;
    const bool zero = isDeepSpeed(p.sharding) && (p.gpus > 1 || t.offload.parameters);
    return zero && t.mode == Mode::Train && !t.offload.optimizer
           && (isMixedMaster(t.precision) || deepSpeedKeepsPrecision(p));
}

// transformers before 4.53: _prepare_4d_causal_attention_mask_with_cache_position (additive).
bool boolAttentionMask(const StackConfig &stack)
{
    return stack.name != Stack::HfTrainer || !before(effectiveVersion(stack), 4, 53);
}

bool attentionWeightsHeldByLayer(const StackConfig &stack)
{
    return stack.name != Stack::HfTrainer || !before(effectiveVersion(stack), 4, 48);
}

bool gpt2AttentionWeightsHeldByBlock(const StackConfig &stack)
{
    return stack.name != Stack::HfTrainer || !before(effectiveVersion(stack), 4, 52);
}

bool dynamicCacheCopiesPrompt(const StackConfig &stack)
{
    return stack.name != Stack::HfTrainer || !before(effectiveVersion(stack), 4, 56);
}

std::string describeStack(const StackConfig &s)
{
    std::string out = stackName(s.name);
    if (s.name == Stack::PlainTorch)
        return out;
    out += " (";
    out += stackLibrary(s.name);
    out += " ";
    if (s.version.empty()) {
        const LibraryVersion v = newestKnownVersion(s.name);
        out.append(std::to_string(v.major)).append(".").append(std::to_string(v.minor));
        if (v.patch)
            out.append(".").append(std::to_string(v.patch));
        out += ", the newest known";
    } else {
        out += s.version;
    }
    if (!s.torch.empty())
        out += ", PyTorch " + s.torch;
    return out + ")";
}

} // namespace membudget
