// SPDX-License-Identifier: GPL-3.0-or-later
#include "allocator/step_replay.h"

#include "model/timeline_expand.h"

#include <algorithm>
#include <span>

namespace membudget {

namespace {

PeakMoment momentOf(const StepTimeline &tl, const ExpandedEvent &e)
{
    PeakMoment m;
    m.block = e.block;
    m.layer = e.layer;
    m.stage = tl.blocks[static_cast<std::size_t>(e.block)].stage;
    return m;
}

// Plays events onto `model`; false at the first allocation that fails. `reservedAfter`, when
// given, receives the reserved bytes after each event played.
bool play(const StepTimeline &tl,
          std::span<const ExpandedEvent> events,
          ResidentAllocatorState &s,
          StepReplay &r,
          std::vector<Bytes> *reservedAfter = nullptr)
{
    if (reservedAfter)
        reservedAfter->reserve(reservedAfter->size() + events.size());
    int lastBlock = -1;
    for (const ExpandedEvent &e : events) {
        const auto phase = static_cast<std::size_t>(
            tl.blocks[static_cast<std::size_t>(e.block)].phase);
        if (e.block != lastBlock) // what a phase starts with counts for it
            r.reserved[phase] = std::max(r.reserved[phase], s.model.stats().reserved.current);
        lastBlock = e.block;
        if (e.alloc) {
            const AllocationResult a = s.model.allocate(e.bytes, e.stream);
            if (!a.ok()) {
                r.fits = false;
                r.oom = a.oom;
                r.oom_at = momentOf(tl, e);
                return false;
            }
            const auto i = static_cast<std::size_t>(e.instance);
            if (i >= s.live.size())
                s.live.resize(i + 1);
            s.live[i] = a.handle;
        } else if (const auto i = static_cast<std::size_t>(e.instance);
                   i < s.live.size() && !s.live[i].isNull()) {
            s.model.free(s.live[i]);
            s.live[i] = BlockHandle{};
        }
        r.reserved[phase] = std::max(r.reserved[phase], s.model.stats().reserved.current);
        if (reservedAfter)
            reservedAfter->push_back(s.model.stats().reserved.current);
    }
    return true;
}

void finish(const ResidentAllocatorState &s, StepReplay &r)
{
    const AllocatorStats &st = s.model.stats();
    r.peak_reserved = std::max(st.reserved.peak, st.reserved.current);
    r.peak_allocated = st.allocated.peak;
    r.fragmentation_at_peak = st.fragmentationAtReservedPeak();
    r.segments = st.segments.peak;
    r.cache_flushes = st.cache_flushes;
}

bool isOptimizerState(const StepTimeline &tl, const ExpandedEvent &e)
{
    return tl.tensors[static_cast<std::size_t>(e.tensor)].component == Component::OptimizerStates;
}

// Plays `events`, the optimizer states' allocations `states` placed where the optimizer step
// begins (torch.optim makes them in `_init_group`, before the update's first kernel).
bool playWithStatesMadeInStep(const StepTimeline &tl,
                              const std::vector<ExpandedEvent> &events,
                              const std::vector<ExpandedEvent> &states,
                              ResidentAllocatorState &s,
                              StepReplay &r)
{
    const auto stepBegins = std::find_if(events.begin(), events.end(), [&](const ExpandedEvent &e) {
        return tl.blocks[static_cast<std::size_t>(e.block)].stage == Stage::OptimizerStep;
    });
    const auto split = static_cast<std::size_t>(stepBegins - events.begin());
    const std::span<const ExpandedEvent> all(events);
    return play(tl, all.first(split), s, r) && play(tl, states, s, r)
           && play(tl, all.subspan(split), s, r);
}

// The first step's figures into the steady step's `into`: the peaks over both, and its failure if
// it failed (the model's count of cache releases runs on through both steps already).
void mergeFirstStep(StepReplay &into, const StepReplay &first)
{
    for (std::size_t p = 0; p < into.reserved.size(); ++p)
        into.reserved[p] = std::max(into.reserved[p], first.reserved[p]);
    if (first.peak_reserved > into.peak_reserved) {
        into.peak_reserved = first.peak_reserved;
        into.fragmentation_at_peak = first.fragmentation_at_peak;
    }
    into.peak_allocated = std::max(into.peak_allocated, first.peak_allocated);
    into.segments = std::max(into.segments, first.segments);
    if (!first.fits) {
        into.fits = false;
        into.oom = first.oom;
        into.oom_at = first.oom_at;
    }
}

// The next step starts where the timeline's resident blocks say a step starts: what the step freed
// of them comes back. The gradients of earlier micro-batches, which zero_grad(set_to_none=True)
// frees at the step's end, exist again before the modelled (last) micro-batch of the next step;
// left freed, a replay of that step counted no gradients in its forward.
bool remakeFreedResidents(const StepTimeline &tl,
                          const std::vector<ExpandedEvent> &resident,
                          ResidentAllocatorState &s,
                          StepReplay &r)
{
    std::vector<ExpandedEvent> freed;
    for (const ExpandedEvent &e : resident) {
        const auto i = static_cast<std::size_t>(e.instance);
        if (e.alloc && (i >= s.live.size() || s.live[i].isNull()))
            freed.push_back(e);
    }
    return play(tl, freed, s, r);
}

} // namespace

ResidentAllocatorState firstStep(const StepTimeline &tl,
                                 const std::vector<ExpandedEvent> &stepEvents,
                                 const AllocatorSettings &settings,
                                 StepReplay &r)
{
    ResidentAllocatorState s{CachingAllocatorModel(settings), {}};
    s.live.resize(static_cast<std::size_t>(instanceCount(tl)));
    std::vector<ExpandedEvent> loaded, states;
    for (const ExpandedEvent &e : expandTimeline(tl, 0, 1, 0, residentBlocks(tl)))
        (isOptimizerState(tl, e) ? states : loaded).push_back(e);
    if (play(tl, loaded, s, r) && playWithStatesMadeInStep(tl, stepEvents, states, s, r))
        remakeFreedResidents(tl, loaded, s, r);
    return s;
}

namespace {

// The start after the first step, replayed with `settings` (their capacity included).
StepStartState afterFirstStep(const StepTimeline &tl,
                              const std::vector<ExpandedEvent> &stepEvents,
                              const AllocatorSettings &settings)
{
    StepReplay first;
    ResidentAllocatorState state = firstStep(tl, stepEvents, settings, first);
    finish(state, first);
    return {std::move(state), first};
}

} // namespace

ResidentAllocatorState residentState(const StepTimeline &tl, const AllocatorSettings &settings)
{
    AllocatorSettings unlimited = settings;
    unlimited.capacity = kBytesMax;
    ResidentAllocatorState s{CachingAllocatorModel(unlimited), {}};
    s.live.resize(static_cast<std::size_t>(instanceCount(tl)));
    // The resident blocks have fixed sizes: any shape gives the same events.
    const std::vector<ExpandedEvent> events = expandTimeline(tl, 0, 1, 0, residentBlocks(tl));
    StepReplay ignored;
    play(tl, events, s, ignored);
    return s;
}

StepReplay replayStep(const StepTimeline &tl,
                      double tokens,
                      double seq,
                      const AllocatorSettings &settings,
                      const ResidentAllocatorState *resident)
{
    StepReplay r;
    const std::size_t first = residentBlocks(tl);
    if (tl.lazy_optimizer_states) {
        const std::vector<ExpandedEvent> step = expandTimeline(tl, tokens, seq, first);
        return replayFrom(tl, step, afterFirstStep(tl, step, settings), settings.capacity);
    }
    ResidentAllocatorState s = resident ? *resident : residentState(tl, settings);
    if (s.model.stats().reserved.current > settings.capacity) {
        // The weights and states alone do not fit: replay them against the capacity to say where.
        s = ResidentAllocatorState{CachingAllocatorModel(settings), {}};
        play(tl, expandTimeline(tl, tokens, seq, 0), s, r);
    } else {
        s.model.setCapacity(settings.capacity);
        s.model.resetPeaks();
        play(tl, expandTimeline(tl, tokens, seq, first), s, r);
    }
    finish(s, r);
    return r;
}

StepStartState stepStart(const StepTimeline &tl,
                         const std::vector<ExpandedEvent> &stepEvents,
                         const ResidentAllocatorState &resident)
{
    if (!tl.lazy_optimizer_states)
        return {resident, {}};
    return afterFirstStep(tl, stepEvents, resident.model.settings());
}

StepReplay replayFrom(const StepTimeline &tl,
                      const std::vector<ExpandedEvent> &stepEvents,
                      const StepStartState &start,
                      Bytes capacity,
                      std::vector<Bytes> *reservedAfter)
{
    StepReplay r;
    ResidentAllocatorState s = start.state;
    s.model.setCapacity(capacity);
    s.model.resetPeaks();
    if (reservedAfter)
        reservedAfter->clear();
    if (start.first.fits)
        play(tl, stepEvents, s, r, reservedAfter);
    finish(s, r);
    mergeFirstStep(r, start.first);
    return r;
}

StepReplay replayStepEvents(const StepTimeline &tl,
                            const std::vector<ExpandedEvent> &stepEvents,
                            const ResidentAllocatorState &resident,
                            std::vector<Bytes> &reservedAfter)
{
    return replayFrom(tl,
                      stepEvents,
                      stepStart(tl, stepEvents, resident),
                      resident.model.settings().capacity,
                      &reservedAfter);
}

} // namespace membudget
