// SPDX-License-Identifier: GPL-3.0-or-later
#include "snapshot/snapshot_analysis.h"

#include <algorithm>

namespace membudget::snapshot {

namespace {

std::vector<int> devicesOf(const MemorySnapshot &snapshot)
{
    std::vector<int> devices;
    for (const Segment &s : snapshot.segments)
        devices.push_back(s.device);
    for (const DeviceTrace &t : snapshot.device_traces)
        if (!t.events.empty())
            devices.push_back(t.device);
    std::sort(devices.begin(), devices.end());
    devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
    return devices;
}

} // namespace

bool analyzeSnapshot(const MemorySnapshot &snapshot,
                     int device,
                     std::size_t topSites,
                     SnapshotAnalysis &out,
                     std::string &problem)
{
    out = SnapshotAnalysis{};
    out.devices = devicesOf(snapshot);
    if (device < 0)
        device = snapshot.busiestDevice() >= 0 ? snapshot.busiestDevice()
                                               : (out.devices.empty() ? 0 : out.devices.front());
    if (std::find(out.devices.begin(), out.devices.end(), device) == out.devices.end()) {
        problem = out.devices.empty()
                      ? std::string("the snapshot holds no segments and no trace: nothing was "
                                    "allocated on any GPU")
                      : "the snapshot holds nothing for device " + std::to_string(device);
        return false;
    }
    out.device = device;
    if (!measureTimeline(snapshot, device, out.timeline, problem)
        || !traceAllocations(snapshot, device, out.history, problem))
        return false;
    out.sites_event = out.timeline.has_history ? out.timeline.peak_allocated_event
                                               : static_cast<std::int64_t>(out.timeline.events) - 1;
    out.top_sites = liveAllocationSites(snapshot, out.history, out.sites_event, topSites);
    ReplayInput replay;
    if (replayInput(snapshot, out.history, replay, out.replay_problem)) {
        out.replay = std::move(replay);
    } else if (out.timeline.count(TraceAction::SegmentMap) == 0
               && out.timeline.count(TraceAction::SegmentUnmap) == 0) {
        // Without expandable segments the start state always exists: failing to find it means
        // the trace and the segments contradict each other.
        problem = out.replay_problem;
        return false;
    }
    return true;
}

} // namespace membudget::snapshot
