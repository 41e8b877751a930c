// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "allocator/allocator_settings.h"
#include "allocator/caching_allocator_model.h"
#include "model/memory_estimate.h"
#include "model/step_timeline.h"
#include "model/timeline_expand.h"

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

namespace membudget {

// What PyTorch's caching allocator holds over one step: the timeline's resident tensors, then the
// step, replayed through the allocator model (one steady-state step suffices: replaying a second
// one reuses the cached blocks and never raised the peak in the bundled models).
struct StepReplay
{
    bool fits = true; // no allocation failed at `settings.capacity`
    std::optional<OutOfMemoryReport> oom;
    PeakMoment oom_at;                         // the block (and layer) of the failed allocation
    std::array<Bytes, kPhaseCount> reserved{}; // most reserved while each phase runs
    Bytes peak_reserved = 0;
    Bytes peak_allocated = 0;        // rounded block sizes
    Bytes fragmentation_at_peak = 0; // reserved - allocated when reserved peaked
    std::int64_t segments = 0;       // the most segments held at once
    std::int64_t cache_flushes = 0;  // releases of the cache to retry a failed cudaMalloc
};

// The allocator after the resident tensors (weights, states, buffers), which do not depend on the
// micro-batch shape: made once, copied for each replay.
struct ResidentAllocatorState
{
    CachingAllocatorModel model;
    std::vector<BlockHandle> live; // by ExpandedEvent::instance (dense: timeline_expand.h)
};

ResidentAllocatorState residentState(const StepTimeline &timeline,
                                     const AllocatorSettings &settings);

// The allocator after the first step of a timeline whose optimizer makes its states in that step
// (StepTimeline::lazy_optimizer_states): the loaded weights, then the step's `stepEvents` with the
// states allocated where the optimizer step begins. Its forward and backward leave cached blocks
// that the states then split, the layout every later step starts from: on an H100 this decided
// whether an 8B full fine-tune near 80 GB ran (docs/accuracy.md, section 7). Then what the step
// freed of the resident tensors is made again, as the next step starts (the gradients of earlier
// micro-batches). `r` gets its peaks, or where it failed.
ResidentAllocatorState firstStep(const StepTimeline &timeline,
                                 const std::vector<ExpandedEvent> &stepEvents,
                                 const AllocatorSettings &settings,
                                 StepReplay &r);

// Replays `timeline` for micro-batch shape (tokens, seq) with `settings` (its capacity: the GPU's
// memory less what lives outside PyTorch's allocator; unlimited to learn the peaks only), from
// `resident` when given (made with the same settings but for the capacity).
StepReplay replayStep(const StepTimeline &timeline,
                      double tokens,
                      double seq,
                      const AllocatorSettings &settings,
                      const ResidentAllocatorState *resident = nullptr);

// Where the step whose peaks count begins: the resident state, or for a timeline whose optimizer
// makes its states in the first step, the state after that step (`first`: its peaks, or where it
// failed). Made once for a shape and reused for replays against several capacities (replayFrom).
struct StepStartState
{
    ResidentAllocatorState state;
    StepReplay first; // empty (fits, no peaks) when the step starts from the resident state
};

StepStartState stepStart(const StepTimeline &timeline,
                         const std::vector<ExpandedEvent> &stepEvents,
                         const ResidentAllocatorState &resident);

// The step's `stepEvents` replayed from `start` against `capacity`, the first step's peaks kept;
// the bytes reserved after each event into `reservedAfter` when given. From a start made without a
// limit it equals a full replay against `capacity` whenever the start's reserved peak is within it
// (no request before the step can have failed or released the cache).
StepReplay replayFrom(const StepTimeline &timeline,
                      const std::vector<ExpandedEvent> &stepEvents,
                      const StepStartState &start,
                      Bytes capacity,
                      std::vector<Bytes> *reservedAfter = nullptr);

// The same for events already expanded (expandTimeline from residentBlocks(), for one shape), from
// `resident` with the capacity it has, recording the bytes reserved after each event played into
// `reservedAfter` (shorter than the events when an allocation fails): the reserved curve of the
// timeline view.
StepReplay replayStepEvents(const StepTimeline &timeline,
                            const std::vector<ExpandedEvent> &stepEvents,
                            const ResidentAllocatorState &resident,
                            std::vector<Bytes> &reservedAfter);

} // namespace membudget
