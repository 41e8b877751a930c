// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Everything MemBudget measures in one snapshot, for one device: the allocated/reserved timeline
// and its peaks, every allocation with its lifetime, the largest allocation sites live at the
// measured peak, and the input a caching-allocator model needs to replay the trace. The command
// line (`membudget snapshot`) and the desktop app read snapshots through this.

#include "snapshot/measured_timeline.h"
#include "snapshot/memory_snapshot.h"
#include "snapshot/peak_allocations.h"
#include "snapshot/replay_input.h"
#include "snapshot/trace_allocations.h"

#include <optional>
#include <string>
#include <vector>

namespace membudget::snapshot {

struct SnapshotAnalysis
{
    int device = 0;
    std::vector<int> devices; // every device with segments or trace events
    MeasuredTimeline timeline;
    AllocationHistory history;
    // Live at the measured peak of allocated bytes, or at the snapshot when there is no history.
    std::int64_t sites_event = kAtTraceStart;
    std::vector<AllocationSite> top_sites;
    std::optional<ReplayInput> replay; // absent when the start state cannot be reconstructed:
    std::string replay_problem;        // then this says why
};

// Analyses `device` (-1: the device with the most trace events, else the first with segments).
// Fails with `problem` when the device has neither, or the trace contradicts the segments (a free
// of more than was there, an address allocated twice, a segment_alloc of a segment the snapshot
// does not hold...). Only expandable segments (segment_map/unmap) leave `replay` empty without
// failing.
bool analyzeSnapshot(const MemorySnapshot &snapshot,
                     int device,
                     std::size_t topSites,
                     SnapshotAnalysis &out,
                     std::string &problem);

} // namespace membudget::snapshot
