// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/graph_builder.h"

namespace membudget {

// DTensor's collectives on the sequence dimension (dim 1 of (batch, sequence, hidden)), as
// sequence parallelism and a RowwiseParallel embedding use them. NCCL gathers and scatters along
// dim 0 only, so torch/distributed/_functional_collectives.py reorders through a copy:
//  - all_gather_tensor(gather_dim=1) gathers into a rank-major buffer of the whole tensor, then
//    torch.cat(torch.chunk(buffer, ranks, dim=0), dim=1) makes the sequence-major result: two
//    whole-sequence tensors at once, the buffer freed after the cat;
//  - reduce_scatter_tensor(scatter_dim=1) first makes torch.cat(torch.chunk(x, ranks, dim=1),
//    dim=0), a whole-sequence copy, and reduce-scatters that to the shard.
// Their backward passes (DTensor's Redistribute) run the other collective, with its copy.
// Each is built as two ops that keep nothing, so that the copy lives as long as it does.

// x (a sequence shard) gathered to `whole` elements of the whole sequence.
int allGatherSequence(GraphBuilder &b, int x, SizeExpr whole, const char *name);

// x (the whole sequence's partial sums) reduce-scattered to `shard` elements. The reduce-scatter
// itself is what op-level selective checkpointing saves (torchtitan's save list).
int reduceScatterSequence(GraphBuilder &b, int x, SizeExpr shard, const char *name);

} // namespace membudget
