// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "base/units.h"

#include <cstdint>
#include <vector>

namespace membudget {

// The cached (free) blocks of one stream and pool, ordered by size and then address, which is the
// order PyTorch's best-fit search walks (BlockComparatorSize in CUDACachingAllocator.cpp).
// A training step keeps a few hundred cached blocks per pool (one per segment and per split
// remainder), so a single sorted vector spends its time moving its tail; this keeps sorted runs
// of fewer than 2 x kRun entries, found by a binary search over the runs' last entries, so an
// insertion or removal moves at most one short run, and allocates nothing once warm (emptied runs
// are kept for reuse). On the 10,000-request training step of tests/bench/bench_core.cpp (~300
// cached blocks): 7.7 M instructions and 0.55 ms CPU as one sorted vector, 5.5 M and 0.43 ms in
// runs of 8 to 15. Runs grow with the index (half the square root of its size, at least 8), so a
// model of thousands of layers, with a hundred thousand cached blocks, pays O(sqrt n) per change
// rather than moving tens of thousands of runs each time one empties.
class FreeBlockIndex
{
public:
    struct Entry
    {
        Bytes size = 0;
        Bytes address = 0;
        std::int32_t block = -1; // slot in the model's block table
    };
    // Where an entry sits; valid until the next insertion or removal.
    struct Position
    {
        std::uint32_t run = 0;
        std::uint32_t index = 0;
    };

    void insert(const Entry &entry);
    bool erase(Bytes size, Bytes address); // false when no such entry
    void eraseAt(Position position);

    // The first entry whose size is at least `size` (the smallest fitting block, lowest address
    // among equals), or end().
    Position lowerBound(Bytes size) const;
    Position end() const { return {static_cast<std::uint32_t>(m_runCount), 0}; }
    bool isEnd(Position p) const { return p.run >= m_runCount; }
    Position next(Position p) const;
    Position last() const; // the largest entry; only when !empty()
    const Entry &at(Position p) const { return m_runs[p.run][p.index]; }

    std::size_t count() const { return m_count; }
    bool empty() const { return m_count == 0; }
    // Every entry in order (copied into `out`, which is cleared first).
    void collect(std::vector<Entry> &out) const;

private:
    static constexpr std::size_t kRun = 8;

    std::size_t runLength() const;                       // a run splits when it reaches twice this
    std::size_t runFor(Bytes size, Bytes address) const; // first run whose last entry is not less
    void removeRun(std::size_t run);
    void noteTail(std::size_t run) { m_tails[run] = m_runs[run].back(); }

    std::vector<std::vector<Entry>> m_runs; // the first m_runCount are in use, none empty
    std::vector<Entry> m_tails;             // the last entry of each run, searched without
                                            // touching the runs
    std::size_t m_runCount = 0;
    std::size_t m_count = 0;
};

} // namespace membudget
