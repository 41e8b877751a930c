// SPDX-License-Identifier: GPL-3.0-or-later
// The caching-allocator model against hand-computed expectations from the rules of PyTorch's
// c10/cuda/CUDACachingAllocator.cpp (2.3-2.5): each case names the rule it checks.
#include "allocator/allocator_replay.h"
#include "allocator/allocator_settings.h"
#include "allocator/block_size_policy.h"
#include "allocator/caching_allocator_model.h"

#include <QtTest>

using namespace membudget;

namespace {

constexpr Bytes MiB = kMiB;

std::vector<SegmentEventKind> kinds(const CachingAllocatorModel &m)
{
    std::vector<SegmentEventKind> out;
    for (const SegmentEvent &e : m.segmentEvents())
        out.push_back(e.kind);
    return out;
}

std::vector<Bytes> eventSizes(const CachingAllocatorModel &m)
{
    std::vector<Bytes> out;
    for (const SegmentEvent &e : m.segmentEvents())
        out.push_back(e.size);
    return out;
}

BlockHandle take(CachingAllocatorModel &m, Bytes size, std::int64_t stream = 0)
{
    const AllocationResult r = m.allocate(size, stream);
    if (!r.ok() || r.handle.isNull())
        qFatal("allocation of %lld bytes failed", static_cast<long long>(size));
    return r.handle;
}

AllocatorRequest alloc(std::int64_t id, Bytes size)
{
    return {AllocatorRequest::Kind::Alloc, 0, id, size};
}

AllocatorRequest release(std::int64_t id)
{
    return {AllocatorRequest::Kind::Free, 0, id, 0};
}

} // namespace

class TestCachingAllocator : public QObject
{
    Q_OBJECT
private slots:
    // round_size: 512-byte minimum and multiples.
    void roundingPlain_data()
    {
        QTest::addColumn<qint64>("size");
        QTest::addColumn<qint64>("rounded");
        QTest::newRow("1 byte") << Q_INT64_C(1) << Q_INT64_C(512);
        QTest::newRow("512") << Q_INT64_C(512) << Q_INT64_C(512);
        QTest::newRow("513") << Q_INT64_C(513) << Q_INT64_C(1024);
        QTest::newRow("1 MiB + 1") << qint64(MiB + 1) << qint64(MiB + 512);
        QTest::newRow("1,200,000") << Q_INT64_C(1200000) << Q_INT64_C(1200128);
    }
    void roundingPlain()
    {
        QFETCH(qint64, size);
        QFETCH(qint64, rounded);
        QCOMPARE(roundAllocationSize(size, AllocatorSettings{}), rounded);
    }

    // roundup_power2_next_division, applied only above 512 x divisions and per size interval.
    void roundingPowerOfTwoDivisions()
    {
        AllocatorSettings s;
        s.roundup_power2_divisions.fill(2);
        // 1,200,000 lies in [1 MiB, 2 MiB): halves are 1 MiB and 1.5 MiB.
        QCOMPARE(roundAllocationSize(1200000, s), Q_INT64_C(1572864));
        QCOMPARE(roundAllocationSize(MiB, s), MiB);              // a power of two stays
        QCOMPARE(roundAllocationSize(1000, s), Q_INT64_C(1024)); // not above 512 x 2: plain
        s.roundup_power2_divisions.fill(8);
        QCOMPARE(roundAllocationSize(100 * MiB, s), 104 * MiB); // eighths of [64, 128) MiB
        // Only the interval [256 MiB, 512 MiB) (index 8) rounds to halves.
        s.roundup_power2_divisions.fill(0);
        s.roundup_power2_divisions[8] = 2;
        QCOMPARE(roundAllocationSize(300 * MiB + 1, s), 384 * MiB);
        QCOMPARE(roundAllocationSize(200 * MiB + 1, s), 200 * MiB + 512);
    }

    // get_pool and get_allocation_size.
    void poolsAndSegmentSizes()
    {
        QCOMPARE(poolForSize(MiB), AllocatorPool::Small);
        QCOMPARE(poolForSize(MiB + 512), AllocatorPool::Large);
        QCOMPARE(segmentSizeFor(512), 2 * MiB);
        QCOMPARE(segmentSizeFor(MiB), 2 * MiB);
        QCOMPARE(segmentSizeFor(MiB + 512), 20 * MiB);
        QCOMPARE(segmentSizeFor(10 * MiB - 512), 20 * MiB);
        QCOMPARE(segmentSizeFor(10 * MiB), 10 * MiB);
        QCOMPARE(segmentSizeFor(10 * MiB + 512), 12 * MiB);
        QCOMPARE(segmentSizeFor(45 * MiB), 46 * MiB);
    }

