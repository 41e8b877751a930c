// SPDX-License-Identifier: GPL-3.0-or-later
#include "advice/explanation.h"

#include "base/byte_format.h"

#include <cmath>
#include <cstdio>

namespace membudget {

namespace {

std::string num(double v, int decimals = 0)
{
    if (decimals == 0)
        return formatCount(std::round(v));
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return buf;
}

std::string gb(double bytes)
{
    return formatBytes(toBytes(bytes), ByteUnit::GB);
}

std::string shardText(double shard)
{
    return shard > 1 ? " / " + num(shard) + " GPUs" : std::string();
}

const char *weightDtype(Precision p)
{
    switch (p) {
    case Precision::Fp32:
        return "fp32";
    case Precision::AmpBf16:
    case Precision::AmpFp16:
        return "fp32 (autocast)";
    case Precision::Bf16:
    case Precision::MixedBf16:
        return "bf16";
    case Precision::Fp16:
    case Precision::MixedFp16:
        return "fp16";
    }
    return "";
}

} // namespace

std::string explainComponent(const EstimateInput &in,
                             const MemoryEstimate &est,
                             Phase phase,
                             Component c)
{
    const Derivation &d = est.derivation;
    const Breakdown &b = est.phase(phase);
    const Bytes bytes = b[c];
    const TrainingConfig &t = in.training;
    const double tokens = d.tokens;
    const std::string total = " = " + formatBytes(bytes, ByteUnit::GB);
    const bool inference = t.mode == Mode::Inference;
    if (inference
        && (c == Component::Gradients || c == Component::MasterWeights
            || c == Component::OptimizerStates))
        return "not used in inference";
    switch (c) {
    case Component::Weights: {
        std::string s;
        if (t.method == Method::Full || t.mode == Mode::Inference) {
            s = num(d.params_per_gpu) + " params x "
                + num(d.weight_bytes_full / std::max(1.0, d.params_per_gpu), 3) + " B ("
                + (t.quantization != Quantization::None ? quantizationName(t.quantization)
                                                        : weightDtype(t.precision))
                + ")";
        } else {
            s = num(d.params_per_gpu) + " frozen params ("
                + (t.method == Method::Qlora ? quantizationName(t.quantization)
                                             : weightDtype(t.precision))
                + ") + " + num(d.trainable_per_gpu) + " adapter params ("
                + adapterPrecisionName(t.lora.adapter_precision) + ")";
        }
        s += shardText(d.weight_shard);
        if (in.parallelism.sharding == Sharding::FsdpGradOp && in.parallelism.gpus > 1
            && phase != Phase::OptimizerStep)
            s += " + the unsharded copy held from forward to the end of backward";
        if (t.offload.parameters)
            s = "parameters offloaded to CPU RAM; only gathered units are on the GPU (see "
                "temporaries)";
        return s + total;
    }
    case Component::Gradients:
        if (bytes == 0)
            return phase == Phase::Forward
                       ? "no gradients during forward (freed by zero_grad after the last step)"
                       : "none yet";
        return num(d.trainable_per_gpu) + " trainable params x " + num(d.grad_bytes_per_param)
               + " B" + shardText(d.grad_shard)
               + (phase == Phase::Forward ? " (kept between micro-batches by gradient accumulation)"
                                          : "")
               + (phase == Phase::Backward && d.backward_peak_at_start == 2
                      ? " (lm_head and last layer so far)"
                      : "")
               + total;
    case Component::MasterWeights:
        if (bytes == 0)
            return t.offload.optimizer && isMixedMaster(t.precision)
                       ? "offloaded to CPU RAM"
                       : "none (no fp32 master copy in this precision)";
        return num(d.trainable_per_gpu) + " trainable params x 4 B fp32 master copy"
               + shardText(d.state_shard) + total;
    case Component::OptimizerStates:
        if (bytes == 0)
            return t.offload.optimizer
                       ? "offloaded to CPU RAM (" + formatBytes(est.cpu_offload_bytes) + " per GPU)"
                       : std::string(optimizerName(t.optimizer)) + " keeps no state";
        return num(d.trainable_per_gpu) + " trainable params x "
               + num(d.optimizer_bytes_per_param, 3) + " B (" + optimizerName(t.optimizer) + ")"
               + shardText(d.state_shard)
               + (d.paged_optimizer ? "; paged: may spill to CPU under pressure" : "") + total;
    case Component::Activations: {
        if (bytes == 0)
            return t.mode == Mode::Inference ? "none (inference saves nothing for backward)"
                                             : "none (freed after backward)";
        const std::string perLayer = num(d.layer_activation_per_token) + " B/token"
                                     + (d.layer_attention_score_per_token > 0
                                            ? " + " + num(d.layer_attention_score_per_token)
                                                  + " B/token x s (eager softmax)"
                                            : std::string());
        if (phase == Phase::Backward && d.backward_peak_at_start == 0) {
            return "one layer's saved tensors remain ("
                   + gb(t.checkpointing == Checkpointing::Full ? d.layer_checkpoint_bytes
                                                               : d.layer_saved_bytes)
                   + ") + embeddings/final norm" + total;
        }
        if (t.checkpointing == Checkpointing::Full)
            return num(static_cast<double>(in.arch.layers)) + " layers x layer input "
                   + gb(d.layer_checkpoint_bytes) + " (b x s x h x "
                   + num(d.layer_checkpoint_bytes
                         / std::max(1.0, tokens * static_cast<double>(in.arch.hidden_size)))
                   + " B) + " + gb(d.embedding_activation_bytes) + " outside the layers" + total;
        return num(static_cast<double>(in.arch.layers)) + " layers x " + num(tokens) + " tokens x ("
               + perLayer + ") + " + gb(d.embedding_activation_bytes) + " outside the layers"
               + total;
    }
    case Component::KvCache:
        if (bytes == 0)
            return "none (training keeps no KV cache)";
        return "2 x " + num(static_cast<double>(in.arch.layers)) + " layers x " + num(tokens)
               + " tokens x " + num(static_cast<double>(in.arch.kv_heads)) + " KV heads x "
               + num(static_cast<double>(in.arch.head_dim)) + " x "
               + num(d.kv_cache_bytes
                         / std::max(1.0,
                                    2 * static_cast<double>(in.arch.layers) * tokens
                                        * static_cast<double>(in.arch.kv_heads * in.arch.head_dim)),
                     0)
               + " B" + total;
    case Component::Logits:
        if (bytes == 0)
            return "none at this moment";
        if (t.mode == Mode::Inference)
            return "last-position logits b x V x (16-bit + fp32)" + total;
        if (phase == Phase::Backward)
            return num(tokens) + " tokens x " + num(static_cast<double>(in.arch.vocab_size))
                   + " vocab x "
                   + num(d.logits_bytes_per_token,
                         d.logits_bytes_per_token == std::floor(d.logits_bytes_per_token) ? 0 : 2)
                   + " B (loss " + lossName(t.loss) + ": the fp32 loss-gradient chain)" + total;
        return num(tokens) + " tokens x " + num(static_cast<double>(in.arch.vocab_size))
               + " vocab x "
               + num(d.logits_forward_bytes
                         / std::max(1.0, tokens * static_cast<double>(in.arch.vocab_size)),
                     2)
               + " B (loss " + lossName(t.loss) + ": logits, fp32 upcast, fp32 log-softmax)"
               + total;
    case Component::Temporaries: {
        std::string parts;
        auto add = [&](double v, const char *what) {
            if (v <= 0)
                return;
            parts += (parts.empty() ? "" : " + ") + gb(v) + " " + what;
        };
        if (t.mode == Mode::Inference) {
            add(static_cast<double>(bytes), "prefill working set of one layer");
        } else if (phase == Phase::OptimizerStep) {
            add(d.optimizer_step_temporaries,
                t.optimizer == Optimizer::AdamW || t.optimizer == Optimizer::PagedAdamW
                    ? "foreach AdamW sqrt(exp_avg_sq) buffer"
                    : "optimizer working copies");
            add(d.ddp_bucket_bytes, "DDP gradient buckets");
        } else {
            if (phase == Phase::Forward)
                add(d.sharding_transient_forward, "gathered parameter units");
            else
                add(d.sharding_transient_backward, "gathered units, unsharded grads and buckets");
            if (phase == Phase::Backward && d.backward_peak_at_start != 1) {
                add(d.recompute_bytes, "one layer recomputed");
                add(d.layer_backward_transient, "gradient buffers of one layer");
            }
            if (!(phase == Phase::Backward && d.backward_peak_at_start == 0))
                add(d.autocast_weight_cache, "autocast 16-bit weight copies");
            add(d.ddp_bucket_bytes, "DDP gradient buckets");
            add(d.dequant_transient, "one dequantized weight");
        }
        if (parts.empty())
            return "none";
        return parts + total;
    }
    case Component::CudaContext:
        return "CUDA context and kernels "
               + formatBytes(in.overheads.cuda_context_bytes, ByteUnit::GiB) + total;
    case Component::Communicator:
        if (bytes == 0)
            return "none (one GPU)";
        return "NCCL communicator buffers " + formatBytes(in.overheads.nccl_bytes, ByteUnit::GiB)
               + " per rank" + total;
    case Component::AllocatorReserve:
        return num(in.overheads.allocator_reserve_fraction * 100.0, 0) + "% of "
               + formatBytes(b.allocated())
               + " allocated (caching-allocator blocks held but unused)" + total;
    }
    return {};
}

std::string explainPhase(const EstimateInput &in, const MemoryEstimate &est, Phase phase)
{
    const Derivation &d = est.derivation;
    const std::string alloc = formatBytes(est.phase(phase).allocated());
    switch (phase) {
    case Phase::Forward:
        if (in.training.mode == Mode::Inference)
            return "Inference: weights, KV cache and one layer's prefill working set: " + alloc
                   + " allocated.";
        return "End of forward: every saved activation plus the logits and loss tensors: " + alloc
               + " allocated.";
    case Phase::Backward:
        if (d.backward_peak_at_start == 1)
            return "Backward peaks at its start, while the loss gradient chain (fp32 logits) "
                   "coexists with all activations: "
                   + alloc + ".";
        if (d.backward_peak_at_start == 2)
            return "Backward peaks at the first layer processed: all activations, the recomputed "
                   "layer and its gradient buffers: "
                   + alloc + ".";
        return "Backward peaks at its end, when gradients are complete and one layer's activations "
               "remain: "
               + alloc + ".";
    case Phase::OptimizerStep:
        return "Optimizer step: weights, gradients, states and the step's temporaries: " + alloc
               + ".";
    }
    return {};
}

} // namespace membudget
