// SPDX-License-Identifier: GPL-3.0-or-later
#include "snapshot_report.h"

#include "base/one_line.h"
#include "snapshot/snapshot_json.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace membudget::cli {

using namespace membudget::snapshot;

namespace {

constexpr std::size_t kQuoteLimit = 160; // characters of a path or name from the file

std::string count(std::size_t n)
{
    return formatCount(static_cast<double>(n));
}

std::string line(const char *label, const std::string &value)
{
    char head[32];
    std::snprintf(head, sizeof head, "%-14s", label);
    return std::string(head) + value + "\n";
}

std::string eventCounts(const MeasuredTimeline &t)
{
    std::string s;
    for (std::size_t a = 0; a < t.action_counts.size(); ++a) {
        if (t.action_counts[a] == 0)
            continue;
        s += (s.empty() ? "" : ", ") + count(t.action_counts[a]) + " "
             + traceActionName(static_cast<TraceAction>(a));
    }
    return s;
}

std::string when(const MemorySnapshot &snapshot, const MeasuredTimeline &t, std::int64_t event)
{
    if (event == kAtTraceStart)
        return "already at the start of the trace";
    std::string s = "at event " + count(static_cast<std::size_t>(event) + 1) + " of "
                    + count(t.events);
    if (const auto seconds = secondsIntoTrace(snapshot, t, event)) {
        char buf[48];
        std::snprintf(buf, sizeof buf, ", %.3f s into the trace", *seconds);
        s += buf;
    }
    return s;
}

std::string settingsText(const MemorySnapshot &snapshot)
{
    if (!snapshot.allocator_settings)
        return "not recorded (older PyTorch)";
    const RecordedAllocatorSettings &a = *snapshot.allocator_settings;
    std::string s = a.alloc_conf.empty()
                        ? std::string("PYTORCH_CUDA_ALLOC_CONF unset")
                        : "PYTORCH_CUDA_ALLOC_CONF=" + oneLine(a.alloc_conf, kQuoteLimit);
    s += std::string("; expandable segments ") + (a.expandable_segments ? "on" : "off");
    s += "; max split size "
         + (a.max_split_size < 0 ? std::string("unlimited") : formatBytes(a.max_split_size));
    const bool rounding = std::any_of(a.roundup_power2_divisions.begin(),
                                      a.roundup_power2_divisions.end(),
                                      [](const auto &d) { return d.second > 0; });
    if (rounding)
        s += "; roundup_power2_divisions set";
    if (a.garbage_collection_threshold > 0) {
        char buf[48];
        std::snprintf(buf,
                      sizeof buf,
                      "; garbage collection at %.2f",
                      a.garbage_collection_threshold);
        s += buf;
    }
    return s;
}

std::string recordingText(const MeasuredTimeline &t, ByteUnit unit)
{
    if (!t.has_history)
        return "no allocation history in this snapshot (call "
               "torch.cuda.memory._record_memory_history() before the run to record one): only "
               "its state when taken is shown";
    if (t.recorded_from_allocator_start)
        return "began with an empty allocator: the trace holds the whole run";
    return "began with " + formatBytes(t.allocated_at_start, unit) + " allocated and "
           + formatBytes(t.reserved_at_start, unit) + " reserved already"
           + (t.frees_of_earlier_blocks > 0
                  ? " (the trace frees " + count(t.frees_of_earlier_blocks)
                        + " blocks allocated before it)"
                  : std::string());
}

std::string segmentsText(const MemorySnapshot &snapshot, int device, ByteUnit unit)
{
    std::size_t n = 0, small = 0;
    Bytes reserved = 0, largest = 0;
    for (const Segment &s : snapshot.segments) {
        if (s.device != device)
            continue;
        ++n;
        small += s.pool == SegmentPool::Small ? 1 : 0;
        reserved = addSat(reserved, s.total_size);
        largest = std::max(largest, s.total_size);
    }
    return count(n) + " at the snapshot (" + count(n - small) + " large, " + count(small)
           + " small), " + formatBytes(reserved, unit) + "; largest " + formatBytes(largest, unit);
}

// "  label                         value   note"
std::string row(const char *label, const std::string &value, const std::string &note = {})
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "  %-22s %12s", label, value.c_str());
    return std::string(buf) + (note.empty() ? "" : "   " + note) + "\n";
}