    // Small requests pack into one 2 MiB segment, each split off the free rest.
    void smallPoolSplits()
    {
        CachingAllocatorModel m;
        const BlockHandle a = take(m, 1000);
        const BlockHandle b = take(m, 1000);
        QCOMPARE(m.blockSize(a), Q_INT64_C(1024));
        QCOMPARE(m.blockAddress(b), m.blockAddress(a) + 1024);
        QCOMPARE(m.stats().reserved.current, 2 * MiB);
        QCOMPARE(m.stats().allocated.current, Q_INT64_C(2048));
        QCOMPARE(m.stats().requested.current, Q_INT64_C(2000));
        // Two 1 MiB requests fill a 2 MiB segment exactly; a third needs a second segment.
        CachingAllocatorModel n;
        take(n, MiB);
        take(n, MiB);
        QCOMPARE(n.stats().segments.current, Q_INT64_C(1));
        take(n, MiB);
        QCOMPARE(n.stats().reserved.current, 4 * MiB);
        // A remainder of exactly 512 bytes is still split off in the small pool.
        CachingAllocatorModel k;
        take(k, MiB);
        QCOMPARE(k.blockSize(take(k, MiB - 512)), MiB - 512);
        take(k, 512);
        QCOMPARE(k.stats().reserved.current, 2 * MiB);
    }

    // should_split in the large pool: only a remainder of more than 1 MiB becomes a block.
    void largePoolSplitThreshold()
    {
        CachingAllocatorModel m;
        const BlockHandle a = take(m, 19 * MiB); // segment rounded to 20 MiB, 1 MiB left: kept
        QCOMPARE(m.blockSize(a), 20 * MiB);
        QCOMPARE(m.stats().allocated.current, 20 * MiB);
        QCOMPARE(m.stats().requested.current, 19 * MiB);
        CachingAllocatorModel n;
        take(n, 9 * MiB);                              // 20 MiB segment: [9][11 free]
        const BlockHandle b = take(n, 10 * MiB - 512); // 1 MiB + 512 left: split
        QCOMPARE(n.blockSize(b), 10 * MiB - 512);
        const BlockHandle c = take(n, 512 * 1024); // small pool: its own 2 MiB segment
        QCOMPARE(n.stats().reserved.current, 22 * MiB);
        n.free(c);
        n.free(b);                                     // [9][11 free] again
        const BlockHandle d = take(n, 10 * MiB + 512); // 1 MiB - 512 left: not split
        QCOMPARE(n.blockSize(d), 11 * MiB);
        QCOMPARE(n.stats().allocated.current, 20 * MiB);
        QCOMPARE(n.stats().reserved.current, 22 * MiB);
    }

    // free_block / try_merge_blocks: a freed block joins its free neighbours.
    void freeMergesNeighbours()
    {
        CachingAllocatorModel m;
        const BlockHandle a = take(m, 3 * MiB);
        const BlockHandle b = take(m, 3 * MiB);
        const BlockHandle c = take(m, 3 * MiB);
        QCOMPARE(m.stats().reserved.current, 20 * MiB); // one kLargeBuffer segment
        QVERIFY(m.free(b));
        QVERIFY(m.free(a));                     // merges with b: 6 MiB free at a's address
        QCOMPARE(m.segments().at(0).blocks, 3); // [6 free][c 3][11 free]
        const Bytes aAddress = m.segments().at(0).address;
        const BlockHandle d = take(m, 6 * MiB); // best fit: the 6 MiB block, not the 11 MiB rest
        QCOMPARE(m.blockAddress(d), aAddress);
        QVERIFY(m.free(d));
        QVERIFY(m.free(c)); // everything merges into one block
        QCOMPARE(m.segments().at(0).blocks, 1);
        QCOMPARE(m.segments().at(0).size, 20 * MiB);
        QCOMPARE(m.stats().allocated.current, Q_INT64_C(0));
        QCOMPARE(m.stats().reserved.current, 20 * MiB); // cached, not released
    }

