// SPDX-License-Identifier: GPL-3.0-or-later
#include "base/byte_format.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

namespace membudget {

std::string formatBytes(Bytes bytes, ByteUnit unit, int decimals)
{
    if (isSaturated(bytes))
        return "too large";
    const bool binary = unit == ByteUnit::GiB;
    const double base = binary ? 1024.0 : 1000.0;
    const double v = static_cast<double>(bytes);
    const char *const names[2][5] = {{"B", "KB", "MB", "GB", "TB"},
                                     {"B", "KiB", "MiB", "GiB", "TiB"}};
    int idx = 3;
    double scaled = v / (base * base * base);
    if (std::fabs(scaled) >= 1000.0 * (binary ? 1.024 : 1.0)) {
        idx = 4;
        scaled /= base;
    } else if (std::fabs(scaled) < 1.0) {
        idx = 2;
        scaled = v / (base * base);
        if (std::fabs(scaled) < 1.0) {
            idx = 1;
            scaled = v / base;
        }
        if (std::fabs(scaled) < 1.0) {
            idx = 0;
            scaled = v;
        }
    }
    char buf[64];
    std::snprintf(buf,
                  sizeof buf,
                  "%.*f %s",
                  idx == 0 ? 0 : decimals,
                  scaled,
                  names[binary ? 1 : 0][idx]);
    return buf;
}

std::string formatCapacity(Bytes bytes, ByteUnit unit, int decimals)
{
    if (isSaturated(bytes))
        return "too large";
    const double base = unit == ByteUnit::GiB ? 1024.0 : 1000.0;
    const double giga = base * base * base;
    const double scale = std::pow(10.0, std::clamp(decimals, 0, 6));
    // Rounded down; the small epsilon keeps exact values (80 GiB) from flooring to 79.9.
    const double v = std::floor(static_cast<double>(bytes) / giga * scale + 1e-9) / scale;
    if (v < 1.0)
        return formatBytes(bytes, unit, decimals);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", std::clamp(decimals, 0, 6), v);
    std::string number(buf);
    if (number.find('.') != std::string::npos) {
        while (number.back() == '0')
            number.pop_back();
        if (number.back() == '.')
            number.pop_back();
    }
    return number + (unit == ByteUnit::GiB ? " GiB" : " GB");
}

std::string formatCount(double count)
{
    if (!std::isfinite(count))
        return "too large";
    char digits[40];
    std::snprintf(digits, sizeof digits, "%.0f", std::fabs(count));
    std::string s(digits), out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (i > 0 && (s.size() - i) % 3 == 0)
            out += ',';
        out += s[i];
    }
    return count < 0 ? "-" + out : out;
}

bool parseByteSize(const std::string &text, Bytes &out)
{
    std::size_t i = 0;
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
        ++i;
    double value = 0;
    auto res = std::from_chars(text.data() + i, text.data() + text.size(), value);
    if (res.ec != std::errc() || !std::isfinite(value) || value < 0)
        return false;
    std::string unit(res.ptr, text.data() + text.size());
    std::string u;
    for (char c : unit)
        if (!std::isspace(static_cast<unsigned char>(c)))
            u += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    double mult = 0;
    if (u.empty() || u == "b")
        mult = 1;
    else if (u == "kb")
        mult = 1e3;
    else if (u == "mb")
        mult = 1e6;
    else if (u == "gb")
        mult = 1e9;
    else if (u == "tb")
        mult = 1e12;
    else if (u == "kib")
        mult = 1024.0;
    else if (u == "mib")
        mult = 1024.0 * 1024;
    else if (u == "gib")
        mult = 1024.0 * 1024 * 1024;
    else if (u == "tib")
        mult = 1024.0 * 1024 * 1024 * 1024;
    else
        return false;
    // Past int64 the size saturates; callers compare it with their own maximum.
    const double bytes = value * mult;
    out = bytes > 9.0e18 ? std::numeric_limits<Bytes>::max() : toBytes(bytes);
    return true;
}

} // namespace membudget
