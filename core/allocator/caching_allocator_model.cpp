// SPDX-License-Identifier: GPL-3.0-or-later
#include "allocator/caching_allocator_model.h"

#include <algorithm>

// Function names in the comments are those of DeviceCachingAllocator in
// c10/cuda/CUDACachingAllocator.cpp (PyTorch 2.3-2.5), which this file models.

namespace membudget {

namespace {

Bytes alignUp(Bytes value, Bytes step)
{
    return (value + step - 1) / step * step;
}

} // namespace

CachingAllocatorModel::CachingAllocatorModel(const AllocatorSettings &settings)
    : m_settings(settings)
{
    m_blocks.reserve(256);
    m_events.reserve(64);
}

// ---- bookkeeping ---------------------------------------------------------------------------

std::uint32_t CachingAllocatorModel::listFor(std::int64_t stream, AllocatorPool pool)
{
    std::size_t slot = 0;
    while (slot < m_streams.size() && m_streams[slot] != stream)
        ++slot;
    if (slot == m_streams.size()) {
        m_streams.push_back(stream);
        m_cached.resize(m_streams.size() * 2);
        m_unmapped.resize(m_streams.size() * 2);
    }
    return static_cast<std::uint32_t>(slot * 2 + static_cast<std::size_t>(pool));
}

// Garbage collection runs only under a per-process memory fraction (`set_fraction` in malloc).
bool CachingAllocatorModel::gcEnabled() const
{
    return m_settings.capacity_is_memory_fraction && m_settings.garbage_collection_threshold > 0;
}

std::int32_t CachingAllocatorModel::newBlock()
{
    std::int32_t b = 0;
    if (!m_freeSlots.empty()) {
        b = m_freeSlots.back();
        m_freeSlots.pop_back();
    } else {
        b = static_cast<std::int32_t>(m_blocks.size());
        m_blocks.emplace_back();
    }
    const std::uint32_t generation = m_blocks[b].generation + 1;
    m_blocks[b] = Block{};
    m_blocks[b].generation = generation;
    m_blocks[b].alive = true;
    return b;
}

void CachingAllocatorModel::recycle(std::int32_t b)
{
    m_blocks[b].alive = false;
    m_freeSlots.push_back(b);
}

// insert_into_blocks: a block entering the cache starts its garbage-collection age at zero.
void CachingAllocatorModel::cache(std::int32_t b)
{
    Block &blk = m_blocks[b];
    blk.gc_base = m_gcCalls[static_cast<std::size_t>(poolOfList(blk.list))];
    m_cached[blk.list].insert({blk.size, blk.address, b});
}

void CachingAllocatorModel::uncache(std::int32_t b)
{
    m_cached[m_blocks[b].list].erase(m_blocks[b].size, m_blocks[b].address);
}

bool CachingAllocatorModel::isSplit(std::int32_t b) const
{
    return m_blocks[b].prev >= 0 || m_blocks[b].next >= 0;
}

// A new block of `like`'s segment at [address, address + size), linked between `prev` and `next`
// (either may be -1); mapped, free, in no list yet.
std::int32_t CachingAllocatorModel::spliceBlock(
    std::int32_t like, Bytes address, Bytes size, std::int32_t prev, std::int32_t next)
{
    const std::int32_t p = newBlock();
    Block &blk = m_blocks[p];
    blk.address = address;
    blk.size = size;
    blk.list = m_blocks[like].list;
    blk.expandable = m_blocks[like].expandable;
    blk.prev = prev;
    blk.next = next;
    if (prev >= 0)
        m_blocks[prev].next = p;
    if (next >= 0)
        m_blocks[next].prev = p;
    return p;
}

// try_merge_blocks: `dst` (in no list) absorbs its free neighbour `src` of the same mapping.
bool CachingAllocatorModel::tryMerge(std::int32_t dst, std::int32_t src)
{
    if (src < 0 || m_blocks[src].allocated || m_blocks[src].mapped != m_blocks[dst].mapped)
        return false;
    if (m_blocks[src].mapped)
        uncache(src);
    else
        eraseUnmapped(src);
    Block &d = m_blocks[dst];
    const Block &s = m_blocks[src];
    if (d.prev == src) {
        d.address = s.address;
        d.prev = s.prev;
        if (d.prev >= 0)
            m_blocks[d.prev].next = dst;
    } else {
        d.next = s.next;
        if (d.next >= 0)
            m_blocks[d.next].prev = dst;
    }
    d.size += s.size;
    recycle(src);
    return true;
}

void CachingAllocatorModel::record(SegmentEventKind kind,
                                   std::uint32_t list,
                                   Bytes address,
                                   Bytes size)
{
    m_events.push_back({kind, poolOfList(list), streamOfList(list), address, size});
}

// Keeps the most allocated bytes seen while reserved stands at its peak.
void CachingAllocatorModel::notePeak()
{
    if (m_stats.reserved.peak > m_peakSeen) {
        m_peakSeen = m_stats.reserved.peak;
        m_stats.allocated_at_reserved_peak = m_stats.allocated.current;
    } else if (m_stats.reserved.current == m_stats.reserved.peak) {
        m_stats.allocated_at_reserved_peak = std::max(m_stats.allocated_at_reserved_peak,
                                                      m_stats.allocated.current);
    }
}

void CachingAllocatorModel::resetPeaks()
{
    m_stats.allocated.resetPeak();
    m_stats.requested.resetPeak();
    m_stats.reserved.resetPeak();
    m_stats.segments.resetPeak();
    m_peakSeen = m_stats.reserved.peak;
    m_stats.allocated_at_reserved_peak = m_stats.allocated.current;
}

// ---- malloc ----------------------------------------------------------------------------------

// malloc: search the cache; else garbage-collect, allocate a segment, and on failure release the
// oversize cached blocks, then every cached block, retrying after each; else out of memory.
AllocationResult CachingAllocatorModel::allocate(Bytes size, std::int64_t stream)
{
    AllocationResult result;
    if (size <= 0)
        return result;
    const Bytes rounded = roundAllocationSize(size, m_settings);
    const std::uint32_t list = listFor(stream, poolForSize(rounded));
    // NativeCachingAllocator::allocate refuses 1 EiB or more outright.
    std::int32_t b = size < kLargestRequest ? takeFreeBlock(list, rounded) : -1;
    if (b < 0 && size < kLargestRequest) {
        if (gcEnabled())
            garbageCollect();
        b = allocateSegment(list, rounded);
        if (b < 0 && releaseAvailableCachedBlocks(list, rounded))
            b = allocateSegment(list, rounded);
        if (b < 0) {
            releaseCachedBlocks();
            ++m_stats.alloc_retries;
            b = allocateSegment(list, rounded);
        }
    }
    if (b < 0) {
        ++m_stats.ooms;
        result.oom = oomReport(size, rounded, list);
        notePeak();
        return result;
    }
    b = carve(b, rounded, size);
    result.handle = {b, m_blocks[b].generation};
    notePeak();
    return result;
}

// get_free_block: the smallest cached block of the stream and pool that fits, lowest address
// first; with max_split_size, an oversize block serves only requests of max_split_size or more
// that it exceeds by less than max_non_split_rounding.
std::int32_t CachingAllocatorModel::takeFreeBlock(std::uint32_t list, Bytes rounded)
{
    if (gcEnabled())
        ++m_gcCalls[static_cast<std::size_t>(poolOfList(list))];
    FreeBlockIndex &cached = m_cached[list];
    FreeBlockIndex::Position at = cached.lowerBound(rounded);
    if (cached.isEnd(at))
        return -1;
    auto expandable = [&](FreeBlockIndex::Position p) {
        return m_blocks[cached.at(p).block].expandable >= 0;
    };
    if (expandable(at)) {
        if (m_settings.expandable_segments) {
            // An expandable block counts with the unmapped space after it: prefer a block that
            // cannot grow over one that could (the `expandable_size` walk).
            auto growable = [&](FreeBlockIndex::Position p) {
                const Block &blk = m_blocks[cached.at(p).block];
                const bool unmappedNext = blk.next >= 0 && !m_blocks[blk.next].mapped;
                return blk.size + (unmappedNext ? m_blocks[blk.next].size : 0);
            };
            for (auto next = cached.next(at);
                 expandable(at) && !cached.isEnd(next) && growable(next) < growable(at);
                 next = cached.next(at))
                at = next;
        } else {
            while (!cached.isEnd(at) && expandable(at))
                at = cached.next(at);
            if (cached.isEnd(at))
                return -1;
        }
    }
    const Bytes found = cached.at(at).size;
    if (m_settings.max_split_size) {
        const Bytes limit = *m_settings.max_split_size;
        if (rounded < limit && found >= limit)
            return -1;
        if (rounded >= limit && found >= rounded + m_settings.max_non_split_rounding)
            return -1;
    }
    const std::int32_t b = cached.at(at).block;
    cached.eraseAt(at);
    return b;
}

// alloc_block: a new segment (get_allocation_size) when the capacity allows it; with expandable
// segments, pages mapped into the stream's segment instead.
std::int32_t CachingAllocatorModel::allocateSegment(std::uint32_t list, Bytes rounded)
{
    if (m_settings.expandable_segments)
        return allocateExpandable(list, rounded);
    const Bytes size = segmentSizeFor(rounded);
    if (size > m_settings.capacity - m_stats.reserved.current
        || size > kBytesMax / 2 - m_nextAddress)
        return -1;
    const std::int32_t b = newBlock();
    Block &blk = m_blocks[b];
    if (m_givenUsed < m_givenAddresses.size()) {
        blk.address = m_givenAddresses[m_givenUsed++];
    } else {
        blk.address = m_nextAddress;
        m_nextAddress = alignUp(m_nextAddress + size, kSmallBuffer);
    }
    blk.size = size;
    blk.list = list;
    m_stats.reserved.increase(size);
    m_stats.segments.increase(1);
    ++m_stats.device_allocations;
    record(SegmentEventKind::Alloc, list, blk.address, size);
    return b;
}

// alloc_found_block: split off the remainder when should_split says so; the front part is the
// allocation.
std::int32_t CachingAllocatorModel::carve(std::int32_t b, Bytes rounded, Bytes requested)
{
    const AllocatorPool pool = poolOfList(m_blocks[b].list);
    if (shouldSplit(pool, m_blocks[b].size, rounded, m_settings)) {
        const std::int32_t front = spliceBlock(b, m_blocks[b].address, rounded, m_blocks[b].prev, b);
        m_blocks[b].address += rounded;
        m_blocks[b].size -= rounded;
        cache(b);
        b = front;
    }
    Block &blk = m_blocks[b];
    blk.allocated = true;
    blk.requested = requested;
    ++blk.generation;
    m_stats.allocated.increase(blk.size);
    m_stats.requested.increase(requested);
    ++m_stats.allocations;
    return b;
}

// release_available_cached_blocks (only with max_split_size): release the smallest oversize
// cached block that covers the request, else the largest ones until their sum does.
bool CachingAllocatorModel::releaseAvailableCachedBlocks(std::uint32_t list, Bytes rounded)
{
    if (!m_settings.max_split_size)
        return false;
    const Bytes limit = *m_settings.max_split_size;
    const Bytes wanted = std::max(rounded, limit);
    FreeBlockIndex &cached = m_cached[list];
    auto releasable = [&](std::int32_t b) { return !isSplit(b) && m_blocks[b].expandable < 0; };
    const FreeBlockIndex::Position at = cached.lowerBound(wanted);
    if (!cached.isEnd(at)) {
        const std::int32_t b = cached.at(at).block;
        if (!releasable(b))
            return false;
        releaseSegment(b);
        return true;
    }
    Bytes released = 0;
    while (!cached.empty() && released < wanted) {
        const FreeBlockIndex::Entry largest = cached.at(cached.last());
        if (largest.size < limit || !releasable(largest.block))
            break;
        released += largest.size;
        releaseSegment(largest.block);
    }
    return released >= wanted;
}

// release_cached_blocks: every cached segment that holds no live block goes back to the device,
// large pool first; expandable segments unmap their free pages.
void CachingAllocatorModel::releaseCachedBlocks()
{
    ++m_stats.cache_flushes;
    releasePool(AllocatorPool::Large);
    releasePool(AllocatorPool::Small);
}

void CachingAllocatorModel::emptyCache()
{
    releaseCachedBlocks();
}

// release_blocks for one pool over every stream.
void CachingAllocatorModel::releasePool(AllocatorPool pool)
{
    for (std::size_t slot = 0; slot < m_streams.size(); ++slot) {
        const std::size_t list = slot * 2 + static_cast<std::size_t>(pool);
        m_cached[list].collect(m_scratch);
        for (const FreeBlockIndex::Entry &entry : m_scratch) {
            const std::int32_t b = entry.block;
            if (m_blocks[b].expandable < 0 && isSplit(b))
                continue;
            if (m_blocks[b].expandable < 0) {
                releaseSegment(b);
                continue;
            }
            unmapPages(b);
            if (!isSplit(b) && !m_blocks[b].mapped)
                releaseExpandableSegment(b);
        }
    }
}

// release_block: cudaFree of a whole cached segment.
void CachingAllocatorModel::releaseSegment(std::int32_t b)
{
    uncache(b);
    const Block &blk = m_blocks[b];
    m_stats.reserved.decrease(blk.size);
    m_stats.segments.decrease(1);
    ++m_stats.device_frees;
    record(SegmentEventKind::Free, blk.list, blk.address, blk.size);
    recycle(b);
}

// garbage_collect_cached_blocks: above threshold x capacity reserved, release whole cached
// large-pool segments not reused for at least the average age, until enough is reclaimed.
void CachingAllocatorModel::garbageCollect()
{
    const Bytes threshold = toBytes(m_settings.garbage_collection_threshold
                                    * static_cast<double>(m_settings.capacity));
    if (m_stats.reserved.current <= threshold)
        return;
    const Bytes target = m_stats.reserved.current - threshold;
    const std::int64_t calls = m_gcCalls[static_cast<std::size_t>(AllocatorPool::Large)];
    auto collectable = [&](std::int32_t b) { return !isSplit(b) && m_blocks[b].expandable < 0; };
    double totalAge = 0;
    int count = 0;
    for (std::size_t slot = 0; slot < m_streams.size(); ++slot) {
        m_cached[slot * 2 + 1].collect(m_scratch);
        for (const FreeBlockIndex::Entry &entry : m_scratch)
            if (collectable(entry.block)) {
                totalAge += static_cast<double>(calls - m_blocks[entry.block].gc_base);
                ++count;
            }
    }
    Bytes reclaimed = 0;
    bool freed = true;
    while (reclaimed < target && freed && count > 0) {
        const double ageThreshold = totalAge / count;
        freed = false;
        for (std::size_t slot = 0; slot < m_streams.size(); ++slot) {
            m_cached[slot * 2 + 1].collect(m_scratch);
            for (const FreeBlockIndex::Entry &entry : m_scratch) {
                const std::int32_t b = entry.block;
                if (!collectable(b))
                    continue;
                const auto age = static_cast<double>(calls - m_blocks[b].gc_base);
                if (age < ageThreshold)
                    continue;
                freed = true;
                reclaimed += m_blocks[b].size;
                totalAge -= age;
                --count;
                releaseSegment(b);
            }
        }
    }
}

OutOfMemoryReport CachingAllocatorModel::oomReport(Bytes size,
                                                   Bytes rounded,
                                                   std::uint32_t list) const
{
    OutOfMemoryReport r;
    r.requested = size;
    r.rounded = rounded;
    r.device_request = segmentSizeFor(rounded);
    r.stream = streamOfList(list);
    r.capacity = m_settings.capacity;
    r.allocated = m_stats.allocated.current;
    r.reserved = m_stats.reserved.current;
    r.device_free = m_settings.capacity - m_stats.reserved.current;
    r.cached_unusable = r.reserved - r.allocated;
    const FreeBlockIndex &cached = m_cached[list];
    r.largest_free_block = cached.empty() ? 0 : cached.at(cached.last()).size;
    return r;
}

// ---- free ------------------------------------------------------------------------------------

bool CachingAllocatorModel::free(BlockHandle handle)
{
    if (handle.index < 0 || handle.index >= static_cast<std::int32_t>(m_blocks.size()))
        return false;
    const Block &blk = m_blocks[handle.index];
    if (!blk.alive || !blk.allocated || blk.generation != handle.generation)
        return false;
    returnBlock(handle.index);
    return true;
}

// free_block: merge with free neighbours of the same segment, then cache.
void CachingAllocatorModel::returnBlock(std::int32_t b)
{
    Block &blk = m_blocks[b];
    blk.allocated = false;
    m_stats.allocated.decrease(blk.size);
    m_stats.requested.decrease(blk.requested);
    ++m_stats.frees;
    tryMerge(b, m_blocks[b].prev);
    tryMerge(b, m_blocks[b].next);
    cache(b);
}

// ---- expandable segments -------------------------------------------------------------------

void CachingAllocatorModel::insertUnmapped(std::int32_t b)
{
    auto &v = m_unmapped[m_blocks[b].list];
    const Bytes address = m_blocks[b].address;
    const auto at = std::lower_bound(v.begin(), v.end(), address, [&](std::int32_t x, Bytes a) {
        return m_blocks[x].address < a;
    });
    v.insert(at, b);
}

void CachingAllocatorModel::eraseUnmapped(std::int32_t b)
{
    auto &v = m_unmapped[m_blocks[b].list];
    v.erase(std::find(v.begin(), v.end(), b));
}

// find_expandable_block: the lowest unmapped range of the stream's segments (with the free block
// just before it) that offers `size` bytes of free or unmapped space; else a new segment.
std::int32_t CachingAllocatorModel::expandableCandidate(std::uint32_t list, Bytes size)
{
    auto allocatable = [&](std::int32_t b) { return b >= 0 && !m_blocks[b].allocated; };
    for (const std::int32_t u : m_unmapped[list]) {
        std::int32_t c = allocatable(m_blocks[u].prev) ? m_blocks[u].prev : u;
        Bytes room = 0;
        for (std::int32_t b = c; room < size && allocatable(b); b = m_blocks[b].next)
            room += m_blocks[b].size;
        if (room >= size)
            return c;
    }
    return newExpandableSegment(list);
}

// ExpandableSegment: address space for 1.125 x the GPU's memory, mapped in pages of 2 MiB (small
// pool) or 20 MiB (large pool).
Bytes CachingAllocatorModel::expandableSpace(AllocatorPool pool) const
{
    Bytes total = m_settings.device_total > 0 ? m_settings.device_total : m_settings.capacity;
    total = std::min(total, Bytes(1) << 44);
    return alignUp(total + total / 8, expandablePageSize(pool));
}

std::int32_t CachingAllocatorModel::newExpandableSegment(std::uint32_t list)
{
    const Bytes page = expandablePageSize(poolOfList(list));
    const Bytes space = expandableSpace(poolOfList(list));
    const auto segment = static_cast<std::int32_t>(m_expandables.size());
    const Bytes base = alignUp(m_nextAddress, page);
    m_expandables.push_back({base, page, true});
    m_nextAddress = alignUp(base + space, kSmallBuffer);
    const std::int32_t b = newBlock();
    Block &blk = m_blocks[b];
    blk.address = base;
    blk.size = space;
    blk.list = list;
    blk.expandable = segment;
    blk.mapped = false;
    insertUnmapped(b);
    m_stats.segments.increase(1);
    return b;
}

// try_allocate_expandable_block: map pages at the candidate until it holds `rounded` bytes.
std::int32_t CachingAllocatorModel::allocateExpandable(std::uint32_t list, Bytes rounded)
{
    if (rounded > expandableSpace(poolOfList(list)))
        return -1; // larger than a segment's address space: PyTorch cannot map it either
    std::int32_t c = expandableCandidate(list, rounded);
    if (!m_blocks[c].mapped && !mapPages(c, std::min(m_blocks[c].size, rounded)))
        return -1;
    while (m_blocks[c].size < rounded) {
        const std::int32_t next = m_blocks[c].next;
        if (!mapPages(next, std::min(rounded - m_blocks[c].size, m_blocks[next].size)))
            return -1;
        c = next;
    }
    uncache(c);
    return c;
}

// map_block: back the first `size` bytes (whole pages) of an unmapped block with memory; the rest
// stays unmapped; the mapped part merges with free neighbours and is cached.
bool CachingAllocatorModel::mapPages(std::int32_t b, Bytes size)
{
    const Bytes page = m_expandables[static_cast<std::size_t>(m_blocks[b].expandable)].page;
    const Bytes mapped = alignUp(size, page);
    if (mapped > m_settings.capacity - m_stats.reserved.current)
        return false;
    eraseUnmapped(b);
    m_blocks[b].mapped = true;
    if (mapped < m_blocks[b].size) {
        const Bytes restAddress = m_blocks[b].address + mapped;
        const Bytes restSize = m_blocks[b].size - mapped;
        const std::int32_t rest = spliceBlock(b, restAddress, restSize, b, m_blocks[b].next);
        m_blocks[rest].mapped = false;
        m_blocks[b].size = mapped;
        insertUnmapped(rest);
    }
    const Bytes address = m_blocks[b].address;
    tryMerge(b, m_blocks[b].prev);
    tryMerge(b, m_blocks[b].next);
    cache(b);
    m_stats.reserved.increase(mapped);
    ++m_stats.device_allocations;
    record(SegmentEventKind::Map, m_blocks[b].list, address, mapped);
    return true;
}

// unmap_block: give back the whole pages inside a cached expandable block; partial pages at its
// ends stay mapped as cached blocks of their own.
void CachingAllocatorModel::unmapPages(std::int32_t b)
{
    const ExpandableSegment &seg = m_expandables[static_cast<std::size_t>(m_blocks[b].expandable)];
    const Bytes start = m_blocks[b].address;
    const Bytes end = start + m_blocks[b].size;
    const Bytes first = seg.base + alignUp(start - seg.base, seg.page);
    const Bytes last = seg.base + (end - seg.base) / seg.page * seg.page;
    if (first >= last)
        return;
    uncache(b);
    if (first > start)
        cache(spliceBlock(b, start, first - start, m_blocks[b].prev, b));
    if (end > last)
        cache(spliceBlock(b, last, end - last, b, m_blocks[b].next));
    m_blocks[b].address = first;
    m_blocks[b].size = last - first;
    m_blocks[b].mapped = false;
    tryMerge(b, m_blocks[b].prev);
    tryMerge(b, m_blocks[b].next);
    insertUnmapped(b);
    m_stats.reserved.decrease(last - first);
    ++m_stats.device_frees;
    record(SegmentEventKind::Unmap, m_blocks[b].list, first, last - first);
}

// release_expandable_segment: a segment with nothing mapped is given up altogether.
void CachingAllocatorModel::releaseExpandableSegment(std::int32_t b)
{
    eraseUnmapped(b);
    m_expandables[static_cast<std::size_t>(m_blocks[b].expandable)].alive = false;
    m_stats.segments.decrease(1);
    recycle(b);
}

// ---- start state -----------------------------------------------------------------------------

bool CachingAllocatorModel::addSegment(Bytes address,
                                       Bytes size,
                                       std::int64_t stream,
                                       AllocatorPool pool)
{
    if (m_stats.allocations > 0 || !m_events.empty() || address < 0 || size <= 0
        || size % kMinBlockSize != 0 || address > kBytesMax / 2 - size)
        return false;
    const auto at = std::lower_bound(m_seeded.begin(),
                                     m_seeded.end(),
                                     address,
                                     [](const SeededSegment &s, Bytes a) { return s.address < a; });
    const bool overlapsNext = at != m_seeded.end() && at->address < address + size;
    const bool overlapsPrev = at != m_seeded.begin()
                              && std::prev(at)->address + std::prev(at)->size > address;
    if (overlapsNext || overlapsPrev)
        return false;
    const std::uint32_t list = listFor(stream, pool);
    const std::int32_t b = newBlock();
    m_blocks[b].address = address;
    m_blocks[b].size = size;
    m_blocks[b].list = list;
    cache(b);
    m_seeded.insert(at, {address, size, b});
    m_stats.reserved.increase(size);
    m_stats.segments.increase(1);
    m_nextAddress = std::max(m_nextAddress, alignUp(address + size, kSmallBuffer));
    return true;
}

// The cached block of a seeded segment that holds [address, address + size), or -1.
std::int32_t CachingAllocatorModel::seededHost(Bytes address, Bytes size, std::int64_t stream) const
{
    auto at = std::upper_bound(m_seeded.begin(),
                               m_seeded.end(),
                               address,
                               [](Bytes a, const SeededSegment &s) { return a < s.address; });
    if (at == m_seeded.begin())
        return -1;
    std::int32_t b = std::prev(at)->block;
    while (m_blocks[b].prev >= 0)
        b = m_blocks[b].prev;
    for (; b >= 0; b = m_blocks[b].next) {
        const Block &blk = m_blocks[b];
        if (blk.address <= address && address + size <= blk.address + blk.size)
            return !blk.allocated && streamOfList(blk.list) == stream ? b : -1;
    }
    return -1;
}

BlockHandle CachingAllocatorModel::addLiveBlock(Bytes address,
                                                Bytes size,
                                                Bytes requested,
                                                std::int64_t stream)
{
    if (m_stats.allocations > 0 || size <= 0 || requested < 0 || requested > size
        || address > kBytesMax / 2 - size)
        return {};
    const std::int32_t host = seededHost(address, size, stream);
    if (host < 0)
        return {};
    uncache(host);
    const Bytes hostEnd = m_blocks[host].address + m_blocks[host].size;
    const Bytes hostStart = m_blocks[host].address;
    if (hostStart < address)
        cache(spliceBlock(host, hostStart, address - hostStart, m_blocks[host].prev, host));
    if (address + size < hostEnd)
        cache(
            spliceBlock(host, address + size, hostEnd - address - size, host, m_blocks[host].next));
    Block &blk = m_blocks[host];
    blk.address = address;
    blk.size = size;
    blk.allocated = true;
    blk.requested = requested;
    ++blk.generation;
    m_stats.allocated.increase(size);
    m_stats.requested.increase(requested);
    return {host, blk.generation};
}

void CachingAllocatorModel::useSegmentAddresses(std::vector<Bytes> addresses)
{
    m_givenAddresses = std::move(addresses);
    m_givenUsed = 0;
    for (const Bytes a : m_givenAddresses)
        m_nextAddress = std::max(m_nextAddress, alignUp(a, kSmallBuffer) + (Bytes(1) << 50));
}

// ---- inspection ------------------------------------------------------------------------------

std::vector<SegmentInfo> CachingAllocatorModel::segments() const
{
    std::vector<SegmentInfo> out;
    for (std::size_t i = 0; i < m_blocks.size(); ++i) {
        const Block &head = m_blocks[i];
        const bool startsRun = head.alive && head.mapped
                               && (head.prev < 0 || !m_blocks[head.prev].mapped);
        if (!startsRun)
            continue;
        SegmentInfo info;
        info.address = head.address;
        info.stream = streamOfList(head.list);
        info.pool = poolOfList(head.list);
        info.expandable = head.expandable >= 0;
        for (auto b = static_cast<std::int32_t>(i); b >= 0 && m_blocks[b].mapped;
             b = m_blocks[b].next) {
            info.size += m_blocks[b].size;
            info.allocated += m_blocks[b].allocated ? m_blocks[b].size : 0;
            ++info.blocks;
        }
        out.push_back(info);
    }
    std::sort(out.begin(), out.end(), [](const SegmentInfo &a, const SegmentInfo &b) {
        return a.address < b.address;
    });
    return out;
}

Bytes CachingAllocatorModel::blockSize(BlockHandle handle) const
{
    if (handle.index < 0 || handle.index >= static_cast<std::int32_t>(m_blocks.size()))
        return 0;
    const Block &blk = m_blocks[handle.index];
    return blk.alive && blk.allocated && blk.generation == handle.generation ? blk.size : 0;
}

Bytes CachingAllocatorModel::blockAddress(BlockHandle handle) const
{
    return blockSize(handle) > 0 ? m_blocks[handle.index].address : 0;
}

} // namespace membudget
