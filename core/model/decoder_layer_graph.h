// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/model_architecture.h"
#include "model/op_graph.h"
#include "model/parameter_layout.h"
#include "model/tensor_parallel_plan.h"
#include "model/training_options.h"

#include <cstdint>

namespace membudget {

// One decoder layer's forward as the ops Hugging Face transformers (+ PEFT for LoRA) runs on
// PyTorch 2.x, with what each op keeps for backward: the single source from which MemBudget takes
// both the activations a layer saves and the order of its allocations in a step.
// `inputRequiresGrad` is false for the first layer of a model whose embedding is frozen (LoRA
// without checkpointing). Widths are per tensor-parallel rank (Megatron layout).
OpGraph decoderLayerGraph(const ModelArchitecture &arch,
                          const TrainingConfig &training,
                          const ParameterLayout &layout,
                          TensorParallelPlan tensorParallel,
                          bool inputRequiresGrad);

} // namespace membudget
