// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "allocator/allocator_settings.h"
#include "allocator/allocator_stats.h"
#include "allocator/block_size_policy.h"
#include "allocator/free_block_index.h"
#include "base/units.h"

#include <array>
#include <cstdint>
#include <optional>
#include <vector>

namespace membudget {

// One live allocation of the model. Stale handles (freed, or from another model) are refused.
struct BlockHandle
{
    std::int32_t index = -1;
    std::uint32_t generation = 0;

    bool isNull() const { return index < 0; }
};

// Why an allocation failed, with the figures PyTorch's "CUDA out of memory" message gives.
struct OutOfMemoryReport
{
    Bytes requested = 0;      // bytes asked for
    Bytes rounded = 0;        // the block it needed
    Bytes device_request = 0; // "Tried to allocate" in PyTorch's message: the segment size
                              // (get_allocation_size), quoted even with expandable segments
    std::int64_t stream = 0;
    Bytes capacity = 0;
    Bytes allocated = 0;          // live blocks
    Bytes reserved = 0;           // still held after releasing every cached block it could
    Bytes device_free = 0;        // capacity - reserved
    Bytes cached_unusable = 0;    // reserved - allocated: free space inside segments with live
                                  // blocks, which cannot be given back (fragmentation)
    Bytes largest_free_block = 0; // in the request's stream and pool
};

struct AllocationResult
{
    BlockHandle handle; // null for a zero-byte request, which gets no block (as in PyTorch)
    std::optional<OutOfMemoryReport> oom;

    bool ok() const { return !oom; }
};

enum class SegmentEventKind : std::uint8_t {
    Alloc, // cudaMalloc of a segment (trace action segment_alloc)
    Free,  // cudaFree of a segment (segment_free)
    Map,   // pages mapped into an expandable segment (segment_map)
    Unmap  // pages unmapped (segment_unmap)
};

struct SegmentEvent
{
    SegmentEventKind kind = SegmentEventKind::Alloc;
    AllocatorPool pool = AllocatorPool::Large;
    std::int64_t stream = 0;
    Bytes address = 0;
    Bytes size = 0;
};

// A segment as torch.cuda.memory_snapshot() lists it (an expandable segment: each mapped run).
struct SegmentInfo
{
    Bytes address = 0;
    Bytes size = 0;
    Bytes allocated = 0; // bytes of live blocks in it
    std::int64_t stream = 0;
    AllocatorPool pool = AllocatorPool::Large;
    bool expandable = false;
    int blocks = 0; // live and free blocks
};

// A model of PyTorch's CUDA caching allocator (DeviceCachingAllocator in
// c10/cuda/CUDACachingAllocator.cpp, PyTorch 2.3-2.5) for one device: the same rounding, pools,
// segment sizes, best-fit search, splitting, merging, release-and-retry on a failed device
// allocation, garbage collection and expandable segments, over invented addresses. It holds no
// memory: it says which bytes PyTorch would hold and whether a request would fail. Not modelled:
// CUDA graph private pools, cross-stream record_stream events (a free is immediate), IPC, and the
// cudaMallocAsync backend.
class CachingAllocatorModel
{
public:
    static constexpr Bytes kLargestRequest = Bytes(1) << 60; // 1 EiB: always out of memory

    explicit CachingAllocatorModel(const AllocatorSettings &settings = {});

    // Serves a request of `size` bytes on `stream` (DeviceCachingAllocator::malloc); on failure
    // leaves the model as PyTorch would after raising OutOfMemoryError (caches released).
    AllocationResult allocate(Bytes size, std::int64_t stream = 0);
    // Returns a live block to the cache, merging it with free neighbours (free, free_block).
    // False (and no change) for a null, stale or foreign handle.
    bool free(BlockHandle handle);
    // torch.cuda.empty_cache(): releases every cached segment (release_cached_blocks).
    void emptyCache();

    // Start state, for replaying a trace that did not begin with an empty allocator: a segment
    // PyTorch already held (not expandable), then the blocks live in it, all before the first
    // allocate(). False / a null handle when the model has already served requests, the segment
    // overlaps another, or the block is not inside a free part of a segment of its stream. Call
    // resetPeaks() after seeding.
    bool addSegment(Bytes address, Bytes size, std::int64_t stream, AllocatorPool pool);
    BlockHandle addLiveBlock(Bytes address, Bytes size, Bytes requested, std::int64_t stream = 0);
    void resetPeaks();
    // Device addresses for the next segments, used in order before invented ones: replaying a
    // recorded trace with the addresses cudaMalloc returned makes ties between equal-sized free
    // blocks (broken by address) fall as they did on the device.
    void useSegmentAddresses(std::vector<Bytes> addresses);

