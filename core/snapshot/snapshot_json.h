// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The `membudget snapshot --json` document (shape documented in docs/cli.md): bytes as integers,
// the measured timeline's figures under "measured", the largest allocation sites live at the
// measured peak under "top_allocations", the segments at the snapshot under "segments".

#include "snapshot/memory_snapshot.h"
#include "snapshot/snapshot_analysis.h"

#include <nlohmann/json.hpp>

#include <string>

namespace membudget::snapshot {

nlohmann::json snapshotToJson(const std::string &file,
                              const MemorySnapshot &snapshot,
                              const SnapshotAnalysis &analysis);

// "user_frame", "no_python_frame", "no_stack", "before_recording"
const char *siteKindKey(SiteKind kind);
// For people: "model.py:54 in forward" style text of a site (the file as recorded, not escaped).
std::string siteText(const MemorySnapshot &snapshot, const AllocationSite &site, bool fullPath);

// Seconds from the trace's first timed event to `event` (nothing for legacy traces without
// times, or for kAtTraceStart).
std::optional<double> secondsIntoTrace(const MemorySnapshot &snapshot,
                                       const MeasuredTimeline &timeline,
                                       std::int64_t event);

} // namespace membudget::snapshot
