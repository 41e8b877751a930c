// SPDX-License-Identifier: GPL-3.0-or-later
#include "base/byte_format.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

namespace membudget {

namespace {

char asciiLower(char c)
{
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool asciiSpace(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

} // namespace

std::string formatFixed(double value, int decimals)
{
    if (!std::isfinite(value))
        return "too large";
    char buf[400];
    const auto res = std::to_chars(buf, buf + sizeof buf, value, std::chars_format::fixed, decimals);
    std::string s(buf, res.ec == std::errc() ? res.ptr : buf);
    // No "-0.00": a value that rounds to zero has no sign.
    if (!s.empty() && s.front() == '-' && s.find_first_not_of("-0.") == std::string::npos)
        s.erase(0, 1);
    return s;
}

std::string formatBytes(Bytes bytes, ByteUnit unit, int decimals)
{
    if (isSaturated(bytes) || bytes <= -kBytesMax / 2)
        return "too large";
    const bool binary = unit == ByteUnit::GiB;
    const double base = binary ? 1024.0 : 1000.0;
    const double v = static_cast<double>(bytes);
    const char *const names[2][7] = {{"B", "KB", "MB", "GB", "TB", "PB", "EB"},
                                     {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}};
    // The largest unit the magnitude reaches: "999.00 MB", then "1.00 GB".
    int idx = 0;
    double scaled = v;
    while (idx < 6 && std::fabs(scaled) >= base) {
        scaled /= base;
        ++idx;
    }
    return formatFixed(scaled, idx == 0 ? 0 : decimals) + " " + names[binary ? 1 : 0][idx];
}

std::string formatByteChange(Bytes from, Bytes to, ByteUnit unit, int decimals)
{
    if (isSaturated(from) || isSaturated(to))
        return "n/a";
    if (from == to)
        return formatBytes(0, unit, decimals);
    // Both are below 2^62 here, so the difference cannot overflow.
    std::string change(1, to > from ? '+' : '-');
    change += formatBytes(to > from ? to - from : from - to, unit, decimals);
    return change;
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
    std::string digits = formatFixed(std::fabs(count), 0);
    std::string out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0)
            out += ',';
        out += digits[i];
    }
    return count < 0 && out != "0" ? "-" + out : out;
}

bool parseByteSize(const std::string &text, Bytes &out)
{
    std::size_t i = 0;
    while (i < text.size() && asciiSpace(text[i]))
        ++i;
    double value = 0;
    auto res = std::from_chars(text.data() + i, text.data() + text.size(), value);
    if (res.ec != std::errc() || !std::isfinite(value) || value < 0)
        return false;
    std::string unit(res.ptr, text.data() + text.size());
    std::string u;
    for (char c : unit)
        if (!asciiSpace(c))
            u += asciiLower(c);
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
