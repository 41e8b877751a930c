// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "base/units.h"

#include <algorithm>
#include <cstdint>

namespace membudget {

// A current value and its high-water mark (Stat in c10/core/CachingDeviceAllocator.h).
struct AllocatorStat
{
    Bytes current = 0;
    Bytes peak = 0;

    void increase(Bytes amount)
    {
        current += amount;
        peak = std::max(peak, current);
    }
    void decrease(Bytes amount) { current -= amount; }
    void resetPeak() { peak = current; }
};

// What the model's allocator holds, as torch.cuda.memory_stats() names it. There is no "active"
// figure apart from "allocated": PyTorch's active bytes also count freed blocks still awaiting a
// cross-stream event (record_stream), and a request list has no such events; a free here is
// PyTorch's free_completed.
struct AllocatorStats
{
    AllocatorStat allocated; // live blocks, rounded sizes (memory_allocated)
    AllocatorStat requested; // live blocks, the sizes asked for (requested_bytes)
    AllocatorStat reserved;  // bytes in segments or mapped pages (memory_reserved)
    AllocatorStat segments;  // cudaMalloc'd segments plus expandable segments
    // The most bytes allocated while reserved stood at its peak: reserved.peak minus this is the
    // fragmentation at the tightest moment.
    Bytes allocated_at_reserved_peak = 0;

    std::int64_t allocations = 0; // served requests
    std::int64_t frees = 0;
    std::int64_t device_allocations = 0; // cudaMalloc calls and page mappings (num_device_alloc)
    std::int64_t device_frees = 0;       // cudaFree calls and page unmappings (num_device_free)
    std::int64_t alloc_retries = 0;      // device allocations retried after freeing the cache
    std::int64_t cache_flushes = 0;      // release of every cached block (OOM retry or empty_cache)
    std::int64_t ooms = 0;

    Bytes fragmentationAtReservedPeak() const { return reserved.peak - allocated_at_reserved_peak; }
};

} // namespace membudget
