// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Allocated and reserved bytes of one device over its recorded trace, counting what was already
// there when recording began (reconstructed from the snapshot's final segments and the trace).
//
//   allocated(i) = allocated at start + sum of alloc sizes - sum of free_requested sizes up to
//                  and including event i; sizes are the requested (unrounded) sizes the trace
//                  records, and allocated at start = the snapshot's live blocks' requested sizes
//                  minus the trace's net change. (torch.cuda.memory_allocated() counts the
//                  allocator's rounded block sizes, a little more.)
//   reserved(i)  = reserved at start + segment_alloc/segment_map - segment_free/segment_unmap
//                  sizes; reserved at start = the snapshot's segment sizes minus the net change.
//
// These are the definitions of the project's snapshot collection (shared/snapshots/index.json),
// and what PyTorch's memory viewer plots as "allocated" and "reserved" over the trace.

#include "base/units.h"
#include "snapshot/memory_snapshot.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace membudget::snapshot {

inline constexpr std::int64_t kAtTraceStart = -1; // a peak that held before the first event

struct MeasuredTimeline
{
    int device = -1;
    std::size_t events = 0;
    std::array<std::size_t, 9> action_counts{}; // by TraceAction
    // Any alloc, free or segment event: without one, the snapshot holds no history to measure
    // (only its state when taken).
    bool has_history = false;

    Bytes allocated_at_start = 0; // requested bytes live when recording began
    Bytes reserved_at_start = 0;
    Bytes requested_at_snapshot = 0; // requested bytes live when the snapshot was taken
    Bytes allocated_at_snapshot = 0; // the same blocks' rounded sizes (torch.cuda.memory_allocated)
    Bytes reserved_at_snapshot = 0;
    // Frees of blocks allocated before recording began.
    std::size_t frees_of_earlier_blocks = 0;
    // Reserved was zero at the start and nothing older than the trace was freed: recording began
    // with an empty allocator, so the trace is the whole story.
    bool recorded_from_allocator_start = false;

    Bytes peak_allocated = 0;
    std::int64_t peak_allocated_event = kAtTraceStart; // the peak holds after this event
    Bytes peak_reserved = 0;
    std::int64_t peak_reserved_event = kAtTraceStart;

    std::int64_t first_time_us = kNoTime; // of the first and last events with a time
    std::int64_t last_time_us = kNoTime;

    std::vector<Bytes> allocated; // after each event
    std::vector<Bytes> reserved;

    std::size_t count(TraceAction a) const { return action_counts[static_cast<std::size_t>(a)]; }
};

// Measures `device`'s trace (any device with segments or a trace; see
// MemorySnapshot::busiestDevice). Fails with `problem` when the trace and the segments disagree
// (the trace would free more than was ever there) or byte counts pass 2^63.
bool measureTimeline(const MemorySnapshot &snapshot,
                     int device,
                     MeasuredTimeline &out,
                     std::string &problem);

} // namespace membudget::snapshot
