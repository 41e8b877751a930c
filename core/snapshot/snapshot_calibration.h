// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Calibrate: what a recorded run says about the machine that MemBudget cannot know, taken into a
// scenario's `overheads`, with the reason for every key taken or left alone:
//   allocator_conf   the PYTORCH_CUDA_ALLOC_CONF the run had (the snapshot's allocator_settings);
//   extra_resident   bytes live when the step began beyond the resident tensors the scenario
//                    models (estimate_comparison.h), when the trace shows a step's start;
//   allocator_reserve the run's reserved-to-allocated ratio at its peak, when it differs by more
//                    than 2 points from the allocator model's (replaying the step with the
//                    settings and extra bytes just taken) and the trace holds the estimate's peak
//                    phase: an explicit fraction then replaces the model; within 2 points an
//                    explicit fraction is removed;
//   cuda_context, nccl are not in a snapshot (it records PyTorch's allocator only) and are never
//                    changed.

#include "base/byte_format.h"
#include "model/memory_estimator.h"
#include "snapshot/estimate_comparison.h"
#include "snapshot/memory_snapshot.h"

#include <string>
#include <vector>

namespace membudget::snapshot {

struct CalibrationItem
{
    std::string key;    // "allocator_conf" (under overheads)
    bool taken = false; // the value changes
    std::string before; // as the scenario file writes it ("" when unset)
    std::string after;
    std::string why; // one sentence
};

struct SnapshotCalibration
{
    OverheadConfig overheads;           // the scenario's, with what was taken
    std::vector<CalibrationItem> items; // every key considered, in the order above

    bool changesAnything() const;
};

// `input`: the scenario resolved (its overheads are the ones calibrated); `comparison` of its
// estimate with the snapshot.
SnapshotCalibration calibrateOverheads(const EstimateInput &input,
                                       const MemorySnapshot &snapshot,
                                       const EstimateComparison &comparison,
                                       ByteUnit unit);

} // namespace membudget::snapshot
