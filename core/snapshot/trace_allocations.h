// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Every allocation a device's trace touches, with when it began and ended: allocations made during
// the trace (alloc paired with its free_requested by address), blocks allocated before recording
// began and freed during it (a free_requested with no alloc before it), and blocks allocated
// before recording and still live at the snapshot (active_allocated blocks no traced alloc
// explains). This is what was live at any point of the trace, including at its start.

#include "base/units.h"
#include "snapshot/memory_snapshot.h"

#include <cstdint>
#include <string>
#include <vector>

namespace membudget::snapshot {

inline constexpr std::int64_t kBeforeTrace = -1; // alloc_event of a block older than the trace
inline constexpr std::int64_t kStillLive = -1;   // free_event of a block live at the snapshot

struct TracedAllocation
{
    std::int64_t address = 0;
    Bytes requested_size = 0;
    Bytes block_size = -1; // rounded size, known only for blocks still in the snapshot's segments
    std::int64_t stream = 0;
    StackId stack = kEmptyStack;             // the allocation's stack (empty if before the trace)
    std::int64_t alloc_event = kBeforeTrace; // index into the device's trace events
    std::int64_t free_event = kStillLive;    // its free_requested event

    bool liveAfter(std::int64_t event) const // event -1: at the start of the trace
    {
        return alloc_event <= event && (free_event == kStillLive || free_event > event);
    }
};

struct AllocationHistory
{
    int device = 0;
    std::vector<TracedAllocation> allocations; // pre-trace blocks first, then in alloc order
};

// Pairs the trace of `device` with the snapshot's blocks. Fails with `problem` when they disagree:
// an address allocated twice without a free, a free of another size than its alloc, an address
// freed twice with no alloc between, a live block where the trace freed the last one, or an
// allocation the trace leaves live that is not an active_allocated block of the same requested
// size in the snapshot.
bool traceAllocations(const MemorySnapshot &snapshot,
                      int device,
                      AllocationHistory &out,
                      std::string &problem);

} // namespace membudget::snapshot
