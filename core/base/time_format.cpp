// SPDX-License-Identifier: GPL-3.0-or-later
#include "base/time_format.h"

#include "base/byte_format.h"

#include <cmath>
#include <cstdio>

namespace membudget {

std::string formatDuration(double seconds)
{
    char text[64];
    if (!std::isfinite(seconds) || seconds < 0)
        return "unknown";
    if (seconds < 1)
        std::snprintf(text, sizeof text, "%.0f ms", seconds * 1000);
    else if (seconds < 60)
        std::snprintf(text, sizeof text, "%.*f s", seconds < 10 ? 2 : 1, seconds);
    else if (seconds < 3600) {
        const long total = std::lround(seconds);
        std::snprintf(text, sizeof text, "%ld min %02ld s", total / 60, total % 60);
    } else if (seconds < 48 * 3600) {
        const long minutes = std::lround(seconds / 60);
        std::snprintf(text, sizeof text, "%ld h %02ld min", minutes / 60, minutes % 60);
    } else if (seconds < 1000 * 365.25 * 86400)
        std::snprintf(text, sizeof text, "%.1f days", seconds / 86400);
    else
        return "too long";
    return text;
}

std::string formatCost(double usd)
{
    if (!std::isfinite(usd) || usd < 0)
        return "unknown";
    if (usd >= 1000) {
        std::string text(1, '$');
        text += formatCount(std::round(usd));
        return text;
    }
    char text[32];
    std::snprintf(text, sizeof text, "$%.2f", usd);
    return text;
}

std::string formatRate(double value)
{
    if (!std::isfinite(value) || value < 0)
        return "unknown";
    if (value < 10) {
        char text[32];
        std::snprintf(text, sizeof text, "%.2f", value);
        return text;
    }
    return formatCount(std::round(value));
}

} // namespace membudget
