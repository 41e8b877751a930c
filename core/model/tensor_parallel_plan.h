// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <algorithm>
#include <cstdint>

namespace membudget {

// How a layer is split over its tensor-parallel group (Megatron layout: heads, MLP width and the
// vocabulary are divided by `size`). With sequence parallelism (Korthikanti et al. 2022,
// arXiv:2205.05198, section 4.2.2) the regions between the split matmuls (norms, dropout, residual
// adds, the hidden states between layers) hold 1/size of the sequence each: an all-gather
// enters each attention / MLP block, a reduce-scatter leaves it.
// `loss_parallel`: the loss runs on each rank's share of the vocabulary (Megatron's
// vocab-parallel cross-entropy, torch.distributed.tensor.parallel.loss_parallel); otherwise lm_head's
// output is all-gathered to the whole vocabulary on every rank first.
// `context_parallel`: GPUs sharing each sequence (context_parallel.h); the layer's sizes are
// built for the whole sequence, and its ring attention adds buffers.
struct TensorParallelPlan
{
    std::int64_t size = 1;
    bool sequence_parallel = false;
    bool loss_parallel = true;
    std::int64_t context_parallel = 1;

    TensorParallelPlan(std::int64_t ranks = 1,
                       bool sequenceParallel = false,
                       bool lossParallel = true)
        : size(std::max<std::int64_t>(1, ranks))
        , sequence_parallel(sequenceParallel)
        , loss_parallel(lossParallel)
    {}

    double ranks() const { return static_cast<double>(size); }
    // The share of the sequence a rank holds outside the split blocks.
    double sequenceShare() const { return sequence_parallel && size > 1 ? 1.0 / ranks() : 1.0; }
    bool shardsSequence() const { return sequenceShare() < 1.0; }
};

} // namespace membudget
