// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The "comparison" and "calibration" objects of `membudget snapshot --scenario --json` (shape in
// docs/cli.md): bytes as integers, null for what one side does not have.

#include "model/memory_estimate.h"
#include "snapshot/estimate_comparison.h"
#include "snapshot/snapshot_calibration.h"

#include <nlohmann/json.hpp>

namespace membudget::snapshot {

nlohmann::json comparisonToJson(const EstimateComparison &comparison,
                                const MemoryEstimate &estimate,
                                const std::vector<std::string> &findings);

nlohmann::json calibrationToJson(const SnapshotCalibration &calibration);

} // namespace membudget::snapshot
