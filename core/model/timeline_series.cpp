// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/timeline_series.h"

#include "model/step_model.h"

#include <algorithm>

namespace membudget {

namespace {

int componentIndex(const StepTimeline &tl, const ExpandedEvent &e)
{
    return static_cast<int>(tl.tensors[static_cast<std::size_t>(e.tensor)].component);
}

ComponentBytes residentComponents(const StepTimeline &tl)
{
    ComponentBytes live{};
    const auto resident = static_cast<std::int32_t>(residentBlocks(tl));
    for (const ExpandedEvent &e : expandTimeline(tl, 0, 1, 0)) { // fixed sizes: any shape
        if (e.block >= resident)
            break;
        const int c = componentIndex(tl, e);
        if (c < kAllocatedComponentCount)
            live[static_cast<std::size_t>(c)] += e.alloc ? e.bytes : -e.bytes;
    }
    return live;
}

std::vector<TimelineStageSpan> stageSpans(const StepTimeline &tl,
                                          const std::vector<ExpandedEvent> &events)
{
    std::vector<TimelineStageSpan> spans;
    for (std::size_t i = 0; i < events.size(); ++i) {
        const TimelineBlock &b = tl.blocks[static_cast<std::size_t>(events[i].block)];
        if (spans.empty() || spans.back().stage != b.stage || spans.back().phase != b.phase)
            spans.push_back({b.stage, b.phase, i, i + 1});
        else
            spans.back().end = i + 1;
    }
    return spans;
}

} // namespace

Bytes TimelineSeries::residentTotal() const
{
    Bytes sum = 0;
    for (Bytes b : resident)
        sum = addSat(sum, b);
    return sum;
}

const TimelineStageSpan *TimelineSeries::stageAt(std::size_t position) const
{
    for (const TimelineStageSpan &s : stages)
        if (position < s.end || &s == &stages.back())
            return &s;
    return nullptr;
}

TimelineSeries timelineSeries(const StepModel &model,
                              std::int64_t microBatch,
                              std::int64_t sequence,
                              ReservedSeries reserved)
{
    TimelineSeries out;
    if (!model.valid() || microBatch < 1 || sequence < 1)
        return out;
    const StepTimeline &tl = model.timeline();
    const double seq = static_cast<double>(sequence);
    out.micro_batch = microBatch;
    out.sequence = sequence;
    const bool replays = reserved == ReservedSeries::Replay || !model.reserveAssumed();
    // At the input's own shape the estimate's replay has played these events already.
    const bool reference = replays && microBatch == model.input().training.micro_batch_size
                           && sequence == model.input().training.sequence_length;
    out.events = reference ? model.referenceEvents()
                           : expandTimeline(tl,
                                            static_cast<double>(microBatch) * seq,
                                            seq,
                                            residentBlocks(tl));
    out.resident = residentComponents(tl);
    out.stages = stageSpans(tl, out.events);

    out.allocated.reserve(out.events.size() + 1);
    Bytes live = out.residentTotal();
    out.allocated.push_back(live);
    for (const ExpandedEvent &e : out.events) {
        live += e.alloc ? e.bytes : -e.bytes;
        out.allocated.push_back(live);
    }
    out.peak = static_cast<std::size_t>(std::max_element(out.allocated.begin(), out.allocated.end())
                                        - out.allocated.begin());

    if (!replays)
        return out;
    // Reserved: the same replay as the estimate's (the scenario's allocator settings, no limit).
    const ResidentAllocatorState &resident = model.resident(model.allocatorSettings());
    std::vector<Bytes> after;
    if (reference) {
        out.replay = model.referenceReplay();
        after = model.referenceReservedAfter();
    } else {
        out.replay = replayStepEvents(tl, out.events, resident, after);
    }
    out.reserved.reserve(out.allocated.size());
    out.reserved.push_back(resident.model.stats().reserved.current);
    out.reserved.insert(out.reserved.end(), after.begin(), after.end());
    out.reserved.resize(out.allocated.size(), out.reserved.back()); // never short without a limit
    return out;
}

std::vector<ComponentBytes> componentsAt(const StepTimeline &tl,
                                         const TimelineSeries &series,
                                         const std::vector<std::size_t> &positions)
{
    std::vector<ComponentBytes> out;
    out.reserve(positions.size());
    ComponentBytes live = series.resident;
    std::size_t next = 0; // events applied so far
    for (std::size_t p : positions) {
        p = std::min(p, series.events.size());
        for (; next < p; ++next) {
            const ExpandedEvent &e = series.events[next];
            const int c = componentIndex(tl, e);
            if (c < kAllocatedComponentCount)
                live[static_cast<std::size_t>(c)] += e.alloc ? e.bytes : -e.bytes;
        }
        out.push_back(live);
    }
    return out;
}

PeakMoment momentAt(const StepTimeline &tl, const TimelineSeries &series, std::size_t position)
{
    if (position > 0 && position <= series.events.size())
        return series.events[position - 1].moment(tl);
    PeakMoment m;
    m.block = static_cast<int>(residentBlocks(tl)); // the step's first block, before its events
    m.stage = m.block < static_cast<int>(tl.blocks.size())
                  ? tl.blocks[static_cast<std::size_t>(m.block)].stage
                  : Stage::Resident;
    return m;
}

} // namespace membudget
