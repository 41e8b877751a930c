// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/model_architecture.h"
#include "model/op_graph.h"
#include "model/parameter_layout.h"
#include "model/training_options.h"

#include <cstdint>

namespace membudget {

// The op graphs of one step: the embedding, a decoder layer (all alike), the first layer when it
// differs (its input needs no gradient when the embedding is frozen), and the head with the loss.
struct StepGraphs
{
    OpGraph embed, first, body, head;
    bool first_differs = false;
    bool train = true;
};

StepGraphs stepGraphs(const ModelArchitecture &arch,
                      const TrainingConfig &training,
                      const ParameterLayout &layout,
                      TensorParallelPlan tensorParallel);

} // namespace membudget
