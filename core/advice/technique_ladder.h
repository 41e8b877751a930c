// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/memory_estimator.h"

#include <string>
#include <vector>

namespace membudget {

struct LadderStep
{
    std::string label;  // "+ bf16", "+ flash attention", ...
    std::string detail; // what changed, in a sentence
    EstimateInput input;
};

// The technique ladder: starting from the naive configuration of the same model, batch and sequence
// (fp32, eager attention, AdamW, full fine-tuning, no checkpointing), each step adds one technique:
// bf16, gradient checkpointing, flash attention, 8-bit AdamW, LoRA, QLoRA, chunked loss. The last step is the
// cumulative result. Steps that do not apply (inference) are left out.
std::vector<LadderStep> techniqueLadder(const EstimateInput &input);

} // namespace membudget
