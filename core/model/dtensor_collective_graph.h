// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/graph_builder.h"

namespace membudget {

// DTensor's collectives on a dimension other than the first: the sequence (dim 1 of (batch,
// sequence, hidden)) under sequence parallelism and behind a RowwiseParallel embedding, the
// vocabulary (the last dim) where lm_head's output is gathered (transformers' "colwise_rep").
// NCCL gathers and scatters along dim 0 only, so torch/distributed/_functional_collectives.py
// reorders through a copy:
//  - all_gather_tensor(gather_dim=d) gathers into a rank-major buffer of the whole tensor, then
//    torch.cat(torch.chunk(buffer, ranks, dim=0), dim=d) makes the result: two whole tensors at
//    once, the buffer freed after the cat;
//  - reduce_scatter_tensor(scatter_dim=d) first makes torch.cat(torch.chunk(x, ranks, dim=d),
//    dim=0), a whole copy, and reduce-scatters that to the shard.
// Their backward passes (DTensor's Redistribute) run the other collective, with its copy (a
// gather's Partial gradient) or take a local chunk (a Replicate one).
// Each is built as two ops that keep nothing, so that the copy lives as long as it does.

// x (a shard) gathered to `whole` elements.
int allGatherWithCopy(GraphBuilder &b, int x, SizeExpr whole, const char *name);

// x gathered to `whole` elements whose gradient comes back replicated (lm_head's output gathered
// to a Replicate placement): the backward takes its shard of it (_redistribute.py,
// Shard._replicate_to_shard: a chunk, cloned), so the rank-major buffer gets no gradient.
int allGatherToReplicate(GraphBuilder &b, int x, SizeExpr whole, const char *name);

// x (the whole sequence's partial sums) reduce-scattered to `shard` elements. The reduce-scatter
// itself is what op-level selective checkpointing saves (torchtitan's save list).
int reduceScatterSequence(GraphBuilder &b, int x, SizeExpr shard, const char *name);

} // namespace membudget
