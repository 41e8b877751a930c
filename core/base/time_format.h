// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

namespace membudget {

// "850 ms", "12.3 s", "4 min 12 s", "2 h 05 min", "3.2 days"; "too long" past a thousand years.
std::string formatDuration(double seconds);

// "$0.96", "$1,234" (whole dollars from $1,000 up).
std::string formatCost(double usd);

// "7,090" for rates and counts shown rounded; "0.43" below ten.
std::string formatRate(double value);

} // namespace membudget
