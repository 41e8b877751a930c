// SPDX-License-Identifier: GPL-3.0-or-later
#include "throughput/context_parallel_work.h"

#include "model/attention_shape.h"

#include <algorithm>

namespace membudget {

namespace {

double contextParallel(const EstimateInput &in)
{
    return static_cast<double>(std::max<std::int64_t>(1, in.parallelism.context_parallel));
}

// Kernels one ring round adds to a layer (torch/distributed/tensor/experimental/_attention.py):
// forward, the cat of k and v, the round's SDPA, and _SDPAMerger's casts, sigmoid, logsigmoid,
// differences and partial-chunk cats; backward, the round's SDPA backward, the accumulating adds,
// partial updates and the dk/dv cat sent on.
constexpr double kForwardOpsPerRound = 12;
constexpr double kBackwardOpsPerRound = 10;
// Bytes those kernels move per element of this GPU's queries (q) and of its keys and values (kv),
// per round, from the same source: forward, the round's output cast to fp32 (2 + 4), the
// difference, the sigmoid-weighted product and the update (3 x 12) -> 42 per q element; backward,
// adding the round's dq into the fp32 accumulator (2 + 4 + 4) and the partial-chunk cat (8) -> 18
// per q element, and for dk, dv the same add (10), the cat sent on (4 + 4) and the received copy
// read back (4) -> 22 per kv element.
constexpr double kForwardMergeBytesPerQ = 42;
constexpr double kBackwardBytesPerQ = 18;
constexpr double kBackwardBytesPerKv = 22;

// Elements of the whole sequence's queries, and of its keys and values as SDPA gets them, per
// micro-batch and layer on one tensor-parallel rank.
double queryElements(const EstimateInput &in)
{
    const TrainingConfig &t = in.training;
    const double tp = static_cast<double>(std::max<std::int64_t>(1, in.parallelism.tensor_parallel));
    return static_cast<double>(t.micro_batch_size) * static_cast<double>(t.sequence_length)
           * static_cast<double>(in.arch.attention_heads) / tp
           * static_cast<double>(in.arch.head_dim);
}

// Bytes per element of the keys and values in flight: 16-bit but in fp32 training.
double elementBytes(const EstimateInput &in)
{
    return in.training.precision == Precision::Fp32 ? 4.0 : 2.0;
}

// Elements of the whole sequence's keys and values as SDPA gets them (grouped, or repeated to
// every query head), per micro-batch and layer on one tensor-parallel rank.
double keyValueElements(const EstimateInput &in)
{
    const TrainingConfig &t = in.training;
    const ModelArchitecture &a = in.arch;
    const double tp = static_cast<double>(std::max<std::int64_t>(1, in.parallelism.tensor_parallel));
    const bool llama = isLlamaStyle(a);
    const double heads = llama && sdpaRepeatsKv(t) ? static_cast<double>(a.attention_heads)
                                                   : static_cast<double>(a.kv_heads);
    const double tokens = static_cast<double>(t.micro_batch_size)
                          * static_cast<double>(t.sequence_length);
    return tokens * 2 * std::max(1.0, heads / tp) * static_cast<double>(a.head_dim);
}

} // namespace

double tokensPerGpu(const EstimateInput &in)
{
    return static_cast<double>(in.training.micro_batch_size)
           * static_cast<double>(in.training.sequence_length) / contextParallel(in);
}

MicroBatchWork contextParallelShare(const MicroBatchWork &work,
                                    const EstimateInput &in,
                                    const DeviceModel &device)
{
    const double cp = contextParallel(in);
    if (cp <= 1)
        return work;
    MicroBatchWork out = work;
    const double L = static_cast<double>(std::max<std::int64_t>(1, in.arch.layers));
    for (WorkTally *w : {&out.forward, &out.backward, &out.recompute}) {
        const double ops = w->host_ops;
        *w *= 1 / cp;
        w->host_ops = ops; // every GPU launches every kernel
    }
    const double recomputed = static_cast<double>(checkpointedLayers(in.training, in.arch.layers));
    out.forward.host_ops += L * (cp - 1) * kForwardOpsPerRound;
    out.backward.host_ops += L * (cp - 1) * kBackwardOpsPerRound;
    if (out.recompute.host_ops > 0)
        out.recompute.host_ops += recomputed * (cp - 1) * kForwardOpsPerRound;
    // This GPU's share of the queries, keys and values, moved once per round.
    const double q = queryElements(in) / cp;
    const double kv = keyValueElements(in) / cp;
    const double merge = device.memorySeconds((cp - 1) * kForwardMergeBytesPerQ * q);
    out.forward.elementwise += L * merge;
    out.backward.elementwise += L
                                * device.memorySeconds(
                                    cp * (kBackwardBytesPerQ * q + kBackwardBytesPerKv * kv));
    if (out.recompute.host_ops > 0)
        out.recompute.elementwise += recomputed * merge;
    out.model_flops /= cp;
    return out;
}

// Forward: one all-gather of every GPU's keys and values, waited for after the first round (the
// local causal block, about 1/cp of the GPU's attention). Backward: the same all-gather, and the
// fp32 dk/dv passed round the ring, each round hidden behind the next round's kernel.
RingTraffic ringAttentionTraffic(const EstimateInput &in,
                                 const MicroBatchWork &work,
                                 double bandwidth)
{
    RingTraffic r;
    const double cp = contextParallel(in);
    if (cp <= 1 || bandwidth <= 0)
        return r;
    const double L = static_cast<double>(std::max<std::int64_t>(1, in.arch.layers));
    const double kv = keyValueElements(in) * elementBytes(in);
    const double share = (cp - 1) / cp;
    const double gather = share * kv / bandwidth;
    const double grads = share * kv * (4.0 / elementBytes(in)) / bandwidth; // fp32 dk, dv
    const double forwardAttention = work.forward.attention / L;
    const double backwardAttention = work.backward.attention / L;
    const double exposedForward = std::max(0.0, gather - forwardAttention / cp);
    const double exposedBackward = std::max(0.0, gather - backwardAttention / cp)
                                   + std::max(0.0, grads - backwardAttention) + grads / cp;
    const double recomputed = work.recompute.host_ops > 0 ? static_cast<double>(
                                  checkpointedLayers(in.training, in.arch.layers))
                                                          : 0.0;
    r.total = L * (2 * gather + grads) + recomputed * gather;
    r.exposed = L * (exposedForward + exposedBackward) + recomputed * exposedForward;
    return r;
}

} // namespace membudget
