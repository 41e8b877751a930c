// SPDX-License-Identifier: GPL-3.0-or-later
#include "snapshot/measured_timeline.h"

#include <unordered_set>

namespace membudget::snapshot {

namespace {

// Applies one event to the running sums; false on a sum past 2^63.
bool apply(const TraceEvent &e, Bytes &allocated, Bytes &reserved)
{
    switch (e.action) {
    case TraceAction::Alloc:
        return !__builtin_add_overflow(allocated, e.size, &allocated);
    case TraceAction::FreeRequested:
        return !__builtin_sub_overflow(allocated, e.size, &allocated);
    case TraceAction::SegmentAlloc:
    case TraceAction::SegmentMap:
        return !__builtin_add_overflow(reserved, e.size, &reserved);
    case TraceAction::SegmentFree:
    case TraceAction::SegmentUnmap:
        return !__builtin_sub_overflow(reserved, e.size, &reserved);
    case TraceAction::FreeCompleted:
    case TraceAction::Oom:
    case TraceAction::Snapshot:
        break;
    }
    return true;
}

bool changesMemory(TraceAction a)
{
    return a != TraceAction::FreeCompleted && a != TraceAction::Oom && a != TraceAction::Snapshot;
}

const char *kOverflow = "the trace's sizes add up past 2^63 bytes";

} // namespace

bool measureTimeline(const MemorySnapshot &snapshot,
                     int device,
                     MeasuredTimeline &out,
                     std::string &problem)
{
    out = MeasuredTimeline{};
    out.device = device;
    out.requested_at_snapshot = snapshot.requestedAtSnapshot(device);
    out.allocated_at_snapshot = snapshot.allocatedAtSnapshot(device);
    out.reserved_at_snapshot = snapshot.reservedAtSnapshot(device);
    const std::vector<TraceEvent> *events = &snapshot.traceOf(device);
    out.events = events->size();

    Bytes netAllocated = 0, netReserved = 0;
    for (const TraceEvent &e : *events)
        if (!apply(e, netAllocated, netReserved))
            return (problem = kOverflow), false;
    if (__builtin_sub_overflow(out.requested_at_snapshot, netAllocated, &out.allocated_at_start)
        || __builtin_sub_overflow(out.reserved_at_snapshot, netReserved, &out.reserved_at_start))
        return (problem = kOverflow), false;
    if (out.allocated_at_start < 0 || out.reserved_at_start < 0) {
        problem = std::string("the trace frees more ")
                  + (out.allocated_at_start < 0 ? "memory" : "segment memory")
                  + " than the snapshot's segments account for (by "
                  + std::to_string(out.allocated_at_start < 0 ? -out.allocated_at_start
                                                              : -out.reserved_at_start)
                  + " bytes): the trace and the segments do not belong together";
        return false;
    }

    Bytes allocated = out.allocated_at_start;
    Bytes reserved = out.reserved_at_start;
    out.peak_allocated = allocated;
    out.peak_reserved = reserved;
    out.allocated.reserve(events->size());
    out.reserved.reserve(events->size());
    std::unordered_set<std::int64_t> live; // addresses allocated during the trace, not yet freed
    for (std::size_t i = 0; i < events->size(); ++i) {
        const TraceEvent &e = (*events)[i];
        ++out.action_counts[static_cast<std::size_t>(e.action)];
        out.has_history = out.has_history || changesMemory(e.action);
        if (e.time_us != kNoTime) {
            if (out.first_time_us == kNoTime)
                out.first_time_us = e.time_us;
            out.last_time_us = e.time_us;
        }
        if (!apply(e, allocated, reserved))
            return (problem = kOverflow), false;
        if (allocated < 0 || reserved < 0) {
            problem = "event " + std::to_string(i) + " (" + traceActionName(e.action)
                      + ") frees more than was there: the trace and the segments do not belong "
                        "together";
            return false;
        }
        if (e.action == TraceAction::Alloc)
            live.insert(e.address);
        else if (e.action == TraceAction::FreeRequested && live.erase(e.address) == 0)
            ++out.frees_of_earlier_blocks;
        const auto index = static_cast<std::int64_t>(i);
        if (allocated > out.peak_allocated) {
            out.peak_allocated = allocated;
            out.peak_allocated_event = index;
        }
        if (reserved > out.peak_reserved) {
            out.peak_reserved = reserved;
            out.peak_reserved_event = index;
        }
        out.allocated.push_back(allocated);
        out.reserved.push_back(reserved);
    }
    out.recorded_from_allocator_start = out.has_history && out.reserved_at_start == 0
                                        && out.frees_of_earlier_blocks == 0;
    return true;
}

} // namespace membudget::snapshot
