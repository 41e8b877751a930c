// SPDX-License-Identifier: GPL-3.0-or-later
#include "snapshot/estimate_comparison.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace membudget::snapshot {

namespace {

// Allocated or reserved at trace point k (0: before the first event, k: after event k - 1).
Bytes atPoint(const std::vector<Bytes> &afterEvent, Bytes atStart, std::size_t k)
{
    return k == 0 ? atStart : afterEvent[std::min(k, afterEvent.size()) - 1];
}

void measurePhase(const MeasuredTimeline &t, PhaseComparison &p)
{
    Bytes allocated = atPoint(t.allocated, t.allocated_at_start, p.first_event);
    Bytes reserved = atPoint(t.reserved, t.reserved_at_start, p.first_event);
    p.peak_event = static_cast<std::int64_t>(p.first_event) - 1;
    for (std::size_t i = p.first_event; i < p.end_event && i < t.allocated.size(); ++i) {
        if (t.allocated[i] > allocated) {
            allocated = t.allocated[i];
            p.peak_event = static_cast<std::int64_t>(i);
        }
        reserved = std::max(reserved, t.reserved[i]);
    }
    p.allocated.measured = allocated;
    p.reserved.measured = reserved;
}

void residentMeasured(const MeasuredTimeline &t, const TracePhases &phases, EstimateComparison &c)
{
    if (!t.has_history) {
        c.resident_source = "no allocation history in the snapshot";
        return;
    }
    if (t.recorded_from_allocator_start) {
        c.resident_source = "recording began with an empty allocator: the trace holds the "
                            "model's loading, not the start of a step";
        return;
    }
    if (phases.found() && phases.spans.front().stage != Stage::Forward) {
        c.resident_source = std::string("the trace begins inside the ")
                            + phaseLabel(phaseOfTraceStage(phases.spans.front().stage))
                            + " phase, not at the start of a step";
        return;
    }
    c.resident.measured = t.allocated_at_start;
    c.resident_source = phases.found()
                            ? "live when recording began, before the trace's forward"
                            : "live when recording began (no phases found in the stacks: taken "
                              "as the start of a step)";
}

std::string percent(double fraction)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * std::fabs(fraction));
    return buf;
}

std::string lower(const char *label)
{
    std::string s(label);
    if (!s.empty())
        s[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(s[0])));
    return s;
}

// "estimated 11.2 GB, measured 12.4 GB: 9.7% lower" (or "within 1.0%").
std::string against(const ComparedBytes &c, ByteUnit unit)
{
    std::string s = "estimated " + formatBytes(*c.estimated, unit) + ", measured "
                    + formatBytes(*c.measured, unit);
    if (const auto r = c.ratio()) {
        const double d = *r - 1;
        s += std::fabs(d) < 0.03
                 ? ": within " + percent(d)
                 : ": the estimate is " + percent(d) + (d < 0 ? " lower" : " higher");
    }
    return s;
}

const PhaseComparison *largestGap(const EstimateComparison &c)
{
    const PhaseComparison *worst = nullptr;
    for (const PhaseComparison &p : c.by_phase)
        if (p.allocated.both()
            && (!worst
                || std::llabs(p.allocated.difference()) > std::llabs(worst->allocated.difference())))
            worst = &p;
    return worst;
}

} // namespace

std::optional<double> ComparedBytes::ratio() const
{
    if (!both() || *measured <= 0)
        return std::nullopt;
    return static_cast<double>(*estimated) / static_cast<double>(*measured);
}

