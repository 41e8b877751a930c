// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Drawing a long series at a chart's resolution: per pixel column, the sample where the series is
// lowest and the one where it is highest, in their order, so that every peak and every trough stays
// visible (the usual min/max decimation of plotting libraries), plus the samples on either side of
// the visible range so that lines run on to the edges.

#include <cstddef>
#include <vector>

namespace membudget {

// Indices into a series of `count` samples whose x positions ascend (x(i) <= x(i + 1)), for
// `columns` columns spanning [x0, x1]. All indices in range when there are no more of them than
// two per column. `x` and `value` are callables taking an index.
template<typename X, typename Value>
std::vector<std::size_t> decimateColumns(
    std::size_t count, X x, Value value, double x0, double x1, int columns)
{
    std::vector<std::size_t> out;
    if (count == 0 || columns < 1 || !(x1 > x0))
        return out;
    std::size_t first = 0;
    while (first + 1 < count && x(first + 1) <= x0)
        ++first; // the last sample at or before x0
    std::size_t last = first;
    while (last + 1 < count && x(last) < x1)
        ++last; // the first sample at or after x1
    if (last - first + 1 <= 2 * static_cast<std::size_t>(columns)) {
        for (std::size_t i = first; i <= last; ++i)
            out.push_back(i);
        return out;
    }
    const double perColumn = static_cast<double>(columns) / (x1 - x0);
    auto columnOf = [&](std::size_t i) { return static_cast<long long>((x(i) - x0) * perColumn); };
    out.push_back(first);
    std::size_t i = first + 1;
    while (i < last) {
        const long long column = columnOf(i);
        std::size_t lo = i, hi = i;
        for (; i < last && columnOf(i) == column; ++i) {
            if (value(i) < value(lo))
                lo = i;
            if (value(i) > value(hi))
                hi = i;
        }
        out.push_back(lo < hi ? lo : hi);
        if (lo != hi)
            out.push_back(lo < hi ? hi : lo);
    }
    out.push_back(last);
    return out;
}

} // namespace membudget
