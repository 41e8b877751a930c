// SPDX-License-Identifier: GPL-3.0-or-later
#include "advice/explanation.h"

#include "base/byte_format.h"
#include "model/stack_profile.h"
#include "model/step_model.h"
#include "model/timeline_live.h"

#include <cmath>

namespace membudget {

namespace {

// What the loss's chain at its peak is made of, for the Logits line.
std::string lossChainWords(LossImplementation loss, Phase phase)
{
    if (loss == LossImplementation::Fp32OutputKept)
        return phase == Phase::Backward
                   ? "the fp32 loss-gradient chain beside the fp32 output, kept"
                   : "the model's fp32 output (kept through backward), fp32 log-softmax";
    if (loss == LossImplementation::Fp32Output)
        return phase == Phase::Backward ? "the fp32 loss-gradient chain"
                                        : "the model's fp32 output, fp32 log-softmax";
    if (loss == LossImplementation::TrlChunkedNll)
        return phase == Phase::Backward
                   ? "one 256-token chunk run again: its fp32 logits' gradient, lm_head's fp32 "
                     "weight and gradient"
                   : "one 256-token chunk's fp32 logits, log-softmax and entropy, lm_head's "
                     "weight in fp32";
    if (loss == LossImplementation::NoUpcast)
        return phase == Phase::Backward ? "the loss-gradient chain in the logits' dtype"
                                        : "logits, shifted copy, log-softmax, no fp32 upcast";
    return phase == Phase::Backward ? "the fp32 loss-gradient chain"
                                    : "logits, fp32 upcast, fp32 log-softmax";
}

std::string num(double v, int decimals = 0)
{
    if (decimals == 0)
        return formatCount(std::round(v));
    return formatFixed(v, decimals);
}

std::string sized(double bytes, ByteUnit unit)
{
    return formatBytes(toBytes(bytes), unit);
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

// "3 x q_proj output (layers 29-31) 1.20 GB"
std::string describeGroup(const StepTimeline &tl, const LiveTensorGroup &g, ByteUnit unit)
{
    const TimelineTensor &t = tl.tensors[static_cast<std::size_t>(g.tensor)];
    std::string s = timelineTensorName(t);
    if (g.count > 1)
        s = num(g.count) + " x " + s;
    if (g.first_layer >= 0 && g.last_layer > g.first_layer)
        s += " (layers " + num(g.first_layer) + "-" + num(g.last_layer) + ")";
    else if (g.first_layer >= 0)
        s += " (layer " + num(g.first_layer) + ")";
    return s + " " + sized(g.bytes, unit);
}

// The largest live tensors of component `c` at the phase's peak, e.g. "2 x autocast weight copy
// 1.2 GB + gradient of down_proj input 0.3 GB + 4 more".
std::string liveList(
    const EstimateInput &in, const MemoryEstimate &est, Phase phase, Component c, ByteUnit unit)
{
    const StepModel model(in);
    const StepTimeline &tl = model.timeline();
    const double seq = static_cast<double>(in.training.sequence_length);
    const std::vector<LiveTensorGroup> groups
        = liveAt(tl, est.moments[static_cast<std::size_t>(phase)], est.derivation.tokens, seq);
    std::string out;
    int shown = 0, more = 0;
    for (const LiveTensorGroup &g : groups) {
        if (tl.tensors[static_cast<std::size_t>(g.tensor)].component != c)
            continue;
        if (shown == 3) {
            ++more;
            continue;
        }
        out += (shown++ ? " + " : "") + describeGroup(tl, g, unit);
    }
    if (more > 0)
        out += " + " + num(more) + " more";
    return out;
}

std::string whereIn(const PeakMoment &m)
{
    switch (m.stage) {
    case Stage::Resident:
        return "at its start";
    case Stage::Loss:
        return "in the loss (lm_head, log-softmax and their gradients)";
    case Stage::OptimizerStep:
        return "during the update";
    case Stage::Decode:
        return m.layer >= 0 ? "generating the last token, in layer " + num(m.layer)
                            : "generating the last token";
    case Stage::Forward:
    case Stage::Backward:
    case Stage::Prefill:
        return m.layer >= 0 ? "in layer " + num(m.layer)
                            : (m.stage == Stage::Backward ? "in the embedding's backward"
                                                          : "in the embedding");
    }
    return {};
}

} // namespace

namespace {

// The KV cache at the peak: positions per sequence after the prefill or the last generated token
// (a static cache: max_cache_len from the start), bytes per stored element, and what the update
// adds on top (DynamicCache's torch.cat, QuantizedCache's residual).
std::string kvCacheFormula(const EstimateInput &in, Stage stage, const Derivation &d, ByteUnit unit)
{
    const TrainingConfig &t = in.training;
    const InferenceConfig &inf = t.inference;
    const double b = static_cast<double>(t.micro_batch_size);
    const double s = static_cast<double>(t.sequence_length);
    double positions = stage == Stage::Decode ? s + static_cast<double>(inf.generated_tokens) : s;
    if (inf.kv_cache == KvCacheKind::Static)
        positions = static_cast<double>(staticCacheLength(inf, t.sequence_length));
    const double full = t.precision == Precision::Fp32 ? 4 : 2;
    double e = inf.kv_cache_dtype == KvCacheDtype::Fp8 ? 1 : full;
    if (inf.kv_cache == KvCacheKind::Quantized)
        e = quantizedKvBytesPerElement(inf, full);
    const double tp = static_cast<double>(std::max<std::int64_t>(1, in.parallelism.tensor_parallel));
    const double heads = std::max(1.0, static_cast<double>(in.arch.kv_heads) / tp);
    const double stored = 2 * static_cast<double>(in.arch.layers) * b * positions * heads
                          * static_cast<double>(in.arch.head_dim) * e;
    std::string s2 = "2 x " + num(static_cast<double>(in.arch.layers)) + " layers x " + num(b)
                     + " sequences x " + num(positions) + " positions x " + num(heads)
                     + " KV heads x " + num(static_cast<double>(in.arch.head_dim)) + " x "
                     + num(e, 3) + " B (" + kvCacheKindName(inf.kv_cache) + " cache)";
    if (d.kv_cache_bytes > stored * 1.0001)
        s2 += " + " + sized(d.kv_cache_bytes - stored, unit) + " being updated";
    return s2;
}

} // namespace

std::string explainComponent(
    const EstimateInput &in, const MemoryEstimate &est, Phase phase, Component c, ByteUnit unit)
{
    const Derivation &d = est.derivation;
    const Breakdown &b = est.phase(phase);
    const Bytes bytes = b[c];
    const TrainingConfig &t = in.training;
    // Context parallelism: this GPU's share of the tokens (context_parallel.h).
    const double tokens = d.tokens / std::max(1.0, d.context_parallel);
    const std::string cpShare = d.context_parallel > 1
                                    ? " (1/" + num(d.context_parallel) + " of each sequence)"
                                    : std::string();
    const std::string total = " = " + formatBytes(bytes, unit);
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
        if (t.offload.parameters)
            s = "parameters offloaded to CPU RAM; only gathered units are on the GPU (see "
                "temporaries)";
        return s + total;
    }
    case Component::Gradients: {
        if (t.optimizer_in_backward && phase != Phase::Forward)
            return bytes == 0 ? std::string("none: the optimizer steps each parameter in backward "
                                            "and frees its gradient")
                              : "made, not yet stepped: " + liveList(in, est, phase, c, unit)
                                    + " (optimizer step in backward)" + total;
        if (bytes == 0)
            return phase == Phase::Forward
                       ? "no gradients during forward (freed by zero_grad after the last step)"
                       : "none yet";
        const double all = d.trainable_per_gpu * d.grad_bytes_per_param / d.grad_shard;
        if (phase == Phase::Backward && static_cast<double>(bytes) < 0.999 * all)
            return "made so far: " + liveList(in, est, phase, c, unit) + total;
        if (static_cast<double>(bytes) > 1.001 * all) // StepBuilder::defersGradientSync
            return "unsharded until the stage's last backward reduces them (torch pipelining "
                   "defers FSDP's gradient sync): "
                   + liveList(in, est, phase, c, unit) + total;
        return num(d.trainable_per_gpu) + " trainable params x " + num(d.grad_bytes_per_param)
               + " B" + shardText(d.grad_shard)
               + (phase != Phase::OptimizerStep && d.grads_live_in_forward
                      ? " (all of them: gradient accumulation keeps them between micro-batches)"
                      : "")
               + total;
    }
    case Component::MasterWeights:
        if (bytes == 0)
            return t.offload.optimizer
                           && (isMixedMaster(t.precision) || deepSpeedOffloadedMasterBytes(in) > 0)
                       ? "offloaded to CPU RAM"
                       : "none (no fp32 master copy in this precision)";
        return num(d.trainable_per_gpu)
               + (d.master_bytes_per_param == 2 ? " trainable params x 2 B bf16 master copy"
                                                : " trainable params x 4 B fp32 master copy")
               + shardText(d.state_shard) + total;
    case Component::OptimizerStates:
        if (bytes == 0 && est.paged_optimizer_bytes > 0)
            return "paged (" + formatBytes(est.paged_optimizer_bytes, unit)
                   + " per GPU in CUDA managed memory, outside torch's allocator)";
        if (bytes == 0)
            return t.offload.optimizer
                       ? "offloaded to CPU RAM (" + formatBytes(est.cpu_offload_bytes, unit)
                             + " per GPU)"
                       : std::string(optimizerName(t.optimizer)) + " keeps no state";
        return num(d.trainable_per_gpu) + " trainable params x "
               + num(d.optimizer_bytes_per_param, 3) + " B (" + optimizerName(t.optimizer) + ")"
               + shardText(d.state_shard)
               + (est.paged_optimizer_bytes > 0
                      ? "; tensors of 1e5 values or more paged apart ("
                            + formatBytes(est.paged_optimizer_bytes, unit) + " per GPU)"
                      : "")
               + total;
    case Component::Activations: {
        if (bytes == 0)
            return t.mode == Mode::Inference ? "none (inference saves nothing for backward)"
                                             : "none (freed after backward)";
        // A pipeline stage runs its own layers, for every micro-batch in flight (pipeline_parallel.h).
        const std::int64_t layers = d.pipeline_stages > 1 ? d.stage_layers : in.arch.layers;
        const double inFlight = d.pipeline_stages > 1 ? d.pipeline_in_flight : 1.0;
        const double checkpointed = static_cast<double>(checkpointedLayers(t, layers));
        const double kept = static_cast<double>(layers) - checkpointed;
        const double everything = inFlight
                                  * (checkpointed * d.layer_checkpoint_bytes
                                     + kept * d.layer_saved_bytes + d.embedding_activation_bytes);
        if (d.offloaded_activation_bytes > 0)
            return "layer inputs offloaded to CPU RAM (" + sized(d.offloaded_activation_bytes, unit)
                   + "); on the GPU: " + liveList(in, est, phase, c, unit) + total;
        if (static_cast<double>(bytes) < 0.999 * everything)
            return "what remains: " + liveList(in, est, phase, c, unit) + total;
        std::string out;
        if (checkpointed > 0 && t.checkpointing == Checkpointing::OpSelective)
            out = num(checkpointed) + " layers x (input + every second matmul's output + "
                  + "attention output) " + sized(d.layer_checkpoint_bytes, unit) + " ("
                  + num(d.layer_checkpoint_bytes / std::max(1.0, tokens)) + " B/token) + ";
        else if (checkpointed > 0)
            out = num(checkpointed) + " checkpointed layers x layer input "
                  + sized(d.layer_checkpoint_bytes, unit)
                  + (d.context_parallel > 1 ? " (b x s/cp x h x " : " (b x s x h x ")
                  + num(d.layer_checkpoint_bytes
                        / std::max(1.0, tokens * static_cast<double>(in.arch.hidden_size)))
                  + " B) + ";
        if (kept > 0)
            out += num(kept) + " layers x " + num(tokens) + " tokens" + cpShare + " x ("
                   + num(d.layer_activation_per_token) + " B/token"
                   + (d.layer_attention_score_per_token > 0
                          ? " + " + num(d.layer_attention_score_per_token)
                                + " B/token x s (eager softmax)"
                          : std::string())
                   + ") + ";
        out += sized(d.embedding_activation_bytes, unit) + " outside the layers";
        if (inFlight > 1)
            out = num(inFlight) + " micro-batches in flight x (" + out + ")";
        return out + total;
    }
    case Component::KvCache:
        if (bytes == 0)
            return "none (training keeps no KV cache)";
        return kvCacheFormula(in, est.moments[static_cast<std::size_t>(phase)].stage, d, unit)
               + total;
    case Component::Logits:
        if (bytes == 0)
            return "none at this moment";
        if (t.mode == Mode::Inference)
            return "last-position logits b x V x (16-bit + fp32)" + total;
        if (est.moments[static_cast<std::size_t>(phase)].stage != Stage::Loss)
            return liveList(in, est, phase, c, unit) + total;
        return num(tokens) + " tokens" + cpShare + " x "
               + num(static_cast<double>(in.arch.vocab_size)) + " vocab x "
               + num(static_cast<double>(bytes)
                         / std::max(1.0, tokens * static_cast<double>(in.arch.vocab_size)),
                     2)
               + " B (loss " + lossName(t.loss) + ": " + lossChainWords(t.loss, phase) + ")"
               + total;
    case Component::Temporaries: {
        if (bytes == 0)
            return "none";
        return liveList(in, est, phase, c, unit) + total;
    }
    case Component::CudaContext:
        return "CUDA context and kernels "
               + formatBytes(in.overheads.cuda_context_bytes, ByteUnit::GiB) + total;
    case Component::Communicator:
        if (bytes == 0)
            return "none (one GPU)";
        return "NCCL communicator buffers " + formatBytes(in.overheads.nccl_bytes, ByteUnit::GiB)
               + " per rank" + total;
    case Component::AllocatorReserve: {
        if (in.overheads.allocator_reserve_fraction)
            return num(*in.overheads.allocator_reserve_fraction * 100.0, 0) + "% of "
                   + formatBytes(b.allocated(), unit)
                   + " allocated (the scenario's allocator_reserve)" + total;
        const StepModel model(in); // outlives the replay it holds
        const StepReplay &r = model.referenceReplay();
        const std::string &conf = model.input().overheads.allocator_conf; // the stack's, if set
        return "PyTorch's caching allocator replayed over the step"
               + (conf.empty() ? std::string() : " (" + conf + ")") + ": reserved peaks at "
               + formatBytes(r.peak_reserved, unit) + " in " + num(static_cast<double>(r.segments))
               + " segments, beyond the allocated peak by block rounding and cached blocks no "
                 "tensor uses then"
               + total;
    }
    }
    return {};
}

std::string explainPhase(const EstimateInput &in,
                         const MemoryEstimate &est,
                         Phase phase,
                         ByteUnit unit)
{
    const std::string alloc = formatBytes(est.phase(phase).allocated(), unit);
    const PeakMoment &m = est.moments[static_cast<std::size_t>(phase)];
    std::string name = phaseLabel(phase);
    if (in.training.mode == Mode::Inference)
        name = m.stage == Stage::Decode ? "Inference" : "Inference (prefill)";
    std::string s = name + " peaks " + whereIn(m) + ": " + alloc + " allocated";
    std::string biggest;
    Bytes most = 0;
    for (Component c : {Component::Activations,
                        Component::Logits,
                        Component::Temporaries,
                        Component::KvCache,
                        Component::Gradients}) {
        if (est.phase(phase)[c] > most) {
            most = est.phase(phase)[c];
            biggest = componentLabel(c);
        }
    }
    if (!biggest.empty())
        s += "; besides the model's states, mostly " + biggest + " (" + formatBytes(most, unit)
             + ")";
    return s + ".";
}

} // namespace membudget
