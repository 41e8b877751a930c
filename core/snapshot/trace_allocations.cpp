// SPDX-License-Identifier: GPL-3.0-or-later
#include "snapshot/trace_allocations.h"

#include <unordered_map>

namespace membudget::snapshot {

namespace {

const DeviceTrace *traceOf(const MemorySnapshot &snapshot, int device)
{
    for (const DeviceTrace &t : snapshot.device_traces)
        if (t.device == device)
            return &t;
    return nullptr;
}

} // namespace

bool traceAllocations(const MemorySnapshot &snapshot,
                      int device,
                      AllocationHistory &out,
                      std::string &problem)
{
    out = AllocationHistory{};
    out.device = device;
    std::vector<TracedAllocation> traced;
    std::vector<TracedAllocation> older;
    std::unordered_map<std::int64_t, std::size_t> open; // address -> index into traced
    // Addresses the trace allocated or freed, with the event that last did: a block older than
    // the trace cannot be there any more unless the trace allocates it again.
    std::unordered_map<std::int64_t, std::size_t> touched;
    if (const DeviceTrace *trace = traceOf(snapshot, device)) {
        const auto &events = trace->events;
        for (std::size_t i = 0; i < events.size(); ++i) {
            const TraceEvent &e = events[i];
            const auto index = static_cast<std::int64_t>(i);
            if (e.action == TraceAction::Alloc) {
                const auto [it, fresh] = open.emplace(e.address, traced.size());
                if (!fresh) {
                    problem = "event " + std::to_string(i) + " allocates address "
                              + std::to_string(e.address) + ", which event "
                              + std::to_string(traced[it->second].alloc_event)
                              + " allocated and nothing freed";
                    return false;
                }
                TracedAllocation a;
                a.address = e.address;
                a.requested_size = e.size;
                a.stream = e.stream;
                a.stack = e.stack;
                a.alloc_event = index;
                traced.push_back(a);
                touched[e.address] = i;
            } else if (e.action == TraceAction::FreeRequested) {
                if (const auto it = open.find(e.address); it != open.end()) {
                    TracedAllocation &a = traced[it->second];
                    if (a.requested_size != e.size) {
                        problem = "event " + std::to_string(i) + " frees " + std::to_string(e.size)
                                  + " bytes at address " + std::to_string(e.address)
                                  + ", but event " + std::to_string(a.alloc_event) + " allocated "
                                  + std::to_string(a.requested_size) + " there";
                        return false;
                    }
                    a.free_event = index;
                    open.erase(it);
                    touched[e.address] = i;
                } else if (const auto t = touched.find(e.address); t != touched.end()) {
                    problem = "event " + std::to_string(i) + " frees address "
                              + std::to_string(e.address) + ", which event "
                              + std::to_string(t->second)
                              + " already freed and nothing allocated since";
                    return false;
                } else {
                    touched[e.address] = i;
                    // Allocated before recording began: its own stack is unknown (the event's
                    // stack is where it was freed).
                    TracedAllocation a;
                    a.address = e.address;
                    a.requested_size = e.size;
                    a.stream = e.stream;
                    a.free_event = index;
                    older.push_back(a);
                }
            }
        }
    }
    // The snapshot's live blocks: either a traced allocation still open, or older than the trace.
    for (const Segment &seg : snapshot.segments) {
        if (seg.device != device)
            continue;
        for (const Block &b : seg.blocks) {
            if (b.state != BlockState::ActiveAllocated)
                continue;
            if (const auto it = open.find(b.address); it != open.end()) {
                TracedAllocation &a = traced[it->second];
                if (a.requested_size != b.requested_size) {
                    problem = "event " + std::to_string(a.alloc_event) + " allocates "
                              + std::to_string(a.requested_size) + " bytes at address "
                              + std::to_string(b.address) + " but the snapshot's block there has "
                              + std::to_string(b.requested_size);
                    return false;
                }
                a.block_size = b.size;
                open.erase(it);
                continue;
            }
            if (const auto t = touched.find(b.address); t != touched.end()) {
                problem = "the snapshot has a live block at address " + std::to_string(b.address)
                          + ", which event " + std::to_string(t->second)
                          + " freed and nothing allocated since";
                return false;
            }
            TracedAllocation a;
            a.address = b.address;
            a.requested_size = b.requested_size;
            a.block_size = b.size;
            a.stream = seg.stream;
            a.stack = b.stack;
            older.push_back(a);
        }
    }
    if (!open.empty()) {
        const TracedAllocation &a = traced[open.begin()->second];
        problem = "event " + std::to_string(a.alloc_event) + " allocates address "
                  + std::to_string(a.address)
                  + " and the trace never frees it, but the snapshot has no live block there";
        return false;
    }
    out.allocations = std::move(older);
    out.allocations.insert(out.allocations.end(), traced.begin(), traced.end());
    return true;
}

} // namespace membudget::snapshot
