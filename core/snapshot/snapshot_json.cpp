// SPDX-License-Identifier: GPL-3.0-or-later
#include "snapshot/snapshot_json.h"

#include <algorithm>

namespace membudget::snapshot {

namespace {

constexpr const char *kFormat = "membudget/1"; // as `membudget estimate --json`

nlohmann::json eventTime(const MemorySnapshot &snapshot,
                         const MeasuredTimeline &timeline,
                         std::int64_t event)
{
    const auto s = secondsIntoTrace(snapshot, timeline, event);
    return s ? nlohmann::json(*s) : nlohmann::json(nullptr);
}

nlohmann::json measuredJson(const MemorySnapshot &snapshot, const MeasuredTimeline &t)
{
    nlohmann::json counts = nlohmann::json::object();
    for (std::size_t a = 0; a < t.action_counts.size(); ++a)
        if (t.action_counts[a] > 0)
            counts[traceActionName(static_cast<TraceAction>(a))] = t.action_counts[a];
    nlohmann::json j;
    j["has_history"] = t.has_history;
    j["events"] = t.events;
    j["event_counts"] = counts;
    j["requested_at_snapshot"] = t.requested_at_snapshot;
    j["allocated_at_snapshot"] = t.allocated_at_snapshot;
    j["reserved_at_snapshot"] = t.reserved_at_snapshot;
    if (!t.has_history) {
        // Only the state when the snapshot was taken: no timeline, no peaks to measure.
        for (const char *k : {"baseline_allocated",
                              "baseline_reserved",
                              "peak_allocated",
                              "peak_reserved",
                              "recorded_from_allocator_start"})
            j[k] = nullptr;
        return j;
    }
    j["baseline_allocated"] = t.allocated_at_start;
    j["baseline_reserved"] = t.reserved_at_start;
    j["recorded_from_allocator_start"] = t.recorded_from_allocator_start;
    j["frees_of_earlier_blocks"] = t.frees_of_earlier_blocks;
    j["peak_allocated"] = t.peak_allocated;
    j["peak_allocated_event"] = t.peak_allocated_event;
    j["peak_allocated_seconds"] = eventTime(snapshot, t, t.peak_allocated_event);
    j["peak_reserved"] = t.peak_reserved;
    j["peak_reserved_event"] = t.peak_reserved_event;
    j["peak_reserved_seconds"] = eventTime(snapshot, t, t.peak_reserved_event);
    j["reserved_over_allocated"] = t.peak_allocated > 0
                                       ? nlohmann::json(static_cast<double>(t.peak_reserved)
                                                        / static_cast<double>(t.peak_allocated))
                                       : nlohmann::json(nullptr);
    j["duration_seconds"] = t.first_time_us != kNoTime ? nlohmann::json(
                                static_cast<double>(t.last_time_us - t.first_time_us) / 1e6)
                                                       : nlohmann::json(nullptr);
    return j;
}

nlohmann::json segmentsJson(const MemorySnapshot &snapshot, int device)
{
    std::size_t count = 0, small = 0, expandable = 0, blocks = 0;
    Bytes reserved = 0, largest = 0;
    for (const Segment &s : snapshot.segments) {
        if (s.device != device)
            continue;
        ++count;
        small += s.pool == SegmentPool::Small ? 1 : 0;
        expandable += s.is_expandable ? 1 : 0;
        blocks += s.blocks.size();
        reserved = addSat(reserved, s.total_size);
        largest = std::max(largest, s.total_size);
    }
    return {{"count", count},
            {"large", count - small},
            {"small", small},
            {"expandable", expandable},
            {"blocks", blocks},
            {"reserved", reserved},
            {"largest", largest}};
}

nlohmann::json sitesJson(const MemorySnapshot &snapshot, const SnapshotAnalysis &a)
{
    nlohmann::json list = nlohmann::json::array();
    for (const AllocationSite &site : a.top_sites) {
        nlohmann::json s;
        s["kind"] = siteKindKey(site.kind);
        s["site"] = siteText(snapshot, site, true);
        if (site.kind == SiteKind::UserFrame) {
            const Frame &f = snapshot.frames.frame(site.frame);
            s["file"] = std::string(snapshot.frames.text(f.file));
            s["line"] = f.line;
            s["function"] = std::string(snapshot.frames.text(f.name));
        }
        s["bytes"] = site.bytes;
        s["count"] = site.count;
        list.push_back(std::move(s));
    }
    return list;
}

// The last `keep` components of a path ("cs336_basics/model.py"), either separator.
std::string lastComponents(std::string_view path, int keep)
{
    std::size_t start = path.size();
    for (int i = 0; i < keep; ++i) {
        const std::size_t sep = start == 0 ? std::string_view::npos
                                           : path.find_last_of("/\\", start - 1);
        if (sep == std::string_view::npos)
            return std::string(path);
        start = sep;
    }
    return std::string(path.substr(start + 1));
}

} // namespace

const char *siteKindKey(SiteKind kind)
{
    switch (kind) {
    case SiteKind::UserFrame:
        return "user_frame";
    case SiteKind::NoPythonFrame:
        return "no_python_frame";
    case SiteKind::NoStack:
        return "no_stack";
    case SiteKind::BeforeRecording:
        return "before_recording";
    }
    return "?";
}

std::string siteText(const MemorySnapshot &snapshot, const AllocationSite &site, bool fullPath)
{
    switch (site.kind) {
    case SiteKind::UserFrame: {
        const Frame &f = snapshot.frames.frame(site.frame);
        const std::string_view file = snapshot.frames.text(f.file);
        return (fullPath ? std::string(file) : lastComponents(file, 2)) + ":"
               + std::to_string(f.line) + " in " + std::string(snapshot.frames.text(f.name));
    }
    case SiteKind::NoPythonFrame:
        return "(only C++ or torch frames recorded)";
    case SiteKind::NoStack:
        return "(no stack recorded)";
    case SiteKind::BeforeRecording:
        return "(allocated before recording began)";
    }
    return "?";
}

std::optional<double> secondsIntoTrace(const MemorySnapshot &snapshot,
                                       const MeasuredTimeline &timeline,
                                       std::int64_t event)
{
    if (event < 0 || timeline.first_time_us == kNoTime)
        return std::nullopt;
    for (const DeviceTrace &t : snapshot.device_traces) {
        if (t.device != timeline.device || static_cast<std::size_t>(event) >= t.events.size())
            continue;
        const std::int64_t at = t.events[static_cast<std::size_t>(event)].time_us;
        if (at == kNoTime)
            return std::nullopt;
        return static_cast<double>(at - timeline.first_time_us) / 1e6;
    }
    return std::nullopt;
}

void addReplayJson(nlohmann::json &document,
                   const SnapshotAnalysis &analysis,
                   const std::optional<SnapshotReplay> &replay)
{
    const MeasuredTimeline &t = analysis.timeline;
    if (!analysis.replay) {
        document["replay_input"] = {{"available", false}, {"problem", analysis.replay_problem}};
        document["replayed"] = nullptr;
        return;
    }
    const TraceStartState &start = analysis.replay->start;
    document["replay_input"] = {{"available", true},
                                {"requests", analysis.replay->requests.size()},
                                {"start_segments", start.segments.size()},
                                {"start_reserved", start.reserved},
                                {"start_allocated", start.allocated}};
    if (!replay || !replay->ran) {
        document["replayed"] = nullptr;
        if (replay)
            document["replay_input"]["problem"] = replay->problem;
        return;
    }
    const ReplayResult &r = replay->result;
    nlohmann::json j;
    j["peak_reserved"] = r.stats.reserved.peak;
    j["peak_allocated"] = r.stats.allocated.peak; // rounded blocks
    j["peak_reserved_difference"] = r.stats.reserved.peak - t.peak_reserved;
    j["fragmentation_at_peak"] = r.stats.fragmentationAtReservedPeak();
    j["segment_allocs"] = r.stats.device_allocations;
    j["segment_allocs_recorded"] = t.count(TraceAction::SegmentAlloc);
    j["segment_maps_recorded"] = t.count(TraceAction::SegmentMap); // expandable segments
    j["segment_frees"] = r.stats.device_frees;
    j["segment_frees_recorded"] = t.count(TraceAction::SegmentFree);
    j["requests"] = replay->requests;
    j["replayed_requests"] = r.replayed;
    j["fits"] = r.fits;
    j["failed_at_request"] = r.fits ? nlohmann::json(nullptr) : nlohmann::json(r.failed_at);
    j["error"] = r.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.error);
    j["capacity"] = replay->capacity == kBytesMax ? nlohmann::json(nullptr)
                                                  : nlohmann::json(replay->capacity);
    j["inferred_block_sizes"] = replay->inferred_block_sizes;
    j["skipped_ooms"] = replay->skipped_ooms;
    j["attempted_ooms"] = replay->attempted_ooms;
    document["replayed"] = j;
}

nlohmann::json snapshotToJson(const std::string &file,
                              const MemorySnapshot &snapshot,
                              const SnapshotAnalysis &analysis)
{
    nlohmann::json j;
    j["format"] = kFormat;
    j["kind"] = "memory_snapshot";
    j["file"] = file;
    j["layout"] = snapshot.layout == SnapshotLayout::Legacy ? "legacy" : "current";
    j["device"] = analysis.device;
    j["devices"] = analysis.devices;
    j["allocator_settings"] = snapshot.allocator_settings ? snapshot.allocator_settings->raw
                                                          : nlohmann::json(nullptr);
    j["measured"] = measuredJson(snapshot, analysis.timeline);
    j["segments"] = segmentsJson(snapshot, analysis.device);
    j["top_allocations_at"] = analysis.timeline.has_history ? "peak_allocated" : "snapshot";
    j["top_allocations"] = sitesJson(snapshot, analysis);
    j["external_annotations"] = snapshot.external_annotations;
    return j;
}

} // namespace membudget::snapshot
