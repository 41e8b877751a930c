// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/context_parallel.h"

namespace membudget {

std::string validateContextParallel(const TrainingConfig &t,
                                    const ParallelismConfig &p,
                                    std::string *key)
{
    const std::int64_t cp = p.context_parallel;
    auto problem = [key](const char *where, std::string message) {
        if (key)
            *key = where;
        return message;
    };
    if (cp < 1)
        return problem("parallelism.context_parallel", "context_parallel must be at least 1");
    if (p.gpus
            % (std::max<std::int64_t>(1, p.tensor_parallel) * cp
               * std::max<std::int64_t>(1, p.pipeline_parallel))
        != 0)
        return problem("parallelism.context_parallel",
                       "gpus must be a multiple of tensor_parallel x context_parallel x "
                       "pipeline_parallel");
    if (cp == 1)
        return {};
    if (t.mode != Mode::Train)
        return problem("parallelism.context_parallel",
                       "context parallelism is modelled for training steps only");
    // _sdpa_handler dispatches only SDPA's flash, memory-efficient and cuDNN kernels; eager
    // attention and the FlashAttention-2 library are not sharded.
    if (t.attention != Attention::Sdpa)
        return problem("training.attention",
                       "context parallelism rings SDPA's kernels: it needs attention sdpa");
    // Load balancing requires is_causal, and the ring kernels take no attn_bias.
    if (t.batch_padding != BatchPadding::None)
        return problem("training.batch_padding",
                       "context parallelism runs causal attention without a mask: it needs "
                       "batch_padding none");
    // _context_parallel_buffers splits the sequence into 2 x cp equal chunks.
    if (t.sequence_length % (2 * cp) != 0)
        return problem("training.sequence_length",
                       "with context parallelism the sequence length must be a multiple of 2 x "
                       "context_parallel ("
                           + std::to_string(2 * cp) + ")");
    return {};
}

RingAttentionScratch ringAttentionScratch(double q, double kv, double bytes, double cp)
{
    RingAttentionScratch s;
    // Per token of the whole sequence; the timeline divides per-token sizes by cp afterwards, so a
    // buffer of the whole sequence carries a factor cp here.
    const double local = kv * bytes;
    s.keys_values = SizeExpr::perToken(cp * local + 2 * local);
    s.merge = SizeExpr::perToken(q * bytes + 3 * 4 * q);
    s.backward = SizeExpr::perToken(cp * local + local + (q + kv) * (4 + bytes) + 2 * 4 * kv);
    return s;
}

void shardSequence(StepTimeline &timeline, double cp)
{
    if (cp <= 1)
        return;
    for (TimelineTensor &t : timeline.tensors) {
        t.size.per_token /= cp;
        t.size.per_token_seq /= cp;
        t.size.per_position /= cp;
    }
}

} // namespace membudget
