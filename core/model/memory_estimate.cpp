// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/memory_estimate.h"

namespace membudget {

namespace {
const char *const kComponentKeys[kComponentCount] = {"weights",
                                                     "gradients",
                                                     "master_weights",
                                                     "optimizer_states",
                                                     "activations",
                                                     "kv_cache",
                                                     "logits",
                                                     "temporaries",
                                                     "cuda_context",
                                                     "communicator",
                                                     "allocator_reserve"};
const char *const kComponentLabels[kComponentCount] = {"Weights",
                                                       "Gradients",
                                                       "Master weights",
                                                       "Optimizer states",
                                                       "Activations",
                                                       "KV cache",
                                                       "Logits & loss",
                                                       "Temporaries",
                                                       "CUDA context",
                                                       "NCCL buffers",
                                                       "Allocator reserve"};
const char *const kPhaseKeys[kPhaseCount] = {"forward", "backward", "optimizer_step"};
const char *const kPhaseLabels[kPhaseCount] = {"Forward", "Backward", "Optimizer step"};
const char *const kStageKeys[kStageCount]
    = {"resident", "forward", "loss", "backward", "optimizer_step", "prefill", "decode"};
const char *const kStageLabels[kStageCount]
    = {"Resident", "Forward", "Loss", "Backward", "Optimizer step", "Prefill", "Decode"};
} // namespace

const char *componentKey(Component c)
{
    return kComponentKeys[static_cast<int>(c)];
}
const char *componentLabel(Component c)
{
    return kComponentLabels[static_cast<int>(c)];
}
bool componentApplies(Component c, bool training)
{
    switch (c) {
    case Component::Gradients:
    case Component::MasterWeights:
    case Component::OptimizerStates:
        return training;
    case Component::KvCache:
        return !training;
    default:
        return true;
    }
}
const char *phaseKey(Phase p)
{
    return kPhaseKeys[static_cast<int>(p)];
}
const char *phaseLabel(Phase p)
{
    return kPhaseLabels[static_cast<int>(p)];
}

const char *stageKey(Stage s)
{
    return kStageKeys[static_cast<int>(s)];
}
const char *stageLabel(Stage s)
{
    return kStageLabels[static_cast<int>(s)];
}

Bytes Breakdown::allocated() const
{
    Bytes sum = 0;
    for (int i = 0; i < kAllocatedComponentCount; ++i)
        sum = addSat(sum, bytes[static_cast<std::size_t>(i)]);
    return sum;
}

Bytes Breakdown::total() const
{
    Bytes sum = 0;
    for (Bytes b : bytes)
        sum = addSat(sum, b);
    return sum;
}

} // namespace membudget