    const AllocatorSettings &settings() const { return m_settings; }
    // Changes the capacity of a model that has served requests (a state replayed once with
    // unlimited capacity, reused against several GPUs). The reserved bytes must fit it.
    void setCapacity(Bytes capacity) { m_settings.capacity = capacity; }
    const AllocatorStats &stats() const { return m_stats; }
    const std::vector<SegmentEvent> &segmentEvents() const { return m_events; }
    std::vector<SegmentInfo> segments() const; // by address
    // Size and address of a live block (0 for a null or stale handle).
    Bytes blockSize(BlockHandle handle) const;
    Bytes blockAddress(BlockHandle handle) const;

private:
    struct Block
    {
        Bytes address = 0;
        Bytes size = 0;
        Bytes requested = 0;
        std::int64_t gc_base = 0; // gc counter of its pool when it was cached
        std::int32_t prev = -1;   // neighbours in the same segment
        std::int32_t next = -1;
        std::int32_t expandable = -1; // expandable segment, or -1
        std::uint32_t generation = 0;
        std::uint32_t list = 0; // stream slot * 2 + pool
        bool alive = false;
        bool allocated = false;
        bool mapped = true;
    };
    struct SeededSegment
    {
        Bytes address = 0;
        Bytes size = 0;
        std::int32_t block = -1; // some block of the segment
    };
    struct ExpandableSegment
    {
        Bytes base = 0;
        Bytes page = 0;
        bool alive = false;
    };

    static AllocatorPool poolOfList(std::uint32_t list)
    {
        return static_cast<AllocatorPool>(list & 1);
    }
    std::int64_t streamOfList(std::uint32_t list) const { return m_streams[list >> 1]; }
    std::uint32_t listFor(std::int64_t stream, AllocatorPool pool);
    bool gcEnabled() const;

    std::int32_t newBlock();
    void recycle(std::int32_t b);
    void cache(std::int32_t b); // into its free list (insert_into_blocks)
    void uncache(std::int32_t b);
    bool isSplit(std::int32_t b) const;
    std::int32_t spliceBlock(
        std::int32_t like, Bytes address, Bytes size, std::int32_t prev, std::int32_t next);
    bool tryMerge(std::int32_t dst, std::int32_t src);
    void returnBlock(std::int32_t b); // free_block

    std::int32_t takeFreeBlock(std::uint32_t list, Bytes rounded);
    std::int32_t allocateSegment(std::uint32_t list, Bytes rounded);
    std::int32_t carve(std::int32_t b, Bytes rounded, Bytes requested);
    bool releaseAvailableCachedBlocks(std::uint32_t list, Bytes rounded);
    void releaseCachedBlocks();
    void releasePool(AllocatorPool pool);
    void releaseSegment(std::int32_t b);
    void garbageCollect();

    Bytes expandableSpace(AllocatorPool pool) const;
    std::int32_t expandableCandidate(std::uint32_t list, Bytes size);
    std::int32_t newExpandableSegment(std::uint32_t list);
    std::int32_t allocateExpandable(std::uint32_t list, Bytes rounded);
    bool mapPages(std::int32_t b, Bytes size);
    void unmapPages(std::int32_t b);
    void releaseExpandableSegment(std::int32_t b);
    void insertUnmapped(std::int32_t b);
    void eraseUnmapped(std::int32_t b);

    std::int32_t seededHost(Bytes address, Bytes size, std::int64_t stream) const;
    void record(SegmentEventKind kind, std::uint32_t list, Bytes address, Bytes size);
    void notePeak();
    OutOfMemoryReport oomReport(Bytes size, Bytes rounded, std::uint32_t list) const;

    AllocatorSettings m_settings;
    AllocatorStats m_stats;
    std::vector<Block> m_blocks;
    std::vector<std::int32_t> m_freeSlots;
    std::vector<std::int64_t> m_streams;               // stream ids, by slot
    std::vector<FreeBlockIndex> m_cached;              // by list
    std::vector<std::vector<std::int32_t>> m_unmapped; // by list, by address
    std::vector<ExpandableSegment> m_expandables;
    std::vector<SeededSegment> m_seeded;     // by address
    std::array<std::int64_t, 2> m_gcCalls{}; // get_free_blocks_call_count per pool
    std::vector<FreeBlockIndex::Entry> m_scratch;
    std::vector<SegmentEvent> m_events;
    std::vector<Bytes> m_givenAddresses;
    std::size_t m_givenUsed = 0;
    Bytes m_nextAddress = Bytes(1) << 40;
    Bytes m_peakSeen = 0;
};

} // namespace membudget