std::string measuredText(const MemorySnapshot &snapshot, const MeasuredTimeline &t, ByteUnit unit)
{
    std::string s = "\n";
    if (t.has_history) {
        s += "Measured over the trace (bytes as the program requested them; "
             "torch.cuda.memory_allocated counts rounded blocks):\n";
        s += row("live at trace start", formatBytes(t.allocated_at_start, unit));
        s += row("peak allocated",
                 formatBytes(t.peak_allocated, unit),
                 when(snapshot, t, t.peak_allocated_event));
        s += row("peak reserved",
                 formatBytes(t.peak_reserved, unit),
                 when(snapshot, t, t.peak_reserved_event));
        if (t.peak_allocated > 0) {
            char ratio[32];
            std::snprintf(ratio,
                          sizeof ratio,
                          "%.3f",
                          static_cast<double>(t.peak_reserved)
                              / static_cast<double>(t.peak_allocated));
            s += row("reserved / allocated", ratio);
        }
    }
    s += row("at the snapshot",
             formatBytes(t.requested_at_snapshot, unit),
             "requested (" + formatBytes(t.allocated_at_snapshot, unit) + " in rounded blocks), "
                 + formatBytes(t.reserved_at_snapshot, unit) + " reserved");
    return s;
}

// ": 7.83 GiB asked for, 10.68 GiB stuck in partly used segments"
std::string oomDetail(const ReplayResult &r, ByteUnit unit)
{
    if (!r.oom)
        return "";
    std::string s = ": " + formatBytes(r.oom->requested, unit) + " asked for";
    if (r.oom->cached_unusable > 0)
        s += ", " + formatBytes(r.oom->cached_unusable, unit) + " stuck in partly used segments";
    return s;
}

std::string replayText(const MeasuredTimeline &t,
                       const std::optional<SnapshotReplay> &replay,
                       ByteUnit unit)
{
    if (!t.has_history || !replay)
        return "";
    std::string s
        = "\nMemBudget's caching-allocator model, replaying the trace from its start state";
    s += replay->capacity == kBytesMax
             ? ", without a device limit (--capacity sets one):\n"
             : ", with " + formatBytes(replay->capacity, unit) + " of device memory:\n";
    if (!replay->ran)
        return s + "  not replayed: " + oneLine(replay->problem, kQuoteLimit) + "\n";
    const ReplayResult &r = replay->result;
    if (!r.error.empty())
        return s + "  stopped: " + oneLine(r.error, kQuoteLimit) + "\n";
    std::string note = "measured " + formatBytes(t.peak_reserved, unit);
    if (t.peak_reserved > 0) {
        char pct[32];
        std::snprintf(pct,
                      sizeof pct,
                      " (%+.2f%%)",
                      100.0 * static_cast<double>(r.stats.reserved.peak - t.peak_reserved)
                          / static_cast<double>(t.peak_reserved));
        note += pct;
    }
    s += row("peak reserved", formatBytes(r.stats.reserved.peak, unit), note);
    // With expandable segments each mapping of pages is the model's device allocation.
    const bool maps = t.count(TraceAction::SegmentMap) > 0;
    s += row(maps ? "segment maps" : "segment allocs",
             count(static_cast<std::size_t>(r.stats.device_allocations)),
             "recorded "
                 + count(t.count(maps ? TraceAction::SegmentMap : TraceAction::SegmentAlloc)));
    if (!r.fits)
        s += "  out of memory at request " + count(r.failed_at + 1) + " of "
             + count(replay->requests) + oomDetail(r, unit) + "\n";
    if (replay->attempted_ooms > 0 && r.fits)
        s += "  the model serves the " + count(replay->attempted_ooms)
             + " request(s) that failed on the device\n";
    else if (replay->attempted_ooms > 0 && r.failed_at + 1 == replay->requests)
        s += "  the request that failed on the device fails in the model too\n";
    return s;
}

std::string sitesText(const MemorySnapshot &snapshot, const SnapshotAnalysis &a, ByteUnit unit)
{
    if (a.top_sites.empty())
        return "";
    std::string s = std::string("\nLargest allocations live at the ")
                    + (a.timeline.has_history ? "peak" : "snapshot")
                    + ", by the first Python frame outside torch:\n";
    char buf[64];
    for (const AllocationSite &site : a.top_sites) {
        std::snprintf(buf,
                      sizeof buf,
                      "  %12s %6s  ",
                      formatBytes(site.bytes, unit).c_str(),
                      count(site.count).c_str());
        s += buf + oneLine(siteText(snapshot, site, false), kQuoteLimit) + "\n";
    }
    return s;
}

std::string signedBytes(Bytes b, ByteUnit unit)
{
    std::string s(b < 0 ? "-" : "+");
    s += formatBytes(b < 0 ? -b : b, unit);
    return s;
}

std::string differenceText(const ComparedBytes &c, ByteUnit unit)
{
    if (!c.both())
        return "-";
    std::string diff = signedBytes(c.difference(), unit);
    if (const auto r = c.ratio()) {
        char pct[32];
        std::snprintf(pct, sizeof pct, " (%+.0f%%)", 100.0 * (*r - 1));
        diff += pct;
    }
    return diff;
}

