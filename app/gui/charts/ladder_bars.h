// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The core's technique ladder (technique_ladder.h) as chart bars: each step estimated, the detail
// line saying how much memory the step saved and, on `gpu`, what it costs or saves in time.

#include "charts/budget_chart.h"

#include <vector>

namespace membudget {

// `gpu` may be null (no GPU selected): then the bars carry memory only.
std::vector<ChartBar> ladderBars(const EstimateInput &current, ByteUnit unit, const GpuSpec *gpu);

} // namespace membudget