EstimateComparison compareWithEstimate(const SnapshotAnalysis &analysis,
                                       const TracePhases &phases,
                                       const TimelineSeries &series,
                                       const MemoryEstimate &est)
{
    EstimateComparison c;
    c.phases = phases;
    const MeasuredTimeline &t = analysis.timeline;
    c.peak_allocated.estimated = est.peak_allocated;
    c.peak_reserved.estimated = est.peak_reserved;
    c.resident.estimated = series.residentTotal();
    c.reserve_at_peak.estimated = series.positions() > series.peak
                                      ? series.reserved[series.peak] - series.allocated[series.peak]
                                      : est.peak_reserved - est.peak_allocated;
    if (t.has_history) {
        c.peak_allocated.measured = t.peak_allocated;
        c.peak_reserved.measured = t.peak_reserved;
        const auto at = static_cast<std::size_t>(t.peak_allocated_event + 1);
        c.reserve_at_peak.measured = atPoint(t.reserved, t.reserved_at_start, at)
                                     - t.peak_allocated;
    }
    residentMeasured(t, phases, c);
    for (int i = 0; i < kPhaseCount; ++i) {
        PhaseComparison &p = c.by_phase[static_cast<std::size_t>(i)];
        p.phase = static_cast<Phase>(i);
        if (est.training || p.phase == Phase::Forward) {
            const Breakdown &b = est.phase(p.phase);
            p.allocated.estimated = b.allocated();
            p.reserved.estimated = b.allocated() + b[Component::AllocatorReserve];
        }
        for (const TracePhaseSpan &s : phases.spans) {
            if (phaseOfTraceStage(s.stage) != p.phase)
                continue;
            p.first_event = p.in_trace ? std::min(p.first_event, s.first) : s.first;
            p.end_event = std::max(p.end_event, s.end);
            p.in_trace = true;
        }
        if (p.in_trace && t.has_history)
            measurePhase(t, p);
    }
    return c;
}

std::vector<std::string> comparisonFindings(const EstimateComparison &c,
                                            const MemoryEstimate &est,
                                            ByteUnit unit)
{
    std::vector<std::string> out;
    if (!c.peak_allocated.measured) {
        out.push_back("The snapshot holds no allocation history, so there is no measured peak to "
                      "compare (record one with torch.cuda.memory._record_memory_history()).");
        return out;
    }
    out.push_back("Peak allocated: " + against(c.peak_allocated, unit) + ".");
    if (const auto r = c.peak_allocated.ratio(); r && (*r > 2 || *r < 0.5))
        out.push_back("The two differ by more than a factor of two: the scenario probably does not "
                      "describe the recorded run (check model, micro-batch, sequence length and "
                      "method) before reading the differences below.");
    if (const PhaseComparison *p = largestGap(c); p && c.phases.spans.size() > 1)
        out.push_back(std::string("The largest gap is in the ") + lower(phaseLabel(p->phase)) + ": "
                      + against(p->allocated, unit) + ".");
    if (c.phases.found() && est.training)
        for (const PhaseComparison &p : c.by_phase)
            if (!p.in_trace)
                out.push_back(std::string("The trace has no ") + lower(phaseLabel(p.phase))
                              + " (recorded before or after it, or the run has none): only the "
                                "estimate shows it.");
    if (!c.phases.found())
        out.push_back("No phases were found in the trace's stacks, so only whole-trace peaks are "
                      "compared (record Python stacks: _record_memory_history(stacks=\"all\")).");
    if (c.phases.more_steps)
        out.push_back("The trace holds more than one step: the phases are the first step's, the "
                      "peaks the whole trace's.");
    if (c.resident.both()) {
        const Bytes d = -c.resident.difference(); // measured - estimated
        if (std::llabs(d) < std::max<Bytes>(kMiB, *c.resident.estimated / 200))
            out.push_back("When the step began: " + against(c.resident, unit) + ".");
        else if (d > 0)
            out.push_back("When the step began " + formatBytes(d, unit)
                          + " more was live than the scenario's weights and states ("
                          + against(c.resident, unit)
                          + "): buffers the program keeps, gradients kept between steps, or a "
                            "second model. Calibrate takes it as overheads.extra_resident.");
        else
            out.push_back("When the step began " + formatBytes(-d, unit)
                          + " less was live than the scenario models (" + against(c.resident, unit)
                          + "): check precision, optimizer and method against the run.");
    } else {
        out.push_back("Resident bytes not compared: " + c.resident_source + ".");
    }
    if (c.reserve_at_peak.both())
        out.push_back("Reserved beyond allocated at the allocated peak (cached blocks, rounding): "
                      + against(c.reserve_at_peak, unit) + ".");
    return out;
}

} // namespace membudget::snapshot