    // get_free_block: the smallest fitting block, the lowest address among equals.
    void bestFit()
    {
        CachingAllocatorModel m;
        const BlockHandle a = take(m, 30 * MiB);
        const BlockHandle b = take(m, 50 * MiB);
        const BlockHandle c = take(m, 40 * MiB);
        const Bytes aAt = m.blockAddress(a), cAt = m.blockAddress(c);
        m.free(a);
        m.free(b);
        m.free(c);
        const BlockHandle d = take(m, 35 * MiB); // 40 MiB block, split (5 MiB left)
        QCOMPARE(m.blockAddress(d), cAt);
        QCOMPARE(m.blockSize(d), 35 * MiB);
        const BlockHandle e = take(m, 29 * MiB); // 30 MiB block, 1 MiB left: not split
        QCOMPARE(m.blockAddress(e), aAt);
        QCOMPARE(m.blockSize(e), 30 * MiB);
        QCOMPARE(m.stats().reserved.current, 120 * MiB);
        // Equal sizes: the lower address wins.
        CachingAllocatorModel n;
        const BlockHandle x = take(n, 40 * MiB);
        const BlockHandle y = take(n, 40 * MiB);
        const Bytes low = std::min(n.blockAddress(x), n.blockAddress(y));
        n.free(y);
        n.free(x);
        QCOMPARE(n.blockAddress(take(n, 40 * MiB)), low);
    }

    // Blocks are reused only on their own stream.
    void streamsKeepTheirBlocks()
    {
        const std::int64_t side = 0x7f3a2c001230; // stream ids may be cudaStream_t values
        CachingAllocatorModel m;
        m.free(take(m, 40 * MiB, 0));
        take(m, 40 * MiB, side);
        QCOMPARE(m.stats().reserved.current, 80 * MiB);
        QCOMPARE(m.segmentEvents().back().stream, side);
        take(m, 40 * MiB, 0);
        QCOMPARE(m.stats().reserved.current, 80 * MiB);
    }

    // max_split_size: oversize blocks are not split, serve only requests of max_split_size or
    // more that they exceed by less than 20 MiB, and are released first on a failed allocation.
    void oversizeBlocks()
    {
        AllocatorSettings s;
        s.max_split_size = 40 * MiB;
        CachingAllocatorModel m(s);
        m.free(take(m, 100 * MiB));
        take(m, 30 * MiB); // below the limit: the cached 100 MiB block is refused
        QCOMPARE(m.stats().reserved.current, 130 * MiB);
        const BlockHandle big = take(m, 90 * MiB); // 100 < 90 + 20: used whole
        QCOMPARE(m.blockSize(big), 100 * MiB);
        QCOMPARE(m.stats().reserved.current, 130 * MiB);
        m.free(big);
        take(m, 70 * MiB); // 100 >= 70 + 20: refused, new segment
        QCOMPARE(m.stats().reserved.current, 200 * MiB);

        // release_available_cached_blocks: under a 200 MiB capacity the cached oversize block
        // goes back to the device, without flushing the whole cache.
        s.capacity = 200 * MiB;
        CachingAllocatorModel n(s);
        n.free(take(n, 100 * MiB));
        take(n, 30 * MiB);
        QVERIFY(n.allocate(80 * MiB).ok());
        QCOMPARE(n.stats().reserved.current, 110 * MiB);
        QCOMPARE(eventSizes(n), (std::vector<Bytes>{100 * MiB, 30 * MiB, 100 * MiB, 80 * MiB}));
        QCOMPARE(kinds(n)[2], SegmentEventKind::Free);
        QCOMPARE(n.stats().cache_flushes, Q_INT64_C(0));
    }

    // malloc: on a failed device allocation, release every cached segment and retry.
    void releaseAndRetrySucceeds()
    {
        AllocatorSettings s;
        s.capacity = 100 * MiB;
        CachingAllocatorModel m(s);
        m.free(take(m, 60 * MiB, 0));
        const AllocationResult r = m.allocate(50 * MiB, 1); // the cached block is stream 0's
        QVERIFY(r.ok());
        QCOMPARE(m.stats().reserved.current, 50 * MiB);
        QCOMPARE(m.stats().reserved.peak, 60 * MiB);
        QCOMPARE(m.stats().alloc_retries, Q_INT64_C(1));
        QCOMPARE(kinds(m),
                 (std::vector<SegmentEventKind>{SegmentEventKind::Alloc,
                                                SegmentEventKind::Free,
                                                SegmentEventKind::Alloc}));
    }

