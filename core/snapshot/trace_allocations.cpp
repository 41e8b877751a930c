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

std::string str(std::int64_t v)
{
    return std::to_string(v);
}

// Pairs allocs with their frees by address, event by event, and checks that they agree.
class Pairing
{
public:
    std::vector<TracedAllocation> traced; // allocated during the trace, in alloc order
    std::vector<TracedAllocation> older;  // allocated before it
    std::string problem;

    bool alloc(const TraceEvent &e, std::int64_t index)
    {
        const auto [it, fresh] = m_open.emplace(e.address, traced.size());
        if (!fresh)
            return fail("event " + str(index) + " allocates address " + str(e.address)
                        + ", which event " + str(traced[it->second].alloc_event)
                        + " allocated and nothing freed");
        traced.push_back({.address = e.address,
                          .requested_size = e.size,
                          .stream = e.stream,
                          .stack = e.stack,
                          .alloc_event = index});
        m_touched[e.address] = index;
        return true;
    }

    bool free(const TraceEvent &e, std::int64_t index)
    {
        if (const auto it = m_open.find(e.address); it != m_open.end()) {
            TracedAllocation &a = traced[it->second];
            if (a.requested_size != e.size)
                return fail("event " + str(index) + " frees " + str(e.size) + " bytes at address "
                            + str(e.address) + ", but event " + str(a.alloc_event) + " allocated "
                            + str(a.requested_size) + " there");
            a.free_event = index;
            m_open.erase(it);
        } else if (const auto t = m_touched.find(e.address); t != m_touched.end()) {
            return fail("event " + str(index) + " frees address " + str(e.address) + ", which event "
                        + str(t->second) + " already freed and nothing allocated since");
        } else {
            // Allocated before recording began: its own stack is unknown (the event's stack is
            // where it was freed).
            older.push_back({.address = e.address,
                             .requested_size = e.size,
                             .stream = e.stream,
                             .free_event = index});
        }
        m_touched[e.address] = index;
        return true;
    }

    // A block the snapshot holds as active_allocated: either a traced allocation still open, or
    // older than the trace.
    bool liveBlock(const Block &b, std::int64_t stream)
    {
        if (const auto it = m_open.find(b.address); it != m_open.end()) {
            TracedAllocation &a = traced[it->second];
            if (a.requested_size != b.requested_size)
                return fail("event " + str(a.alloc_event) + " allocates " + str(a.requested_size)
                            + " bytes at address " + str(b.address)
                            + " but the snapshot's block there has " + str(b.requested_size));
            a.block_size = b.size;
            m_open.erase(it);
            return true;
        }
        if (const auto t = m_touched.find(b.address); t != m_touched.end())
            return fail("the snapshot has a live block at address " + str(b.address)
                        + ", which event " + str(t->second) + " freed and nothing allocated since");
        older.push_back({.address = b.address,
                         .requested_size = b.requested_size,
                         .block_size = b.size,
                         .stream = stream,
                         .stack = b.stack});
        return true;
    }

    // After the live blocks: every allocation the trace leaves open must have been one of them.
    bool finish()
    {
        if (m_open.empty())
            return true;
        const TracedAllocation &a = traced[m_open.begin()->second];
        return fail("event " + str(a.alloc_event) + " allocates address " + str(a.address)
                    + " and the trace never frees it, but the snapshot has no live block there");
    }

private:
    std::unordered_map<std::int64_t, std::size_t> m_open; // address -> index into traced
    // Addresses the trace allocated or freed, with the event that last did: a block older than
    // the trace cannot be there any more unless the trace allocates it again.
    std::unordered_map<std::int64_t, std::int64_t> m_touched;

    bool fail(std::string message)
    {
        problem = std::move(message);
        return false;
    }
};

} // namespace

bool traceAllocations(const MemorySnapshot &snapshot,
                      int device,
                      AllocationHistory &out,
                      std::string &problem)
{
    out = AllocationHistory{};
    out.device = device;
    Pairing pairing;
    bool ok = true;
    if (const DeviceTrace *trace = traceOf(snapshot, device)) {
        for (std::size_t i = 0; ok && i < trace->events.size(); ++i) {
            const TraceEvent &e = trace->events[i];
            const auto index = static_cast<std::int64_t>(i);
            if (e.action == TraceAction::Alloc)
                ok = pairing.alloc(e, index);
            else if (e.action == TraceAction::FreeRequested)
                ok = pairing.free(e, index);
        }
    }
    for (const Segment &seg : snapshot.segments)
        for (const Block &b : seg.blocks)
            if (ok && seg.device == device && b.state == BlockState::ActiveAllocated)
                ok = pairing.liveBlock(b, seg.stream);
    if (!ok || !pairing.finish()) {
        problem = pairing.problem;
        return false;
    }
    out.allocations = std::move(pairing.older);
    out.allocations.insert(out.allocations.end(), pairing.traced.begin(), pairing.traced.end());
    return true;
}

} // namespace membudget::snapshot
