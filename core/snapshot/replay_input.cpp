// SPDX-License-Identifier: GPL-3.0-or-later
#include "snapshot/replay_input.h"

#include <algorithm>
#include <iterator>
#include <map>

namespace membudget::snapshot {

namespace {

constexpr Bytes kSmallSegmentBytes = 2 * kMiB; // kSmallBuffer, c10/cuda/CUDACachingAllocator.cpp

// The device's segments as the snapshot holds them, by address.
std::map<std::int64_t, StartSegment> finalSegments(const MemorySnapshot &snapshot, int device)
{
    std::map<std::int64_t, StartSegment> segments;
    for (const Segment &s : snapshot.segments) {
        if (s.device != device)
            continue;
        StartSegment seg;
        seg.address = s.address;
        seg.size = s.total_size;
        seg.stream = s.stream;
        seg.pool = s.pool;
        seg.is_expandable = s.is_expandable;
        segments[s.address] = seg;
    }
    return segments;
}

// Expandable segments map and unmap pages inside one reserved range, which the walk back does not
// take apart. It need not when the trace mapped or allocated every byte the snapshot holds: then
// recording began with nothing reserved (a block older than the trace is refused later, as it
// lies in no segment).
bool beganEmpty(const std::vector<TraceEvent> &events,
                const std::map<std::int64_t, StartSegment> &segments)
{
    Bytes net = 0, held = 0;
    for (const TraceEvent &e : events) {
        if (e.action == TraceAction::SegmentMap || e.action == TraceAction::SegmentAlloc)
            net += e.size;
        else if (e.action == TraceAction::SegmentUnmap || e.action == TraceAction::SegmentFree)
            net -= e.size;
    }
    for (const auto &[address, seg] : segments)
        held += seg.size;
    return net == held;
}

// Walks the trace backwards from the final segments, undoing each segment_alloc and segment_free.
bool undoSegmentEvents(const std::vector<TraceEvent> &events,
                       std::map<std::int64_t, StartSegment> &segments,
                       std::string &problem)
{
    const auto mapping = std::find_if(events.begin(), events.end(), [](const TraceEvent &e) {
        return e.action == TraceAction::SegmentMap || e.action == TraceAction::SegmentUnmap;
    });
    if (mapping != events.end()) {
        if (beganEmpty(events, segments)) {
            segments.clear();
            return true;
        }
        problem = "event " + std::to_string(mapping - events.begin()) + " ("
                  + traceActionName(mapping->action)
                  + "): the state before expandable segments were mapped is reconstructed only "
                    "for a trace recorded from an empty allocator";
        return false;
    }
    for (std::size_t i = events.size(); i-- > 0;) {
        const TraceEvent &e = events[i];
        const auto at = [&] {
            return "event " + std::to_string(i) + " (" + traceActionName(e.action) + " at address "
                   + std::to_string(e.address) + ")";
        };
        if (e.action == TraceAction::SegmentAlloc) {
            const auto it = segments.find(e.address);
            if (it == segments.end() || it->second.size != e.size) {
                problem = at() + ": the snapshot has no segment of " + std::to_string(e.size)
                          + " bytes there, and the trace does not free one";
                return false;
            }
            segments.erase(it);
        } else if (e.action == TraceAction::SegmentFree) {
            if (segments.count(e.address) != 0) {
                problem = at()
                          + ": the snapshot still holds a segment there, and the trace "
                            "never allocates it again";
                return false;
            }
            StartSegment seg;
            seg.address = e.address;
            seg.size = e.size;
            seg.stream = e.stream;
            seg.pool = e.size == kSmallSegmentBytes ? SegmentPool::Small : SegmentPool::Large;
            seg.pool_known = false;
            segments[e.address] = seg;
        }
    }
    return true;
}

} // namespace

bool traceStartState(const MemorySnapshot &snapshot,
                     const AllocationHistory &history,
                     TraceStartState &out,
                     std::string &problem)
{
    out = TraceStartState{};
    out.device = history.device;
    auto segments = finalSegments(snapshot, history.device);
    if (!undoSegmentEvents(snapshot.traceOf(history.device), segments, problem))
        return false;
    for (const TracedAllocation &a : history.allocations) {
        if (a.alloc_event != kBeforeTrace)
            continue;
        // The segment that holds the block: the last one starting at or below its address.
        auto it = segments.upper_bound(a.address);
        if (it == segments.begin()
            || a.address - std::prev(it)->first >= std::prev(it)->second.size) {
            problem = "a block live when recording began (" + std::to_string(a.requested_size)
                      + " bytes at address " + std::to_string(a.address)
                      + ") lies in no segment of that time";
            return false;
        }
        std::prev(it)->second.live_blocks.push_back(
            {a.address, a.requested_size, a.block_size, a.stream});
        out.allocated = addSat(out.allocated, a.requested_size);
    }
    for (auto &[address, seg] : segments) {
        std::sort(seg.live_blocks.begin(),
                  seg.live_blocks.end(),
                  [](const StartBlock &x, const StartBlock &y) { return x.address < y.address; });
        out.reserved = addSat(out.reserved, seg.size);
        out.segments.push_back(std::move(seg));
    }
    return true;
}

std::vector<AllocationRequest> allocationRequests(const MemorySnapshot &snapshot, int device)
{
    std::vector<AllocationRequest> requests;
    const auto &events = snapshot.traceOf(device);
    for (std::size_t i = 0; i < events.size(); ++i) {
        const TraceEvent &e = events[i];
        RequestKind kind;
        switch (e.action) {
        case TraceAction::Alloc:
            kind = RequestKind::Alloc;
            break;
        case TraceAction::FreeRequested:
            kind = RequestKind::FreeRequested;
            break;
        case TraceAction::FreeCompleted:
            kind = RequestKind::FreeCompleted;
            break;
        case TraceAction::Oom:
            kind = RequestKind::Oom;
            break;
        default:
            continue;
        }
        requests.push_back({kind, e.address, e.size, e.stream, i});
    }
    return requests;
}

bool replayInput(const MemorySnapshot &snapshot,
                 const AllocationHistory &history,
                 ReplayInput &out,
                 std::string &problem)
{
    out = ReplayInput{};
    out.device = history.device;
    if (!traceStartState(snapshot, history, out.start, problem))
        return false;
    out.requests = allocationRequests(snapshot, history.device);
    out.settings = snapshot.allocator_settings;
    return true;
}

} // namespace membudget::snapshot