    void releaseAndRetryFails()
    {
        AllocatorSettings s;
        s.capacity = 100 * MiB;
        CachingAllocatorModel m(s);
        take(m, 60 * MiB, 0);
        const AllocationResult r = m.allocate(50 * MiB, 1);
        QVERIFY(!r.ok());
        QVERIFY(r.handle.isNull());
        QCOMPARE(r.oom->requested, 50 * MiB);
        QCOMPARE(r.oom->device_request, 50 * MiB);
        QCOMPARE(r.oom->reserved, 60 * MiB);
        QCOMPARE(r.oom->allocated, 60 * MiB);
        QCOMPARE(r.oom->device_free, 40 * MiB);
        QCOMPARE(r.oom->cached_unusable, Q_INT64_C(0));
        QCOMPARE(m.stats().ooms, Q_INT64_C(1));
    }

    // Fragmentation: free space split around a live block cannot be released, so a request
    // smaller than the free bytes fails; expandable segments unmap the free pages and fit it.
    void fragmentationOomAndExpandableFit()
    {
        AllocatorSettings s;
        s.capacity = 120 * MiB;
        auto run = [](CachingAllocatorModel &m) {
            m.free(take(m, 100 * MiB));
            const BlockHandle a = take(m, 40 * MiB); // [40][60 free]
            take(m, 50 * MiB);                       // [40][50][10 free]
            m.free(a);                               // [40 free][50][10 free]
            return m.allocate(45 * MiB);
        };
        CachingAllocatorModel plain(s);
        const AllocationResult r = run(plain);
        QVERIFY(!r.ok());
        QCOMPARE(r.oom->device_request, 46 * MiB); // 45 MiB rounded to 2 MiB
        QCOMPARE(r.oom->reserved, 100 * MiB);
        QCOMPARE(r.oom->allocated, 50 * MiB);
        QCOMPARE(r.oom->cached_unusable, 50 * MiB);
        QCOMPARE(r.oom->largest_free_block, 40 * MiB);
        QCOMPARE(r.oom->device_free, 20 * MiB);

        s.expandable_segments = true;
        CachingAllocatorModel expandable(s);
        QVERIFY(run(expandable).ok());
        // The first attempt maps 40 MiB after the 10 MiB tail (over capacity); the retry unmaps
        // the 40 MiB free head and maps 40 MiB at the tail.
        QCOMPARE(expandable.stats().reserved.current, 100 * MiB);
        QCOMPARE(expandable.stats().allocated.current, 95 * MiB);
        QCOMPARE(kinds(expandable).back(), SegmentEventKind::Map);
        QCOMPARE(eventSizes(expandable), (std::vector<Bytes>{100 * MiB, 40 * MiB, 40 * MiB}));
    }

    // Expandable segments: 20 MiB pages in the large pool, contiguous growth, remainder split at
    // 512 bytes, release unmaps whole free pages only.
    void expandableSegments()
    {
        AllocatorSettings s;
        s.expandable_segments = true;
        CachingAllocatorModel m(s);
        const BlockHandle a = take(m, 30 * MiB); // maps 2 pages, 10 MiB free after
        QCOMPARE(m.stats().reserved.current, 40 * MiB);
        QCOMPARE(m.blockSize(a), 30 * MiB);
        const BlockHandle b = take(m, 15 * MiB); // 10 MiB free + one more page
        QCOMPARE(m.stats().reserved.current, 60 * MiB);
        QCOMPARE(m.blockAddress(b), m.blockAddress(a) + 30 * MiB);
        QCOMPARE(m.segments().size(), std::size_t(1));
        QCOMPARE(m.segments().at(0).size, 60 * MiB);
        m.free(a);
        m.emptyCache(); // [0, 30) free: the page [0, 20) goes, [20, 30) stays mapped
        QCOMPARE(m.stats().reserved.current, 40 * MiB);
        QCOMPARE(m.segmentEvents().back().kind, SegmentEventKind::Unmap);
        QCOMPARE(m.segmentEvents().back().size, 20 * MiB);
        m.free(b);
        m.emptyCache();
        QCOMPARE(m.stats().reserved.current, Q_INT64_C(0));
        QCOMPARE(m.stats().segments.current, Q_INT64_C(0));
        // Small pool: 2 MiB pages.
        CachingAllocatorModel n(s);
        take(n, 1000);
        QCOMPARE(n.stats().reserved.current, 2 * MiB);
    }

