// SPDX-License-Identifier: GPL-3.0-or-later
#include "allocator/block_size_policy.h"

#include <algorithm>
#include <bit>

namespace membudget {

namespace {

// roundup_power2_divisions interval of a size: 0 below 2 MiB, then one per power of two of MiB,
// the last (15) from 32 GiB up (CUDAAllocatorConfig::roundup_power2_divisions(size)).
std::size_t divisionInterval(Bytes size)
{
    const int log2Size = static_cast<int>(std::bit_width(static_cast<std::uint64_t>(size))) - 1;
    return static_cast<std::size_t>(std::clamp(log2Size - 20, 0, 15));
}

// The next of `divisions` equal steps between the powers of two around `size`
// (roundup_power2_next_division): 1200 with 4 divisions of [1024, 2048) becomes 1280.
Bytes nextPowerOfTwoDivision(Bytes size, std::uint32_t divisions)
{
    const auto u = static_cast<std::uint64_t>(size);
    if (std::has_single_bit(u))
        return size;
    const std::uint64_t floor = std::bit_floor(u);
    const std::uint64_t step = floor >> (std::bit_width(divisions) - 1);
    if (step == 0)
        return static_cast<Bytes>(floor << 1);
    const std::uint64_t down = u & ~(step - 1);
    return static_cast<Bytes>(down == u ? u : down + step);
}

} // namespace

Bytes roundAllocationSize(Bytes size, const AllocatorSettings &settings)
{
    if (size < kMinBlockSize)
        return kMinBlockSize;
    const std::uint32_t divisions = settings.roundup_power2_divisions[divisionInterval(size)];
    if (divisions > 1 && size > kMinBlockSize * static_cast<Bytes>(divisions))
        return nextPowerOfTwoDivision(size, divisions);
    return addSat(size, kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

Bytes segmentSizeFor(Bytes roundedSize)
{
    if (roundedSize <= kSmallSize)
        return kSmallBuffer;
    if (roundedSize < kMinLargeAlloc)
        return kLargeBuffer;
    return addSat(roundedSize, kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

bool shouldSplit(AllocatorPool pool, Bytes blockSize, Bytes request, const AllocatorSettings &s)
{
    const Bytes remaining = blockSize - request;
    if (pool == AllocatorPool::Small || s.expandable_segments)
        return remaining >= kMinBlockSize;
    const bool belowMaxSplit = !s.max_split_size || request < *s.max_split_size;
    return belowMaxSplit && remaining > kSmallSize;
}

} // namespace membudget
