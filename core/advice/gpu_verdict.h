// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "allocator/caching_allocator_model.h"
#include "base/byte_format.h"
#include "model/step_model.h"

#include <optional>
#include <string>

namespace membudget {

enum class FitVerdict { Fits, Tight, DoesNotFit };
const char *verdictKey(FitVerdict v);   // "fits" | "tight" | "does_not_fit"
const char *verdictLabel(FitVerdict v); // "fits" | "tight" | "does not fit"

// What the device will show (nvidia-smi) at the peak, at the low and high ends of what is not
// known from the scenario, and as expected:
//  low       the allocated peak as if the allocator wasted nothing (expandable segments come close),
//            the CUDA context of lazy module loading, NCCL's smallest buffers;
//  expected  the replayed caching allocator and the scenario's overheads;
//  high      the same allocator reserving 1.5% more (how far measured runs reserved beyond the
//            replay), a context of eager module loading plus cuBLAS/cuDNN workspaces and NCCL
//            buffers as large as measured with two ranks.
// Overheads the scenario sets (calibrated from a run) are taken as known.
struct MemoryBand
{
    Bytes low = 0;
    Bytes expected = 0;
    Bytes high = 0;
};

struct GpuVerdict
{
    FitVerdict verdict = FitVerdict::Fits;
    bool fits = true; // the expected case runs: PyTorch's allocator serves every request
    MemoryBand band;
    Bytes capacity = 0;
    std::string reason;                    // why tight, or why not, in a sentence
    bool expandable_segments_help = false; // tight or out of memory as configured, fits with them
    std::optional<OutOfMemoryReport> oom;  // the expected case's failed allocation
    PeakMoment oom_at;
};

MemoryBand memoryBand(const StepModel &model, const MemoryEstimate &estimate);
// The same from the scenario's input (no replay, a few additions: the GUI's slider path).
MemoryBand memoryBand(const EstimateInput &input, const MemoryEstimate &estimate);

// The verdict for one GPU of `gpuMemory` bytes at the estimate's shape (model.input()'s). Replays
// the step against the capacity only when the band straddles it (release-and-retry decides then).
// The reason's sizes are in `unit`.
GpuVerdict gpuVerdict(const StepModel &model,
                      const MemoryEstimate &estimate,
                      Bytes gpuMemory,
                      ByteUnit unit = ByteUnit::GiB);

// The same for a scenario's input at its own shape (builds the step model once).
GpuVerdict gpuVerdict(const EstimateInput &input, Bytes gpuMemory, ByteUnit unit = ByteUnit::GiB);

// Whether the verdict for a GPU of `gpuMemory` bytes is Fits, i.e. the band's high end is within
// it (gpuVerdict replays only past that). Decides without the step's replay when even the
// allocated peak plus the high overheads is over; otherwise `estimate` receives model.estimate().
bool fitsAtTheHighEnd(const StepModel &model, Bytes gpuMemory, MemoryEstimate &estimate);

// Whether the expected case runs on a GPU of `gpuMemory` bytes at shape (b, s): one replay of the
// step against the capacity (the fits oracle of the solvers).
bool fitsOn(const StepModel &model, std::int64_t microBatch, std::int64_t sequence, Bytes gpuMemory);

} // namespace membudget