    // get_free_block with expandable segments: a block that could grow into unmapped space is
    // passed over for a larger block that cannot.
    void expandablePrefersBlocksThatCannotGrow()
    {
        AllocatorSettings s;
        s.expandable_segments = true;
        CachingAllocatorModel m(s);
        const BlockHandle a = take(m, 12 * MiB); // [a 12][8 free] in page 1
        take(m, 8 * MiB);                        // [a][b 8]
        take(m, 10 * MiB);                       // page 2: [c 10][10 free, then unmapped]
        const Bytes aAt = m.blockAddress(a);
        m.free(a); // [12 free][b][c][10 free tail]
        QCOMPARE(m.blockAddress(take(m, 9 * MiB)), aAt);
        QCOMPARE(m.stats().reserved.current, 40 * MiB);
    }

    // garbage_collection_threshold, active only under a per-process memory fraction: above
    // threshold x capacity, cached segments at least as old as the average are released.
    void garbageCollection()
    {
        AllocatorSettings s;
        s.capacity = 100 * MiB;
        s.garbage_collection_threshold = 0.5;
        s.capacity_is_memory_fraction = true;
        CachingAllocatorModel m(s);
        m.free(take(m, 30 * MiB)); // search 1; cached at age base 1
        m.free(take(m, 36 * MiB)); // search 2; cached at base 2
        take(m, 40 * MiB);         // search 3: 66 MiB > 50; ages 2 and 1, average 1.5: the 30 goes
        QCOMPARE(m.stats().reserved.current, 76 * MiB);
        QCOMPARE(eventSizes(m), (std::vector<Bytes>{30 * MiB, 36 * MiB, 30 * MiB, 40 * MiB}));
        // Without the fraction the threshold does nothing: 106 MiB would not fit, so the whole
        // cache is flushed instead.
        s.capacity_is_memory_fraction = false;
        CachingAllocatorModel n(s);
        n.free(take(n, 30 * MiB));
        n.free(take(n, 36 * MiB));
        take(n, 40 * MiB);
        QCOMPARE(n.stats().reserved.current, 40 * MiB);
        QCOMPARE(n.stats().cache_flushes, Q_INT64_C(1));
        // Equal ages are both at the average: both go in one pass, past the 6 MiB target.
        s.capacity = 200 * MiB;
        s.garbage_collection_threshold = 0.3;
        s.capacity_is_memory_fraction = true;
        CachingAllocatorModel k(s);
        const BlockHandle x = take(k, 30 * MiB);
        const BlockHandle y = take(k, 36 * MiB);
        k.free(x);
        k.free(y);         // both cached at base 2
        take(k, 40 * MiB); // 66 MiB > 60 MiB: ages 1 and 1
        QCOMPARE(k.stats().reserved.current, 40 * MiB);
        QCOMPARE(k.stats().cache_flushes, Q_INT64_C(0));
    }

    void statisticsAndPeaks()
    {
        CachingAllocatorModel m;
        const BlockHandle a = take(m, 1000);
        // Rounded to 25 MiB + 512 in a 26 MiB segment; the 1 MiB - 512 left is not split off, so
        // the block, and memory_allocated, is 26 MiB.
        const BlockHandle b = take(m, 25 * MiB + 100);
        QCOMPARE(m.stats().allocated.current, 1024 + 26 * MiB);
        QCOMPARE(m.stats().requested.current, 1000 + 25 * MiB + 100);
        QCOMPARE(m.stats().reserved.current, 28 * MiB);
        m.free(b);
        take(m, 2 * MiB); // from the cached 26 MiB segment, split
        QCOMPARE(m.stats().allocated.peak, 1024 + 26 * MiB);
        QCOMPARE(m.stats().allocated.current, 1024 + 2 * MiB);
        QCOMPARE(m.stats().reserved.peak, 28 * MiB);
        QCOMPARE(m.stats().fragmentationAtReservedPeak(), 28 * MiB - (1024 + 26 * MiB));
        QCOMPARE(m.stats().allocations, Q_INT64_C(3));
        QCOMPARE(m.stats().frees, Q_INT64_C(1));
        QCOMPARE(m.stats().device_allocations, Q_INT64_C(2));
        // Handles: a freed or stale one is refused.
        QVERIFY(m.free(a));
        QVERIFY(!m.free(a));
        QVERIFY(!m.free(BlockHandle{}));
        // Zero bytes: no block, no change.
        const AllocationResult zero = m.allocate(0);
        QVERIFY(zero.ok() && zero.handle.isNull());
    }

