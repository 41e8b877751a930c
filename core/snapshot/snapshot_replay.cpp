// SPDX-License-Identifier: GPL-3.0-or-later
#include "snapshot/snapshot_replay.h"

#include "allocator/block_size_policy.h"

#include <bit>
#include <unordered_map>

namespace membudget::snapshot {

namespace {

AllocatorPool modelPool(SegmentPool pool)
{
    return pool == SegmentPool::Small ? AllocatorPool::Small : AllocatorPool::Large;
}

// Turns the reconstructed start state and the requests into the model's terms: every live block
// and every alloc gets an id; free_completed frees the id live at its address.
class RequestBuilder
{
public:
    explicit RequestBuilder(const AllocatorSettings &settings)
        : m_settings(settings)
    {}

    AllocatorStartState start;
    std::vector<AllocatorRequest> requests;
    std::vector<Bytes> segmentAddresses; // of the trace's segment_alloc events, in order
    std::size_t inferred = 0;
    std::size_t skippedOoms = 0;
    std::size_t attemptedOoms = 0;
    bool attemptOoms = false;
    std::string problem;

    void seed(const TraceStartState &state)
    {
        for (const StartSegment &s : state.segments) {
            SeedSegment seg{s.address, s.size, s.stream, modelPool(s.pool), {}};
            for (std::size_t i = 0; i < s.live_blocks.size(); ++i) {
                const StartBlock &b = s.live_blocks[i];
                const Bytes end = i + 1 < s.live_blocks.size() ? s.live_blocks[i + 1].address
                                                               : s.address + s.size;
                const std::int64_t id = m_nextId++;
                seg.live_blocks.push_back(
                    {id, b.address, blockSize(b, seg.pool, end - b.address), b.requested_size});
                m_live[b.address] = id;
            }
            start.segments.push_back(std::move(seg));
        }
    }

    bool add(const AllocationRequest &r)
    {
        switch (r.kind) {
        case RequestKind::Alloc: {
            const std::int64_t id = m_nextId++;
            m_live[r.address] = id;
            requests.push_back({AllocatorRequest::Kind::Alloc, r.stream, id, r.size});
            return true;
        }
        case RequestKind::FreeCompleted: {
            const auto it = m_live.find(r.address);
            if (it == m_live.end()) {
                problem = "event " + std::to_string(r.event) + " (free_completed at address "
                          + std::to_string(r.address) + ") frees no block the replay holds";
                return false;
            }
            requests.push_back({AllocatorRequest::Kind::Free, r.stream, it->second, 0});
            m_live.erase(it);
            return true;
        }
        case RequestKind::Oom:
            if (attemptOoms) { // never freed: the program stopped there, or caught it and moved on
                ++attemptedOoms;
                requests.push_back({AllocatorRequest::Kind::Alloc, r.stream, m_nextId++, r.size});
            } else {
                ++skippedOoms;
            }
            return true;
        case RequestKind::FreeRequested:
            return true; // the block becomes reusable at its free_completed
        }
        return true;
    }

private:
    const AllocatorSettings &m_settings;
    std::unordered_map<std::int64_t, std::int64_t> m_live; // address -> id
    std::int64_t m_nextId = 0;

    // The recorded size, or the rounded request plus a remainder the allocator would have kept.
    Bytes blockSize(const StartBlock &b, AllocatorPool pool, Bytes room)
    {
        if (b.block_size >= 0)
            return b.block_size;
        ++inferred;
        const Bytes rounded = roundAllocationSize(b.requested_size, m_settings);
        if (room > rounded && !shouldSplit(pool, room, rounded, m_settings))
            return room;
        return rounded;
    }
};

} // namespace

bool modelSettings(const std::optional<RecordedAllocatorSettings> &recorded,
                   AllocatorSettings &out,
                   std::string &problem)
{
    out = AllocatorSettings{};
    if (!recorded)
        return true;
    if (recorded->max_split_size >= 0)
        out.max_split_size = recorded->max_split_size;
    out.garbage_collection_threshold = recorded->garbage_collection_threshold;
    out.expandable_segments = recorded->expandable_segments;
    // Keys are 1, 2, 4 ... 32768 MiB, the lower ends of the 16 intervals
    // (torch/csrc/cuda/memory_snapshot.cpp writes roundup_power2_divisions so).
    for (const auto &[mib, divisions] : recorded->roundup_power2_divisions) {
        const bool powerOfTwo = mib > 0 && std::has_single_bit(static_cast<std::uint64_t>(mib));
        const int interval = powerOfTwo ? std::countr_zero(static_cast<std::uint64_t>(mib)) : -1;
        if (interval < 0 || interval >= 16 || divisions < 0 || divisions > (1 << 20)) {
            problem = "roundup_power2_divisions entry " + std::to_string(mib) + ": "
                      + std::to_string(divisions) + " is not one the allocator model takes";
            return false;
        }
        out.roundup_power2_divisions[static_cast<std::size_t>(interval)]
            = static_cast<std::uint32_t>(divisions);
    }
    return true;
}

SnapshotReplay replaySnapshot(const MemorySnapshot &snapshot,
                              const ReplayInput &input,
                              Bytes capacity,
                              bool attemptOoms)
{
    SnapshotReplay out;
    out.capacity = capacity;
    AllocatorSettings settings;
    if (!modelSettings(input.settings, settings, out.problem))
        return out;
    settings.capacity = capacity;
    RequestBuilder builder(settings);
    builder.attemptOoms = attemptOoms;
    builder.seed(input.start);
    for (const AllocationRequest &r : input.requests)
        if (!builder.add(r)) {
            out.problem = builder.problem;
            return out;
        }
    for (const DeviceTrace &t : snapshot.device_traces)
        if (t.device == input.device)
            for (const TraceEvent &e : t.events)
                if (e.action == TraceAction::SegmentAlloc)
                    builder.segmentAddresses.push_back(e.address);
    ReplayOptions options;
    options.segment_addresses = builder.segmentAddresses;
    out.result = replayAllocations(builder.requests, settings, builder.start, options);
    out.ran = true;
    out.requests = builder.requests.size();
    out.skipped_ooms = builder.skippedOoms;
    out.attempted_ooms = builder.attemptedOoms;
    out.inferred_block_sizes = builder.inferred;
    return out;
}

} // namespace membudget::snapshot
