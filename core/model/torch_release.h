// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/stack_profile.h"

namespace membudget {

// The PyTorch release a scenario runs on: plain-torch's `version`, another stack's `torch`, or
// the newest MemBudget knows when the scenario does not say.
LibraryVersion torchRelease(const StackConfig &stack);

// What torch.optim.AdamW allocates beyond its states when `foreach` is left at its default
// (torch/optim/adamw.py of each release).
enum class AdamWWorkspace {
    PerTensor, // < 2.0: foreach defaults to False; _single_tensor_adamw makes sqrt(exp_avg_sq) and
               // its quotient one tensor at a time (two tensor-sized temporaries at once)
    TwoLists,  // 2.0: _multi_tensor_adamw keeps the list of square roots and builds the
               // denominators as a second list (denom = torch._foreach_add(exp_avg_sq_sqrt, eps))
    OneList, // >= 2.1: eps is added in place, one state-sized list (pytorch PR #104898, July 2023)
};

AdamWWorkspace adamWWorkspace(const LibraryVersion &torch);

// The ranges of releases that differ in what MemBudget models, newest first, each with the version
// that stands for it ("": the newest known): 2.11 and later (SDPA runs cuDNN's attention on
// Hopper and B200: throughput/attention_kernel.h), 2.10 (torch.distributed.pipelining keeps no outputs or
// input gradients past a step), 2.8 and 2.9 (the Trainer's fused AdamW default; the pipeline's
// last stage keeps its logits), 2.5 to 2.7, 2.1 to 2.4 (FSDP2 makes its reduce-scatter input on
// the reduce-scatter stream), 2.0, 1.13 and older.
inline constexpr const char *kTorchRangeVersions[]
    = {"", "2.10", "2.9", "2.7", "2.4", "2.0", "1.13"};
int torchReleaseRange(const StackConfig &stack);

// The version text the scenario gives for PyTorch ("" when it does not say).
const std::string &torchReleaseText(const StackConfig &stack);

// Sets it (plain-torch's `version`, another stack's `torch`). An optimizer left at the stack's
// default follows the release (the Trainer's fused default needs torch 2.8).
void setTorchRelease(TrainingConfig &training,
                     ParallelismConfig &parallelism,
                     const std::string &text);

// Picks another stack with its defaults, keeping the PyTorch release the scenario gave.
void switchStack(TrainingConfig &training, ParallelismConfig &parallelism, Stack stack);

} // namespace membudget
