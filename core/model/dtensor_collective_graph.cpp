// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/dtensor_collective_graph.h"

namespace membudget {

int allGatherWithCopy(GraphBuilder &b, int x, SizeExpr whole, const char *name)
{
    const double bytes = b.elementBytes(x);
    const int rankMajor = b.copy(x, whole, bytes, "all-gather into a rank-major buffer");
    return b.copy(rankMajor, whole, bytes, name); // torch.cat(..., dim=d)
}

int allGatherToReplicate(GraphBuilder &b, int x, SizeExpr whole, const char *name)
{
    const double bytes = b.elementBytes(x);
    const int rankMajor = b.copy(x, whole, bytes, "all-gather into a rank-major buffer");
    b.graph().tensors[static_cast<std::size_t>(rankMajor)].differentiable = false;
    const int out = b.copy(x, whole, bytes, name); // its gradient: x's shard of the result's
    b.lastOp().inputs.push_back(rankMajor);        // torch.cat reads the buffer
    return out;
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
