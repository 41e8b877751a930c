// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The `membudget snapshot --json` document (shape documented in docs/cli.md): bytes as integers,
// the measured timeline's figures under "measured", the largest allocation sites live at the
// measured peak under "top_allocations", the segments at the snapshot under "segments".

#include "snapshot/memory_snapshot.h"
#include "snapshot/snapshot_analysis.h"
#include "snapshot/snapshot_replay.h"

#include <nlohmann/json.hpp>

#include <string>

namespace membudget::snapshot {

nlohmann::json snapshotToJson(const std::string &file,
                              const MemorySnapshot &snapshot,
                              const SnapshotAnalysis &analysis);

// "replay_input" (what the allocator model can replay) and "replayed" (its answer beside the
// measurement; null when the trace cannot be replayed) for `replay` of `analysis`.
void addReplayJson(nlohmann::json &document,
                   const SnapshotAnalysis &analysis,
                   const std::optional<SnapshotReplay> &replay);

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
