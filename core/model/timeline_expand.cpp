// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/timeline_expand.h"

#include <cmath>

namespace membudget {

std::size_t residentBlocks(const StepTimeline &tl)
{
    std::size_t n = 0;
    while (n < tl.blocks.size() && tl.blocks[n].stage == Stage::Resident)
        ++n;
    return n;
}

std::vector<ExpandedEvent> expandTimeline(const StepTimeline &tl,
                                          double tokens,
                                          double seq,
                                          std::size_t firstBlock)
{
    std::vector<ExpandedEvent> out;
    const std::int64_t layerSlots = static_cast<std::int64_t>(tl.layers) + 3; // -1 .. layers + 1
    for (std::size_t bi = firstBlock; bi < tl.blocks.size(); ++bi) {
        const TimelineBlock &b = tl.blocks[bi];
        for (int r = 0; r < b.repeat; ++r) {
            for (std::size_t ei = 0; ei < b.events.size(); ++ei) {
                const TimelineEvent &e = b.events[ei];
                const TimelineTensor &t = tl.tensors[static_cast<std::size_t>(e.tensor)];
                const Bytes bytes = toBytes(t.size.at(tokens, seq));
                if (bytes <= 0)
                    continue;
                int layer = -1;
                if (t.per_layer)
                    layer = e.absolute ? e.layer : b.first_layer + r * b.layer_step + e.layer;
                const std::int64_t copies = std::max<std::int64_t>(1, std::llround(t.copies));
                constexpr std::int64_t kCopySlots = std::int64_t(1) << 20;
                const std::int64_t base = (static_cast<std::int64_t>(e.tensor) * layerSlots
                                           + (layer + 1))
                                          * kCopySlots;
                for (std::int64_t c = 0; c < copies; ++c)
                    out.push_back({base + c,
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
