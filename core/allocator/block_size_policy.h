// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// How PyTorch's CUDA caching allocator sizes blocks and segments
// (c10/cuda/CUDACachingAllocator.cpp, PyTorch 2.3-2.5; read there, written here).

#include "allocator/allocator_settings.h"
#include "base/units.h"

#include <cstdint>

namespace membudget {

enum class AllocatorPool : std::uint8_t { Small, Large };

inline constexpr Bytes kMinBlockSize = 512;        // every block is a multiple of 512 bytes
inline constexpr Bytes kSmallSize = 1 * kMiB;      // largest request of the small pool
inline constexpr Bytes kSmallBuffer = 2 * kMiB;    // small-pool segment (and expandable page)
inline constexpr Bytes kMinLargeAlloc = 10 * kMiB; // below this a large request gets kLargeBuffer
inline constexpr Bytes kLargeBuffer = 20 * kMiB;   // large-pool segment (and expandable page)
inline constexpr Bytes kRoundLarge = 2 * kMiB;     // larger segments are multiples of this

// The block size a request of `size` bytes gets: at least 512 and a multiple of 512, or, where
// roundup_power2_divisions is set for the size's interval, the next of that many equal steps
// between two powers of two (round_size, roundup_power2_next_division).
Bytes roundAllocationSize(Bytes size, const AllocatorSettings &settings);

// Small pool for rounded sizes up to 1 MiB, large pool above (get_pool).
inline AllocatorPool poolForSize(Bytes roundedSize)
{
    return roundedSize <= kSmallSize ? AllocatorPool::Small : AllocatorPool::Large;
}

// The segment cudaMalloc'd when no cached block fits: 2 MiB for the small pool, 20 MiB for
// requests below 10 MiB, else the request rounded up to 2 MiB (get_allocation_size).
Bytes segmentSizeFor(Bytes roundedSize);

// Page of an expandable segment: 2 MiB in the small pool, 20 MiB in the large pool
// (find_expandable_block: `pool->is_small ? kSmallBuffer : kLargeBuffer`).
inline Bytes expandablePageSize(AllocatorPool pool)
{
    return pool == AllocatorPool::Small ? kSmallBuffer : kLargeBuffer;
}

// Whether serving `request` bytes from a free block of `blockSize` leaves a remainder that
// becomes a free block of its own (should_split): in the small pool or with expandable segments
// a remainder of 512 bytes or more; in the large pool more than 1 MiB, and only for requests below
// max_split_size.
bool shouldSplit(AllocatorPool pool, Bytes blockSize, Bytes request, const AllocatorSettings &s);

} // namespace membudget
