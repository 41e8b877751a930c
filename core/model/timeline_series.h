// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// One step's memory as the timeline view draws it: every allocation and free of the step at one
// micro-batch shape, the bytes allocated after each (all components, and per component on demand),
// and the bytes the caching-allocator model reserves after each, from one expansion and one replay.
//
// Positions: position k is the moment after the first k events of the step (position 0: the step
// starts, the resident tensors live); event k happens between positions k and k + 1.

#include "allocator/step_replay.h"
#include "model/memory_estimate.h"
#include "model/timeline_expand.h"

#include <array>
#include <cstdint>
#include <vector>

namespace membudget {

class StepModel;

using ComponentBytes = std::array<Bytes, kAllocatedComponentCount>;

// Consecutive events of one stage: positions [first, end] span it (events first .. end - 1).
struct TimelineStageSpan
{
    Stage stage = Stage::Forward;
    Phase phase = Phase::Forward;
    std::size_t first = 0;
    std::size_t end = 0;
};

struct TimelineSeries
{
    std::int64_t micro_batch = 0;
    std::int64_t sequence = 0;
    std::vector<ExpandedEvent> events; // the step, the resident tensors left out
    ComponentBytes resident{};         // live when the step starts, per component
    std::vector<Bytes> allocated;      // at each position (events.size() + 1 values)
    std::vector<Bytes> reserved;       // at each position, from the allocator model; empty when
                                       // not replayed (ReservedSeries::WhenReplayed)
    std::vector<TimelineStageSpan> stages;
    std::size_t peak = 0; // the first position where allocated is highest
    StepReplay replay;    // the allocator model's replay of the step (unlimited capacity)

    std::size_t positions() const { return allocated.size(); }
    Bytes residentTotal() const;
    // The stage span holding `position` (the span an event belongs to; the last at the end).
    const TimelineStageSpan *stageAt(std::size_t position) const;
};

// Whether a series gets its reserved bytes: Replay always replays the step (the estimate's replay
// where it has run); WhenReplayed leaves them out for a model whose reserve is assumed (a slider
// drag: StepModel(input, assumedReserveRatio)), whose point is to skip that replay.
enum class ReservedSeries { Replay, WhenReplayed };

// The step of `model` at micro-batch `microBatch` and sequence length `sequence`, with reserved
// bytes from replaying it through the caching-allocator model with the scenario's settings (the
// same replay as the estimate's). Empty (no positions) for an invalid model or shape.
TimelineSeries timelineSeries(const StepModel &model,
                              std::int64_t microBatch,
                              std::int64_t sequence,
                              ReservedSeries reserved = ReservedSeries::Replay);

// Bytes live per component at each of `positions` (ascending), in one walk over the events.
std::vector<ComponentBytes> componentsAt(const StepTimeline &timeline,
                                         const TimelineSeries &series,
                                         const std::vector<std::size_t> &positions);

// The moment at `position` for liveAt(): after the event before it, or the start of the step.
PeakMoment momentAt(const StepTimeline &timeline,
                    const TimelineSeries &series,
                    std::size_t position);

} // namespace membudget
