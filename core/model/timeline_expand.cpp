// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/timeline_expand.h"

#include <algorithm>
#include <cmath>

namespace membudget {

std::size_t residentBlocks(const StepTimeline &tl)
{
    std::size_t n = 0;
    while (n < tl.blocks.size() && tl.blocks[n].stage == Stage::Resident)
        ++n;
    return n;
}

namespace {

// Each tensor's copies (a layer's weights stand for several) and the first instance number of each
// tensor: instances are dense, tensor by tensor, layer slot by layer slot, copy by copy, so a
// replay can keep its live blocks in a vector indexed by instance.
struct InstanceLayout
{
    std::vector<std::int64_t> copies;
    std::vector<std::int64_t> base;
    std::int64_t layerSlots = 0; // -1 .. layers + 1, for tensors per layer
    std::int64_t count = 0;
};

InstanceLayout instanceLayout(const StepTimeline &tl)
{
    InstanceLayout l;
    l.layerSlots = static_cast<std::int64_t>(tl.layers) + 3;
    l.copies.reserve(tl.tensors.size());
    l.base.reserve(tl.tensors.size());
    for (const TimelineTensor &t : tl.tensors) {
        const std::int64_t copies = std::max<std::int64_t>(1, std::llround(t.copies));
        l.copies.push_back(copies);
        l.base.push_back(l.count);
        l.count += (t.per_layer ? l.layerSlots : 1) * copies; // layer -1 only, unless per layer
    }
    return l;
}

} // namespace

std::int64_t instanceCount(const StepTimeline &timeline)
{
    return instanceLayout(timeline).count;
}

std::vector<ExpandedEvent> expandTimeline(
    const StepTimeline &tl, double tokens, double seq, std::size_t firstBlock, std::size_t endBlock)
{
    std::vector<ExpandedEvent> out;
    const InstanceLayout ids = instanceLayout(tl);
    endBlock = std::min(endBlock, tl.blocks.size());
    std::size_t most = 0; // zero-sized tensors aside
    for (std::size_t bi = firstBlock; bi < endBlock; ++bi)
        for (const TimelineEvent &e : tl.blocks[bi].events)
            most += static_cast<std::size_t>(tl.blocks[bi].repeat)
                    * static_cast<std::size_t>(ids.copies[static_cast<std::size_t>(e.tensor)]);
    out.reserve(most);
    for (std::size_t bi = firstBlock; bi < endBlock; ++bi) {
        const TimelineBlock &b = tl.blocks[bi];
        for (int r = 0; r < b.repeat; ++r) {
            for (std::size_t ei = 0; ei < b.events.size(); ++ei) {
                const TimelineEvent &e = b.events[ei];
                const auto ti = static_cast<std::size_t>(e.tensor);
                const TimelineTensor &t = tl.tensors[ti];
                const Bytes bytes = toBytes(t.size.at(tokens, seq));
                if (bytes <= 0)
                    continue;
                int layer = -1;
                if (t.per_layer)
                    layer = e.absolute ? e.layer : b.first_layer + r * b.layer_step + e.layer;
                const std::int64_t copies = ids.copies[ti];
                const std::int64_t first = ids.base[ti] + (layer + 1) * copies;
                for (std::int64_t c = 0; c < copies; ++c)
                    out.push_back({first + c,
                                   bytes,
                                   e.tensor,
                                   layer,
                                   static_cast<std::int32_t>(bi),
                                   t.stream,
                                   e.alloc,
                                   r,
                                   static_cast<std::int32_t>(ei)});
            }
        }
    }
    return out;
}

} // namespace membudget
