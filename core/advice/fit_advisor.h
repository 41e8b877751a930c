// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/gpu_spec.h"
#include "model/memory_estimator.h"

#include <string>
#include <vector>

namespace membudget {

// One way to make a scenario fit: a set of technique changes, its expected cost in step time and
// the resulting peak.
struct FitSuggestion
{
    std::vector<std::string> changes; // "gradient checkpointing: full", "optimizer: adamw-8bit", ...
    EstimateInput input;              // the scenario with the changes applied
    // Time per token relative to the original (1.0 = same, 2.0 = half the tokens per second),
    // modelled on the GPU (core/throughput; on reference A100 figures when the preset has none).
    double slowdown = 1.0;
    double step_seconds = 0;      // one optimizer step with the changes (its tokens may differ)
    double tokens_per_second = 0; // all GPUs
    Bytes device_total = 0;
    Bytes headroom = 0; // capacity - device_total
};

// Searches combinations of techniques (bf16, flash attention, checkpointing, 8-bit or paged
// optimizers, smaller micro-batch with more accumulation, LoRA, QLoRA, CPU offload, sharding when
// several GPUs) and returns the minimal ones that fit the GPU's memory, fastest first by the
// modelled time per token on that GPU (docs/throughput-model.md), at most `limit`.
std::vector<FitSuggestion> suggestFits(const EstimateInput &input,
                                       const GpuSpec &gpu,
                                       int limit = 8);

} // namespace membudget
