// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/memory_estimate.h"
#include "model/model_architecture.h"
#include "model/training_options.h"

namespace membudget {

// Everything the estimator needs, with the model fully resolved (no preset look-ups left).
struct EstimateInput
{
    ModelArchitecture arch;
    TrainingConfig training;
    ParallelismConfig parallelism;
    OverheadConfig overheads;
    // With pipeline parallelism, the stage this GPU runs (pipeline_parallel.h); -1: the stage that
    // allocates the most.
    std::int32_t pipeline_stage = -1;
};

// Per-GPU memory of one training step (or of inference), phase by phase. Pure and allocation-free:
// safe to call on every slider move. Invalid inputs (zero layers, ...) give zeros, never a crash;
// validate with validateInput() first to tell the user why.
MemoryEstimate estimateMemory(const EstimateInput &input);

// Checks the combination for what cannot work (QLoRA without a quantization, tensor parallel not
// dividing the GPUs, parameter offload without ZeRO-3/FSDP...). Returns an empty string when fine,
// else one sentence saying what is wrong and what is expected. `key`, when given, receives the
// scenario key the problem is about ("training.quantization"), for error positions.
std::string validateInput(const EstimateInput &input, std::string *key = nullptr);

} // namespace membudget
