// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "base/byte_format.h"
#include "model/memory_estimate.h"
#include "snapshot/estimate_comparison.h"
#include "snapshot/memory_snapshot.h"
#include "snapshot/snapshot_analysis.h"
#include "snapshot/snapshot_calibration.h"
#include "snapshot/snapshot_replay.h"

#include <optional>
#include <string>
#include <vector>

namespace membudget::cli {

// A scenario's estimate shown beside a snapshot's measurements (`membudget snapshot --scenario`).
struct EstimateBeside
{
    std::string file;
    std::string name;
    MemoryEstimate estimate;
    snapshot::EstimateComparison comparison; // phase by phase
    std::vector<std::string> findings;       // where they part, in sentences
};

// The human-readable summary `membudget snapshot` prints: device, events, whether recording began
// with an empty allocator, allocator settings, the measured peaks and when they happened, the
// allocator model's replayed peak reserved, the segments, and the largest allocation sites live at
// the measured peak. Text from the file (paths, function names, settings) is escaped to one line.
std::string snapshotReport(const std::string &file,
                           const snapshot::MemorySnapshot &snapshot,
                           const snapshot::SnapshotAnalysis &analysis,
                           const std::optional<snapshot::SnapshotReplay> &replay,
                           const std::optional<EstimateBeside> &estimate,
                           ByteUnit unit);

// What --calibrate took and why, key by key; `written` names the file (empty: standard output).
std::string calibrationReport(const snapshot::SnapshotCalibration &calibration,
                              const std::string &written);

} // namespace membudget::cli
