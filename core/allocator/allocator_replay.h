// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "allocator/allocator_settings.h"
#include "allocator/caching_allocator_model.h"
#include "base/units.h"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace membudget {

// One step of an allocation sequence. Ids name allocations: small non-negative integers, each
// live at most once at a time; every Alloc request and every seeded block takes one, so
// numbering them 0, 1, 2, ... in order of appearance always works (an id may be reused after its
// Free). The bound is: id < number of Alloc requests + number of seeded blocks.
struct AllocatorRequest
{
    enum class Kind : std::uint8_t {
        Alloc,     // `size` bytes on `stream`, named `id`
        Free,      // the allocation named `id` (PyTorch's free_completed)
        EmptyCache // torch.cuda.empty_cache()
    };
    Kind kind = Kind::Alloc;
    std::int64_t stream = 0; // any id (cudaStream_t values will do)
    std::int64_t id = 0;
    Bytes size = 0;
};

// What the allocator already held when the sequence began (a snapshot recorded from a warm
// allocator): segments at their recorded addresses, and the blocks live in them.
struct SeedBlock
{
    std::int64_t id = 0; // the id later Free requests use
    Bytes address = 0;
    Bytes size = 0;      // block size (rounded)
    Bytes requested = 0; // bytes asked for
};

struct SeedSegment
{
    Bytes address = 0;
    Bytes size = 0;
    std::int64_t stream = 0; // any id (cudaStream_t values will do)
    AllocatorPool pool = AllocatorPool::Large;
    std::vector<SeedBlock> live_blocks;
};

struct AllocatorStartState
{
    std::vector<SeedSegment> segments;
};

struct ReplayOptions
{
    // Device addresses of the segments a recorded trace allocated (its segment_alloc events, in
    // order): new segments take them, so ties between equal-sized free blocks, broken by address,
    // fall as on the device (CachingAllocatorModel::useSegmentAddresses). Empty: invented.
    std::vector<Bytes> segment_addresses;
    // Fill ReplayResult::block_addresses.
    bool record_addresses = false;
};

struct ReplayResult
{
    bool fits = true;          // every request served
    std::size_t failed_at = 0; // index of the request that ran out of memory (when !fits)
    std::optional<OutOfMemoryReport> oom;
    std::string error;        // malformed input ("request 12: id 7 is not live"); empty if none
    std::size_t replayed = 0; // requests carried out (up to the failure or the error)
    AllocatorStats stats;     // peaks over the replay (the start state counts as current)
    std::vector<SegmentEvent> segment_events;
    std::vector<SegmentInfo> segments;  // held at the end
    std::vector<Bytes> block_addresses; // per Alloc request served, when asked for (0: zero bytes)
};

// Replays `requests` in order on a model seeded with `start`; stops at the first request that
// runs out of memory or at malformed input (unknown id, double free, bad start state).
ReplayResult replayAllocations(std::span<const AllocatorRequest> requests,
                               const AllocatorSettings &settings,
                               const AllocatorStartState &start = {},
                               const ReplayOptions &options = {});

} // namespace membudget
