// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace membudget {

// All byte counts in the core are signed 64-bit integers. Arithmetic on them goes through the
// saturating helpers below so that absurd inputs (2T parameters x 1M tokens x 4096 batch) report
// "too large" instead of wrapping around.
using Bytes = std::int64_t;

inline constexpr Bytes kKiB = 1024;
inline constexpr Bytes kMiB = 1024 * kKiB;
inline constexpr Bytes kGiB = 1024 * kMiB;
inline constexpr Bytes kGB = 1000 * 1000 * 1000;
inline constexpr Bytes kBytesMax = std::numeric_limits<Bytes>::max();

// Converts a non-negative double to bytes, saturating at kBytesMax (NaN becomes kBytesMax too, so
// that a poisoned value can never look small).
inline Bytes toBytes(double value)
{
    if (!(value >= 0.0))
        return value < 0.0 ? 0 : kBytesMax;
    if (value >= 9.2e18)
        return kBytesMax;
    return static_cast<Bytes>(std::llround(value));
}

// Converts a count held as a double (parameters, tokens) to int64 the same way: saturating at
// kBytesMax, never the undefined out-of-range cast (-fsanitize=float-cast-overflow checks).
inline std::int64_t toCount(double value)
{
    return toBytes(value);
}

inline Bytes addSat(Bytes a, Bytes b)
{
    Bytes out = 0;
    if (__builtin_add_overflow(a, b, &out))
        return kBytesMax;
    return out;
}

inline Bytes mulSat(Bytes a, Bytes b)
{
    Bytes out = 0;
    if (__builtin_mul_overflow(a, b, &out))
        return kBytesMax;
    return out;
}

inline bool isSaturated(Bytes b)
{
    return b >= kBytesMax / 2;
}

} // namespace membudget
