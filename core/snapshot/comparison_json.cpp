// SPDX-License-Identifier: GPL-3.0-or-later
#include "snapshot/comparison_json.h"

namespace membudget::snapshot {

namespace {

nlohmann::json bytesOrNull(const std::optional<Bytes> &b)
{
    return b ? nlohmann::json(*b) : nlohmann::json(nullptr);
}

nlohmann::json pair(const ComparedBytes &c)
{
    nlohmann::json j = {{"measured", bytesOrNull(c.measured)},
                        {"estimated", bytesOrNull(c.estimated)}};
    if (c.both()) {
        j["difference"] = c.difference();
        const auto r = c.ratio();
        j["ratio"] = r ? nlohmann::json(*r) : nlohmann::json(nullptr);
    }
    return j;
}

nlohmann::json phaseJson(const PhaseComparison &p)
{
    nlohmann::json j = {{"phase", phaseKey(p.phase)},
                        {"in_trace", p.in_trace},
                        {"allocated", pair(p.allocated)},
                        {"reserved", pair(p.reserved)}};
    if (p.in_trace) {
        j["first_event"] = p.first_event;
        j["end_event"] = p.end_event;
        j["peak_allocated_event"] = p.peak_event;
    }
    return j;
}

} // namespace

nlohmann::json comparisonToJson(const EstimateComparison &c,
                                const MemoryEstimate &estimate,
                                const std::vector<std::string> &findings)
{
    nlohmann::json j;
    j["peak_allocated"] = pair(c.peak_allocated);
    j["peak_reserved"] = pair(c.peak_reserved);
    j["resident"] = pair(c.resident);
    j["resident"]["source"] = c.resident_source;
    j["reserve_at_peak"] = pair(c.reserve_at_peak);
    nlohmann::json phases = nlohmann::json::array();
    for (const PhaseComparison &p : c.by_phase)
        if (p.in_trace || p.allocated.estimated)
            phases.push_back(phaseJson(p));
    j["phases"] = phases;
    nlohmann::json spans = nlohmann::json::array();
    for (const TracePhaseSpan &s : c.phases.spans)
        spans.push_back({{"stage", stageKey(s.stage)},
                         {"first_event", s.first},
                         {"end_event", s.end},
                         {"allocations", s.allocations}});
    j["trace_phases"] = {{"found", c.phases.found()},
                         {"spans", spans},
                         {"more_steps", c.phases.more_steps},
                         {"allocations", c.phases.allocations},
                         {"classified_allocations", c.phases.classified}};
    j["estimated_peak_phase"] = phaseKey(estimate.peak_phase);
    j["findings"] = findings;
    return j;
}

nlohmann::json calibrationToJson(const SnapshotCalibration &cal)
{
    nlohmann::json items = nlohmann::json::array();
    for (const CalibrationItem &i : cal.items)
        items.push_back({{"key", "overheads." + i.key},
                         {"taken", i.taken},
                         {"before", i.before},
                         {"after", i.after},
                         {"why", i.why}});
    const OverheadConfig &o = cal.overheads;
    nlohmann::json overheads = {{"cuda_context", o.cuda_context_bytes},
                                {"nccl", o.nccl_bytes},
                                {"allocator_conf", o.allocator_conf},
                                {"extra_resident", o.extra_resident_bytes}};
    overheads["allocator_reserve"] = o.allocator_reserve_fraction
                                         ? nlohmann::json(*o.allocator_reserve_fraction)
                                         : nlohmann::json(nullptr);
    return {{"changed", cal.changesAnything()}, {"items", items}, {"overheads", overheads}};
}

} // namespace membudget::snapshot
