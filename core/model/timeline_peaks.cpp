// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/timeline_peaks.h"

#include <cstdlib>

namespace membudget {

namespace {

constexpr int kAllocated = kAllocatedComponentCount;
using Components = std::array<double, kAllocated>;

double total(const Components &c)
{
    double s = 0;
    for (double v : c)
        s += v;
    return s;
}

struct BlockScan
{
    Components delta{}; // change over one repetition, per component
    Components atMax{}; // prefix at the highest point of one repetition
    double maxPrefix = 0;
    int maxEvent = -1;
};

BlockScan scan(const StepTimeline &tl, const TimelineBlock &b, double tokens, double seq)
{
    BlockScan s;
    double prefix = 0;
    for (std::size_t i = 0; i < b.events.size(); ++i) {
        const TimelineEvent &e = b.events[i];
        const double v = eventBytes(tl, e, tokens, seq) * (e.alloc ? 1 : -1);
        const int c = static_cast<int>(tl.tensors[static_cast<std::size_t>(e.tensor)].component);
        if (c >= kAllocated)
            continue;
        s.delta[static_cast<std::size_t>(c)] += v;
        prefix += v;
        if (prefix > s.maxPrefix) {
            s.maxPrefix = prefix;
            s.maxEvent = static_cast<int>(i);
            s.atMax = s.delta;
        }
    }
    return s;
}

void record(PhasePeak &peak, const Components &at, const TimelineMoment &moment)
{
    const double sum = total(at);
    if (peak.present && sum <= peak.allocated)
        return;
    peak.present = true;
    peak.allocated = sum;
    peak.at = moment;
    for (int c = 0; c < kAllocated; ++c)
        peak.breakdown[static_cast<Component>(c)] = toBytes(at[static_cast<std::size_t>(c)]);
}

} // namespace

double eventBytes(const StepTimeline &tl, const TimelineEvent &e, double tokens, double seq)
{
    const TimelineTensor &t = tl.tensors[static_cast<std::size_t>(e.tensor)];
    return t.size.at(tokens, seq) * t.copies;
}

std::array<PhasePeak, kPhaseCount> timelinePeaks(const StepTimeline &tl, double tokens, double seq)
{
    std::array<PhasePeak, kPhaseCount> peaks{};
    Components running{};
    for (std::size_t bi = 0; bi < tl.blocks.size(); ++bi) {
        const TimelineBlock &b = tl.blocks[bi];
        PhasePeak &peak = peaks[static_cast<std::size_t>(b.phase)];
        const bool layered = b.decoder_layer;
        TimelineMoment start{static_cast<int>(bi), 0, -1, -1, b.stage};
        record(peak, running, start);
        const BlockScan s = scan(tl, b, tokens, seq);
        const double step = total(s.delta);
        const int reps = b.repeat > 0 ? b.repeat : 0;
        if (reps > 0 && s.maxEvent >= 0) {
            const int r = step > 0 ? reps - 1 : 0;
            Components at = running;
            for (int c = 0; c < kAllocated; ++c) {
                const auto ci = static_cast<std::size_t>(c);
                at[ci] += r * s.delta[ci] + s.atMax[ci];
            }
            int layer = layered ? b.first_layer + r * b.layer_step : -1;
            // A block of several layers a repetition (checkpointing one layer in N): the layer
            // of the tensor the peak's event made or freed.
            const TimelineEvent &e = b.events[static_cast<std::size_t>(s.maxEvent)];
            if (layered && std::abs(b.layer_step) > 1 && !e.absolute
                && tl.tensors[static_cast<std::size_t>(e.tensor)].per_layer)
                layer += e.layer;
            record(peak, at, {static_cast<int>(bi), r, s.maxEvent, layer, b.stage});
        }
        for (int c = 0; c < kAllocated; ++c) {
            const auto ci = static_cast<std::size_t>(c);
            running[ci] += reps * s.delta[ci];
            peak.at_end[static_cast<Component>(c)] = toBytes(running[ci]);
        }
    }
    return peaks;
}

} // namespace membudget
