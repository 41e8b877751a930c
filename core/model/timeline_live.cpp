// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/timeline_live.h"

#include "model/timeline_peaks.h"

#include <algorithm>
#include <map>
#include <string>

namespace membudget {

namespace {

int layerOf(const TimelineBlock &b, const TimelineEvent &e, int repetition)
{
    if (e.absolute)
        return e.layer;
    return b.first_layer + repetition * b.layer_step + e.layer;
}

} // namespace

std::vector<LiveTensorGroup> liveAt(const StepTimeline &tl,
                                    const PeakMoment &moment,
                                    double tokens,
                                    double seq)
{
    std::map<std::pair<int, int>, int> live; // (tensor, layer) -> instances
    const int lastBlock = std::min<int>(moment.block, static_cast<int>(tl.blocks.size()) - 1);
    for (int bi = 0; bi <= lastBlock; ++bi) {
        const TimelineBlock &b = tl.blocks[static_cast<std::size_t>(bi)];
        const bool current = bi == moment.block;
        const int reps = current ? moment.repetition + 1 : b.repeat;
        for (int r = 0; r < reps; ++r) {
            const bool lastRep = current && r == moment.repetition;
            const int events = lastRep ? moment.event + 1 : static_cast<int>(b.events.size());
            for (int i = 0; i < events; ++i) {
                const TimelineEvent &e = b.events[static_cast<std::size_t>(i)];
                const bool perLayer = tl.tensors[static_cast<std::size_t>(e.tensor)].per_layer;
                const int layer = perLayer ? layerOf(b, e, r) : -1;
                live[{e.tensor, layer}] += e.alloc ? 1 : -1;
            }
        }
    }
    std::map<int, LiveTensorGroup> groups;
    for (const auto &[key, count] : live) {
        if (count <= 0)
            continue;
        LiveTensorGroup &g = groups[key.first];
        g.tensor = key.first;
        g.count += count;
        const int layer = key.second;
        if (layer >= 0) {
            g.first_layer = g.first_layer < 0 ? layer : std::min(g.first_layer, layer);
            g.last_layer = std::max(g.last_layer, layer);
        }
        const TimelineEvent e{key.first, 0, true, false};
        g.bytes += count * eventBytes(tl, e, tokens, seq);
    }
    std::vector<LiveTensorGroup> out;
    for (const auto &[tensor, g] : groups)
        if (g.bytes > 0)
            out.push_back(g);
    std::sort(out.begin(), out.end(), [](const LiveTensorGroup &a, const LiveTensorGroup &b) {
        return a.bytes > b.bytes;
    });
    return out;
}

std::string timelineTensorName(const TimelineTensor &t)
{
    switch (t.origin) {
    case TensorOrigin::Value:
    case TensorOrigin::State:
        return t.name;
    case TensorOrigin::Recomputed:
        return std::string(t.name) + " (recomputed)";
    case TensorOrigin::Grad:
        return std::string("gradient of ") + t.name;
    case TensorOrigin::GradPart:
        return std::string("gradient part of ") + t.name;
    case TensorOrigin::ParamGrad:
        return std::string(t.name) + " weight gradient";
    case TensorOrigin::ParamGradPart:
        return std::string(t.name) + " weight gradient part";
    case TensorOrigin::Workspace:
        return std::string(t.name) + " backward scratch";
    }
    return t.name;
}

} // namespace membudget
