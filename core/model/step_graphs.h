// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/model_architecture.h"
#include "model/op_graph.h"
#include "model/parameter_layout.h"
#include "model/tensor_parallel_plan.h"
#include "model/training_options.h"

#include <cstdint>

namespace membudget {

// The op graphs of one step: the embedding, a decoder layer (all alike), the first layer when it
// differs (its input needs no gradient when the embedding is frozen), and the head with the loss.
// When full checkpointing wraps only every N-th layer (checkpoint_every > 1), `body` is a layer
// that keeps its activations and `checkpointed` one that recomputes them.
struct StepGraphs
{
    OpGraph embed, first, body, checkpointed, head;
    std::int64_t checkpoint_every = 1; // > 1: layers N-1, 2N-1, ... are `checkpointed`
    bool first_differs = false;
    bool train = true;
};

// The architecture as a run applies it: inference runs the model in eval mode (transformers'
// from_pretrained returns it so, and generate() needs no autograd), where nn.Dropout and
// F.dropout(..., training=self.training) return their input: no dropped copy, no mask, no traffic
// (torch/nn/functional.py dropout).
ModelArchitecture architectureAsRun(const ModelArchitecture &arch, const TrainingConfig &training);

StepGraphs stepGraphs(const ModelArchitecture &arch,
                      const TrainingConfig &training,
                      const ParameterLayout &layout,
                      TensorParallelPlan tensorParallel);

} // namespace membudget