    // Absurd sizes fail as out of memory, never overflow (PyTorch refuses 1 EiB outright).
    void hugeRequests()
    {
        for (const bool expandable : {false, true}) {
            AllocatorSettings s;
            s.expandable_segments = expandable;
            CachingAllocatorModel m(s);
            QVERIFY(!m.allocate(kBytesMax).ok());
            QVERIFY(!m.allocate(Bytes(1) << 60).ok());
            for (int i = 0; i < 40; ++i)
                m.allocate(Bytes(1) << 59); // the invented address space runs out, quietly
            QVERIFY(m.stats().reserved.current >= 0);
            QVERIFY(m.allocate(1000).ok());
        }
    }

    void seededStartState()
    {
        CachingAllocatorModel m;
        QVERIFY(m.addSegment(1 << 30, 40 * MiB, 0, AllocatorPool::Large));
        QVERIFY(!m.addSegment((1 << 30) + 20 * MiB, 40 * MiB, 0, AllocatorPool::Large)); // overlap
        const BlockHandle live = m.addLiveBlock((1 << 30) + 10 * MiB, 10 * MiB, 10 * MiB - 7);
        QVERIFY(!live.isNull());
        QVERIFY(m.addLiveBlock((1 << 30) + 15 * MiB, MiB, MiB).isNull()); // inside a live block
        m.resetPeaks();
        QCOMPARE(m.stats().reserved.peak, 40 * MiB);
        QCOMPARE(m.stats().allocated.current, 10 * MiB);
        // [10 free][10 live][20 free]: 15 MiB fits the tail, at its start.
        const BlockHandle b = take(m, 15 * MiB);
        QCOMPARE(m.blockAddress(b), (1 << 30) + 20 * MiB);
        QVERIFY(m.free(live));
        QCOMPARE(m.stats().reserved.current, 40 * MiB);
        QVERIFY(!m.addSegment(Bytes(1) << 31, 2 * MiB, 0, AllocatorPool::Small)); // after use
    }

    void replayRequests()
    {
        const std::vector<AllocatorRequest> requests{alloc(0, 30 * MiB),
                                                     alloc(1, 0),
                                                     release(0),
                                                     release(1),
                                                     alloc(2, 10 * MiB),
                                                     {AllocatorRequest::Kind::EmptyCache, 0, 0, 0},
                                                     alloc(3, 40 * MiB)};
        const ReplayResult r = replayAllocations(requests, AllocatorSettings{});
        QVERIFY2(r.error.empty(), r.error.c_str());
        QVERIFY(r.fits);
        QCOMPARE(r.replayed, requests.size());
        // 30 MiB segment, 10 MiB served from it (split), empty_cache keeps it (split), 40 MiB new.
        QCOMPARE(r.stats.reserved.current, 70 * MiB);
        QCOMPARE(r.segments.size(), std::size_t(2));

        AllocatorSettings tight;
        tight.capacity = 60 * MiB;
        const ReplayResult oom = replayAllocations(requests, tight);
        QVERIFY(!oom.fits);
        QCOMPARE(oom.failed_at, std::size_t(6));
        QCOMPARE(oom.replayed, std::size_t(6));
        QCOMPARE(oom.oom->requested, 40 * MiB);
    }

    void replayRejectsMalformedInput()
    {
        const std::vector<AllocatorRequest> doubleFree{alloc(0, 100), release(0), release(0)};
        QVERIFY(replayAllocations(doubleFree, {}).error.find("request 2") == 0);
        const std::vector<AllocatorRequest> reused{alloc(0, 100), alloc(0, 100)};
        QVERIFY(replayAllocations(reused, {}).error.find("already live") != std::string::npos);
        const std::vector<AllocatorRequest> huge{alloc(5, 100)};
        QVERIFY(replayAllocations(huge, {}).error.find("outside") != std::string::npos);
        AllocatorStartState bad;
        bad.segments.push_back({0, 2 * MiB, 0, AllocatorPool::Small, {{0, 4 * MiB, 512, 512}}});
        QVERIFY(replayAllocations({}, {}, bad).error.find("start state") == 0);
    }

