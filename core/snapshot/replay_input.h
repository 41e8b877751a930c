// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// What a caching-allocator model needs to replay one device's trace and be checked against what
// PyTorch did: the allocator's state when recording began (its segments, with the blocks that
// were live in them) and the ordered requests the program made (alloc and free with address,
// size and stream). The measured answer to compare with is MeasuredTimeline::peak_reserved, and
// the trace's own segment_alloc/segment_free events say which segments PyTorch really created.

#include "base/units.h"
#include "snapshot/memory_snapshot.h"
#include "snapshot/trace_allocations.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace membudget::snapshot {

struct StartBlock
{
    std::int64_t address = 0;
    Bytes requested_size = 0;
    Bytes block_size = -1; // the rounded size when the snapshot still holds the block, else -1
    std::int64_t stream = 0;
};

struct StartSegment
{
    std::int64_t address = 0;
    Bytes size = 0;
    std::int64_t stream = 0;
    SegmentPool pool = SegmentPool::Large;
    // False for a segment the trace frees and the snapshot no longer holds: its pool is then
    // inferred from its size (only small-pool segments are exactly 2 MiB, kSmallBuffer in
    // c10/cuda/CUDACachingAllocator.cpp; large ones are 20 MiB or rounded requests over 10 MiB).
    bool pool_known = true;
    bool is_expandable = false;
    std::vector<StartBlock> live_blocks; // in address order; the rest of the segment was free
};

struct TraceStartState
{
    int device = 0;
    std::vector<StartSegment> segments; // in address order
    Bytes reserved = 0;                 // sum of segment sizes
    Bytes allocated = 0;                // sum of live blocks' requested sizes
};

enum class RequestKind : std::uint8_t {
    Alloc,         // the program asks for `size` bytes; PyTorch answered with `address`
    FreeRequested, // the program releases the block at `address`
    FreeCompleted, // the block at `address` can be reused (other streams are done with it)
    Oom,           // a request for `size` bytes failed
};

struct AllocationRequest
{
    RequestKind kind = RequestKind::Alloc;
    std::int64_t address = 0;
    Bytes size = 0; // requested bytes, as the program asked (unrounded)
    std::int64_t stream = 0;
    std::size_t event = 0; // index into the device's trace events
};

struct ReplayInput
{
    int device = 0;
    TraceStartState start;
    std::vector<AllocationRequest> requests; // in trace order
    std::optional<RecordedAllocatorSettings> settings;
};

// The state when recording began: the snapshot's segments with the trace's segment_alloc and
// segment_free undone (walking the trace backwards), holding the blocks that were live at the
// trace's start (from `history`). Fails with `problem` when the trace and the segments disagree, a
// live block lies in no segment, or the trace maps and unmaps expandable segments (not
// reconstructed; the measured timeline still counts them).
bool traceStartState(const MemorySnapshot &snapshot,
                     const AllocationHistory &history,
                     TraceStartState &out,
                     std::string &problem);

// The device's allocation requests in trace order.
std::vector<AllocationRequest> allocationRequests(const MemorySnapshot &snapshot, int device);

// Both of the above for `device`.
bool replayInput(const MemorySnapshot &snapshot,
                 const AllocationHistory &history,
                 ReplayInput &out,
                 std::string &problem);

} // namespace membudget::snapshot
