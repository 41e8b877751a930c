// SPDX-License-Identifier: GPL-3.0-or-later
#include "allocator/allocator_replay.h"

namespace membudget {

namespace {

// A zero-byte allocation gets no block in PyTorch; its id is live until freed all the same.
constexpr BlockHandle kEmptyAllocation{-2, 0};

bool isLive(BlockHandle h)
{
    return h.index != -1;
}

std::size_t idBound(std::span<const AllocatorRequest> requests, const AllocatorStartState &start)
{
    std::size_t bound = 0;
    for (const AllocatorRequest &r : requests)
        bound += r.kind == AllocatorRequest::Kind::Alloc ? 1 : 0;
    for (const SeedSegment &seg : start.segments)
        bound += seg.live_blocks.size();
    return bound;
}

class Replayer
{
public:
    Replayer(std::span<const AllocatorRequest> requests,
             const AllocatorSettings &settings,
             const AllocatorStartState &start,
             const ReplayOptions &options)
        : m_model(settings)
        , m_live(idBound(requests, start))
        , m_options(options)
    {
        if (!options.segment_addresses.empty())
            m_model.useSegmentAddresses(options.segment_addresses);
    }

    bool seed(const AllocatorStartState &start, std::string &error);
    // False to stop: malformed request (error set) or out of memory (result.oom set).
    bool step(std::size_t index, const AllocatorRequest &r, ReplayResult &result);
    const CachingAllocatorModel &model() const { return m_model; }

private:
    bool knownId(std::int64_t id) const
    {
        return id >= 0 && id < static_cast<std::int64_t>(m_live.size());
    }

    CachingAllocatorModel m_model;
    std::vector<BlockHandle> m_live; // by id
    const ReplayOptions &m_options;
};

bool Replayer::seed(const AllocatorStartState &start, std::string &error)
{
    for (std::size_t s = 0; s < start.segments.size(); ++s) {
        const SeedSegment &seg = start.segments[s];
        if (!m_model.addSegment(seg.address, seg.size, seg.stream, seg.pool)) {
            error = "start state: segment " + std::to_string(s) + " at "
                    + std::to_string(seg.address)
                    + " is empty, not a multiple of 512 bytes or overlaps another";
            return false;
        }
        for (const SeedBlock &b : seg.live_blocks) {
            const bool freshId = knownId(b.id) && !isLive(m_live[b.id]);
            const BlockHandle h
                = freshId ? m_model.addLiveBlock(b.address, b.size, b.requested, seg.stream)
                          : BlockHandle{};
            if (h.isNull()) {
                error = "start state: block " + std::to_string(b.id) + " at "
                        + std::to_string(b.address) + " has a bad or repeated id, or does not lie "
                        + "in a free part of segment " + std::to_string(s);
                return false;
            }
            m_live[b.id] = h;
        }
    }
    m_model.resetPeaks();
    return true;
}

bool Replayer::step(std::size_t index, const AllocatorRequest &r, ReplayResult &result)
{
    auto fail = [&](const std::string &what) {
        result.error = "request " + std::to_string(index) + ": id " + std::to_string(r.id) + what;
        return false;
    };
    if (r.kind == AllocatorRequest::Kind::EmptyCache) {
        m_model.emptyCache();
        return true;
    }
    if (!knownId(r.id))
        return fail(" outside 0.." + std::to_string(m_live.size()) + " (number the allocations)");
    BlockHandle &live = m_live[r.id];
    if (r.kind == AllocatorRequest::Kind::Free) {
        if (live.index != kEmptyAllocation.index && !m_model.free(live))
            return fail(" is not live");
        live = {};
        return true;
    }
    if (isLive(live) || r.size < 0)
        return fail(r.size < 0 ? " has a negative size" : " is already live");
    const AllocationResult a = m_model.allocate(r.size, r.stream);
    if (!a.ok()) {
        result.fits = false;
        result.failed_at = index;
        result.oom = a.oom;
        return false;
    }
    live = a.handle.isNull() ? kEmptyAllocation : a.handle;
    if (m_options.record_addresses)
        result.block_addresses.push_back(m_model.blockAddress(a.handle));
    return true;
}

} // namespace

ReplayResult replayAllocations(std::span<const AllocatorRequest> requests,
                               const AllocatorSettings &settings,
                               const AllocatorStartState &start,
                               const ReplayOptions &options)
{
    ReplayResult result;
    Replayer replayer(requests, settings, start, options);
    if (replayer.seed(start, result.error)) {
        for (std::size_t i = 0; i < requests.size(); ++i) {
            if (!replayer.step(i, requests[i], result))
                break;
            result.replayed = i + 1;
        }
    }
    const CachingAllocatorModel &model = replayer.model();
    result.stats = model.stats();
    result.segment_events = model.segmentEvents();
    result.segments = model.segments();
    return result;
}

} // namespace membudget
