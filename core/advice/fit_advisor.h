// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

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
    double slowdown = 1.0;            // expected step time relative to the original (1.0 = same)
    Bytes device_total = 0;
    Bytes headroom = 0; // capacity - device_total
};

// Searches combinations of techniques (bf16, flash attention, checkpointing, 8-bit or paged
// optimizers, smaller micro-batch with more accumulation, LoRA, QLoRA, CPU offload, sharding when
// several GPUs) and returns those that fit `capacity`, cheapest in speed first, at most `limit`.
// Costs: checkpointing ~1.25x, 8-bit optimizer ~1.0x, flash attention ~0.9x, CPU offload ~3x
// (see docs/memory-model.md for the sources).
std::vector<FitSuggestion> suggestFits(const EstimateInput &input, Bytes capacity, int limit = 8);

} // namespace membudget
