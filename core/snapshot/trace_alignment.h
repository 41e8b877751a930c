// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Placing a recorded trace over the estimated step. The two have different numbers of events (a
// real program makes many small allocations MemBudget does not model), so the trace is stretched
// piece by piece between anchors, each a trace event and the timeline position it is drawn at:
//   Phases  the start of each phase found in the trace (trace_phases.h) at the start of the same
//           stage in the estimate, and the trace's end at the end of its last phase there;
//   Peak    the trace's start at the step's start, its peak of allocated bytes at the estimate's
//           peak, its end at the step's end;
//   Stretch the whole trace over the whole step.
// Between anchors positions are linear in the trace's event index.

#include "model/timeline_series.h"
#include "snapshot/measured_timeline.h"
#include "snapshot/trace_phases.h"

#include <optional>
#include <vector>

namespace membudget::snapshot {

enum class AlignMethod { Phases, Peak, Stretch };
const char *alignMethodKey(AlignMethod method); // "phases", "peak", "stretch"

struct AlignmentAnchor
{
    double event = 0;    // trace event index (0: before the first event)
    double position = 0; // timeline position
};

struct TraceAlignment
{
    AlignMethod method = AlignMethod::Stretch;
    std::vector<AlignmentAnchor> anchors; // both coordinates strictly increasing; >= 2 when usable

    bool usable() const { return anchors.size() >= 2; }
    // The timeline position of trace point `event` (clamped to the anchors' range).
    double position(double event) const;
    // The trace event drawn at timeline `position` (nothing outside the anchors' range).
    std::optional<double> event(double position) const;
};

// Trace points: point 0 is before the first event, point i + 1 after event i (as the timeline's
// positions), so a trace of n events has n + 1 points. Phases falls back to Peak when the trace has
// no phases that match the estimate's stages (TraceAlignment::method says which was used).
TraceAlignment alignTrace(AlignMethod method,
                          const TracePhases &phases,
                          const MeasuredTimeline &measured,
                          const TimelineSeries &series);

} // namespace membudget::snapshot
