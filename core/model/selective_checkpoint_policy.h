// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/op_graph.h"

namespace membudget {

// torchtitan's op-level selective activation checkpointing (selective_ac_option "op",
// torchtitan/distributed/activation_checkpoint.py, _custom_policy, 2024-2025): each decoder layer
// runs inside torch.utils.checkpoint with create_selective_checkpoint_contexts; the policy numbers
// the layer's aten.mm calls from 1 in forward order and MUST_SAVEs the odd ones, and saves the
// outputs of SDPA's flash / memory-efficient / cuDNN kernels and of reduce_scatter; every other op
// is recomputed in backward. A saved output is kept from forward until the recomputation reaches
// its op, which hands it back instead of running (torch/utils/checkpoint.py, the SAC caching
// modes). addmm (a linear with a bias) and bmm (eager attention) are not on the list.
inline bool selectiveKeepsMatmul(int ordinal)
{
    return ordinal % 2 == 1;
}

// Marks the ops of `region` whose outputs the policy keeps (GraphOp::cached).
void markSelectiveSaves(OpGraph &graph, const RecomputeRegion &region);

} // namespace membudget
