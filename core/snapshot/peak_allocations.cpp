// SPDX-License-Identifier: GPL-3.0-or-later
#include "snapshot/peak_allocations.h"

#include <algorithm>
#include <unordered_map>

namespace membudget::snapshot {

std::vector<AllocationSite> liveAllocationSites(const MemorySnapshot &snapshot,
                                                const AllocationHistory &history,
                                                std::int64_t event,
                                                std::size_t limit)
{
    // Key: the user frame's id, or one past the largest frame id for each other kind.
    const auto base = static_cast<std::uint64_t>(snapshot.frames.frameCount());
    std::unordered_map<std::uint64_t, AllocationSite> sites;
    for (const TracedAllocation &a : history.allocations) {
        if (!a.liveAfter(event))
            continue;
        AllocationSite site;
        std::uint64_t key = 0;
        if (const auto frame = snapshot.frames.topUserFrame(a.stack)) {
            site.kind = SiteKind::UserFrame;
            site.frame = *frame;
            key = *frame;
        } else {
            site.kind = a.stack != kEmptyStack          ? SiteKind::NoPythonFrame
                        : a.alloc_event == kBeforeTrace ? SiteKind::BeforeRecording
                                                        : SiteKind::NoStack;
            key = base + static_cast<std::uint64_t>(site.kind);
        }
        auto [it, fresh] = sites.emplace(key, site);
        it->second.bytes = addSat(it->second.bytes, a.requested_size);
        ++it->second.count;
    }
    std::vector<AllocationSite> out;
    out.reserve(sites.size());
    for (auto &[key, site] : sites)
        out.push_back(site);
    std::sort(out.begin(), out.end(), [](const AllocationSite &x, const AllocationSite &y) {
        if (x.bytes != y.bytes)
            return x.bytes > y.bytes;
        if (x.kind != y.kind)
            return x.kind < y.kind;
        return x.frame < y.frame;
    });
    if (limit > 0 && out.size() > limit)
        out.resize(limit);
    return out;
}

} // namespace membudget::snapshot