std::string comparedRow(const std::string &label, const ComparedBytes &c, ByteUnit unit)
{
    char buf[256];
    std::snprintf(buf,
                  sizeof buf,
                  "  %-26s %12s %12s %16s\n",
                  label.c_str(),
                  c.measured ? formatBytes(*c.measured, unit).c_str() : "-",
                  c.estimated ? formatBytes(*c.estimated, unit).c_str() : "-",
                  differenceText(c, unit).c_str());
    return buf;
}

std::string phaseSpansText(const TracePhases &phases)
{
    if (!phases.found())
        return "  phases in the trace: none found (no telling Python or autograd frames)\n";
    std::string s = "  phases in the trace (from the allocations' stacks):";
    for (const TracePhaseSpan &p : phases.spans)
        s += std::string(" ") + stageLabel(p.stage) + " " + count(p.first + 1) + "-" + count(p.end)
             + ";";
    s.back() = '\n';
    return s;
}

std::string estimateText(const EstimateBeside &e, ByteUnit unit)
{
    const EstimateComparison &c = e.comparison;
    std::string s = "\nEstimate of " + oneLine(e.file, kQuoteLimit) + " ("
                    + oneLine(e.name, kQuoteLimit) + ") beside the measurement:\n";
    char buf[256];
    std::snprintf(buf,
                  sizeof buf,
                  "  %-26s %12s %12s %16s\n",
                  "",
                  "measured",
                  "estimated",
                  "difference");
    s += buf;
    s += comparedRow("peak allocated", c.peak_allocated, unit);
    s += comparedRow("peak reserved", c.peak_reserved, unit);
    s += comparedRow("live when the step began", c.resident, unit);
    s += comparedRow("reserved beyond allocated", c.reserve_at_peak, unit);
    for (const PhaseComparison &p : c.by_phase) {
        if (!p.in_trace && !p.allocated.estimated)
            continue;
        const std::string phase = phaseLabel(p.phase);
        s += comparedRow(phase + ", allocated", p.allocated, unit);
        s += comparedRow(phase + ", reserved", p.reserved, unit);
    }
    s += phaseSpansText(c.phases);
    s += "\nWhere they part:\n";
    for (const std::string &f : e.findings)
        s += "  - " + f + "\n";
    return s;
}

} // namespace

std::string snapshotReport(const std::string &file,
                           const MemorySnapshot &snapshot,
                           const SnapshotAnalysis &a,
                           const std::optional<SnapshotReplay> &replay,
                           const std::optional<EstimateBeside> &estimate,
                           ByteUnit unit)
{
    const MeasuredTimeline &t = a.timeline;
    std::string s = line("Snapshot",
                         oneLine(file, 400)
                             + (snapshot.layout == SnapshotLayout::Legacy ? " (torch 2.0 layout)"
                                                                          : ""));
    std::string device = std::to_string(a.device);
    if (a.devices.size() > 1)
        device += " (of " + count(a.devices.size()) + " devices; --device picks another)";
    device += "; " + count(t.events) + " trace events";
    if (t.first_time_us != kNoTime && t.last_time_us > t.first_time_us) {
        char buf[48];
        std::snprintf(buf,
                      sizeof buf,
                      " over %.3f s",
                      static_cast<double>(t.last_time_us - t.first_time_us) / 1e6);
        device += buf;
    }
    if (t.events > 0)
        device += ": " + eventCounts(t);
    s += line("Device", device);
    s += line("Recording", recordingText(t, unit));
    s += line("Allocator", settingsText(snapshot));
    s += line("Segments", segmentsText(snapshot, a.device, unit));
    s += measuredText(snapshot, t, unit);
    s += replayText(t, replay, unit);
    s += sitesText(snapshot, a, unit);
    if (estimate)
        s += estimateText(*estimate, unit);
    return s;
}

std::string calibrationReport(const SnapshotCalibration &calibration, const std::string &written)
{
    std::string s = "\nCalibrated overheads";
    s += written.empty() ? std::string(" (the scenario on standard output):\n")
                         : " (written to " + oneLine(written, 400) + "):\n";
    for (const CalibrationItem &i : calibration.items) {
        s += std::string("  ") + (i.taken ? "taken " : "kept  ") + "overheads." + i.key;
        if (i.taken)
            s += ": " + (i.before.empty() ? std::string("(unset)") : oneLine(i.before, 200))
                 + " -> " + (i.after.empty() ? std::string("(unset)") : oneLine(i.after, 200));
        s += "\n      " + i.why + "\n";
    }
    if (!calibration.changesAnything())
        s += "  Nothing to change: the scenario already matches what the snapshot shows.\n";
    return s;
}

} // namespace membudget::cli
