// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/selective_checkpoint_policy.h"

namespace membudget {

void markSelectiveSaves(OpGraph &graph, const RecomputeRegion &region)
{
    int matmuls = 0;
    for (int i = region.first_op; i <= region.last_op; ++i) {
        GraphOp &op = graph.ops[static_cast<std::size_t>(i)];
        switch (op.policy_class) {
        case PolicyClass::Matmul:
            op.cached = selectiveKeepsMatmul(++matmuls);
            break;
        case PolicyClass::SavedKernel:
            op.cached = true;
            break;
        case PolicyClass::Other:
            break;
        }
    }
}

} // namespace membudget
