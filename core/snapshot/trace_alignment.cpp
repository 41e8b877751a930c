// SPDX-License-Identifier: GPL-3.0-or-later
#include "snapshot/trace_alignment.h"

#include <algorithm>

namespace membudget::snapshot {

namespace {

// Where the estimate's part that matches a trace stage starts and ends: forward is the step's
// first stage (prefill for inference), the loss its loss stage, backward everything of the
// backward phase (the loss's backward included: autograd runs it first), the optimizer step its
// phase.
bool matches(const TimelineStageSpan &s, Stage traceStage)
{
    switch (traceStage) {
    case Stage::Forward:
        return s.stage == Stage::Forward || s.stage == Stage::Prefill;
    case Stage::Loss:
        return s.stage == Stage::Loss && s.phase == Phase::Forward;
    case Stage::Backward:
        return s.phase == Phase::Backward;
    case Stage::OptimizerStep:
        return s.phase == Phase::OptimizerStep;
    default:
        return false;
    }
}

void add(std::vector<AlignmentAnchor> &anchors, double event, double position)
{
    if (anchors.empty() || (event > anchors.back().event && position > anchors.back().position))
        anchors.push_back({event, position});
}

std::vector<AlignmentAnchor> byPhases(const TracePhases &phases, const TimelineSeries &series)
{
    std::vector<AlignmentAnchor> anchors;
    double lastEnd = -1;
    double tailEvent = 0;
    for (const TracePhaseSpan &p : phases.spans) {
        const auto first = std::find_if(series.stages.begin(),
                                        series.stages.end(),
                                        [&](const TimelineStageSpan &s) {
                                            return matches(s, p.stage);
                                        });
        if (first == series.stages.end())
            continue;
        add(anchors, static_cast<double>(p.first), static_cast<double>(first->first));
        for (const TimelineStageSpan &s : series.stages)
            if (matches(s, p.stage))
                lastEnd = static_cast<double>(s.end);
        tailEvent = static_cast<double>(p.end);
    }
    if (lastEnd >= 0)
        add(anchors, tailEvent, lastEnd);
    return anchors;
}

std::vector<AlignmentAnchor> byPeak(const MeasuredTimeline &m, const TimelineSeries &series)
{
    std::vector<AlignmentAnchor> anchors;
    const double end = static_cast<double>(series.positions() - 1);
    add(anchors, 0, 0);
    add(anchors, static_cast<double>(m.peak_allocated_event + 1), static_cast<double>(series.peak));
    add(anchors, static_cast<double>(m.events), end);
    if (anchors.size() < 3) // a peak at either end: stretch instead
        return {{0, 0}, {static_cast<double>(m.events), end}};
    return anchors;
}

} // namespace

const char *alignMethodKey(AlignMethod method)
{
    switch (method) {
    case AlignMethod::Phases:
        return "phases";
    case AlignMethod::Peak:
        return "peak";
    case AlignMethod::Stretch:
        return "stretch";
    }
    return "stretch";
}

double TraceAlignment::position(double event) const
{
    if (anchors.empty())
        return 0;
    if (event <= anchors.front().event)
        return anchors.front().position;
    for (std::size_t i = 1; i < anchors.size(); ++i) {
        const AlignmentAnchor &a = anchors[i - 1], &b = anchors[i];
        if (event <= b.event)
            return a.position + (event - a.event) * (b.position - a.position) / (b.event - a.event);
    }
    return anchors.back().position;
}

std::optional<double> TraceAlignment::event(double position) const
{
    if (!usable() || position < anchors.front().position || position > anchors.back().position)
        return std::nullopt;
    for (std::size_t i = 1; i < anchors.size(); ++i) {
        const AlignmentAnchor &a = anchors[i - 1], &b = anchors[i];
        if (position <= b.position)
            return a.event
                   + (position - a.position) * (b.event - a.event) / (b.position - a.position);
    }
    return anchors.back().event;
}

TraceAlignment alignTrace(AlignMethod method,
                          const TracePhases &phases,
                          const MeasuredTimeline &measured,
                          const TimelineSeries &series)
{
    TraceAlignment out;
    if (series.positions() < 2 || measured.events == 0)
        return out;
    if (method == AlignMethod::Phases) {
        out.anchors = byPhases(phases, series);
        if (out.usable()) {
            out.method = AlignMethod::Phases;
            return out;
        }
        method = AlignMethod::Peak;
    }
    out.method = method;
    const double end = static_cast<double>(series.positions() - 1);
    out.anchors = method == AlignMethod::Peak
                      ? byPeak(measured, series)
                      : std::vector<AlignmentAnchor>{{0, 0},
                                                     {static_cast<double>(measured.events), end}};
    if (out.anchors.size() == 2 && method == AlignMethod::Peak)
        out.method = AlignMethod::Stretch;
    return out;
}

} // namespace membudget::snapshot
