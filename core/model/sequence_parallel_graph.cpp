// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/sequence_parallel_graph.h"

namespace membudget {

int allGatherSequence(GraphBuilder &b, int x, SizeExpr whole, const char *name)
{
    const double bytes = b.elementBytes(x);
    const int rankMajor = b.copy(x, whole, bytes, "all-gather into a rank-major buffer");
    return b.copy(rankMajor, whole, bytes, name); // torch.cat(..., dim=1)
}

int reduceScatterSequence(GraphBuilder &b, int x, SizeExpr shard, const char *name)
{
    const double bytes = b.elementBytes(x);
    const int rankMajor = b.copy(x, b.elements(x), bytes, "rank-major copy for reduce-scatter");
    const int out = b.copy(rankMajor, shard, bytes, name);
    b.lastOp().policy_class = PolicyClass::SavedKernel; // reduce_scatter_tensor
    return out;
}

} // namespace membudget