    void replayFromStartState()
    {
        AllocatorStartState start;
        start.segments.push_back({Bytes(1) << 32,
                                  20 * MiB,
                                  0,
                                  AllocatorPool::Large,
                                  {{0, Bytes(1) << 32, 12 * MiB, 12 * MiB}}});
        const std::vector<AllocatorRequest> requests{release(0), alloc(1, 20 * MiB)};
        const ReplayResult r = replayAllocations(requests, {}, start);
        QVERIFY2(r.error.empty(), r.error.c_str());
        QCOMPARE(r.stats.reserved.peak, 20 * MiB); // the freed block merges back; no new segment
        QVERIFY(r.segment_events.empty());
    }

    // Recorded segment addresses: new segments take them, so equal-sized free blocks are chosen
    // by the device's addresses (here the second segment is the lower one).
    void replayWithDeviceAddresses()
    {
        const std::vector<AllocatorRequest> requests{alloc(0, 40 * MiB),
                                                     alloc(1, 40 * MiB),
                                                     release(0),
                                                     release(1),
                                                     alloc(2, 40 * MiB)};
        ReplayOptions options;
        options.segment_addresses = {Bytes(5) << 30, Bytes(3) << 30};
        options.record_addresses = true;
        const ReplayResult r = replayAllocations(requests, {}, {}, options);
        QCOMPARE(r.block_addresses,
                 (std::vector<Bytes>{Bytes(5) << 30, Bytes(3) << 30, Bytes(3) << 30}));
        const ReplayResult invented = replayAllocations(requests, {}, {}, {{}, true});
        QCOMPARE(invented.block_addresses.at(2), invented.block_addresses.at(0));
    }

    void allocatorConf()
    {
        AllocatorSettings s;
        std::string error;
        QVERIFY(parseAllocatorConf("expandable_segments:True, max_split_size_mb:128", s, error));
        QVERIFY(s.expandable_segments);
        QCOMPARE(*s.max_split_size, 128 * MiB);
        QVERIFY(parseAllocatorConf("roundup_power2_divisions:[256:1,512:2,>:4]", s, error));
        // The first entry also covers the smaller intervals; '>' rewrites from the last named on.
        const std::array<std::uint32_t, 16> expected{1, 1, 1, 1, 1, 1, 1, 1, 1, 4, 4, 4, 4, 4, 4, 4};
        QCOMPARE(s.roundup_power2_divisions, expected);
        QVERIFY(parseAllocatorConf("roundup_power2_divisions:4,garbage_collection_threshold:0.6",
                                   s,
                                   error));
        QCOMPARE(s.roundup_power2_divisions[15], 4u);
        QCOMPARE(s.garbage_collection_threshold, 0.6);

        AllocatorSettings round;
        QVERIFY(parseAllocatorConf(allocatorConfText(s), round, error));
        QCOMPARE(round.roundup_power2_divisions, s.roundup_power2_divisions);
        QCOMPARE(*round.max_split_size, *s.max_split_size);
        QCOMPARE(allocatorConfText(AllocatorSettings{}), std::string());
    }

    void allocatorConfErrors_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("message");
        QTest::newRow("too small") << QString("max_split_size_mb:20")
                                   << QString("column 19: max_split_size_mb must be more than 20");
        QTest::newRow("unknown") << QString("expandable_segments:True,foo:1")
                                 << QString("column 26: unknown option 'foo'");
        QTest::newRow("not a bool")
            << QString("expandable_segments:yes") << QString("column 21: expected True or False");
        QTest::newRow("threshold") << QString("garbage_collection_threshold:1.5")
                                   << QString("column 30: garbage_collection_threshold");
        QTest::newRow("not power of two")
            << QString("roundup_power2_divisions:3") << QString("power of two");
        QTest::newRow("open list")
            << QString("roundup_power2_divisions:[256:2") << QString("expected ']'");
        QTest::newRow("async") << QString("backend:cudaMallocAsync")
                               << QString("only backend:native");
    }
    void allocatorConfErrors()
    {
        QFETCH(QString, text);
        QFETCH(QString, message);
        AllocatorSettings s;
        s.expandable_segments = false;
        std::string error;
        QVERIFY(!parseAllocatorConf(text.toStdString(), s, error));
        QVERIFY2(QString::fromStdString(error).contains(message), error.c_str());
        QVERIFY(!s.expandable_segments); // untouched on error
    }
};

QTEST_APPLESS_MAIN(TestCachingAllocator)
#include "tst_caching_allocator.moc"
