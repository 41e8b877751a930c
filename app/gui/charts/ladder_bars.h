// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The core's technique ladder (technique_ladder.h) as chart bars: each step estimated, the detail
// line saying how much the step saved.

#include "charts/budget_chart.h"

#include <vector>

namespace membudget {

std::vector<ChartBar> ladderBars(const EstimateInput &current, ByteUnit unit);

} // namespace membudget
