// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: the PyTorch memory-snapshot reader (restricted pickle reader, typed model) and
// everything measured from an accepted snapshot. Invariants on every accepted input, for every
// device: the curves hold the peaks, the allocations live at the peak add up to it, the start state
// of the replay input adds up to the baselines, the caching-allocator model's replay of the trace
// is coherent, and the JSON document serialises. See README.md.
#include "fuzz_check.h"

#include "snapshot/memory_snapshot.h"
#include "snapshot/snapshot_analysis.h"
#include "snapshot/snapshot_json.h"
#include "snapshot/snapshot_replay.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>

namespace {

using namespace membudget;
using namespace membudget::snapshot;

Bytes sum(const std::vector<AllocationSite> &sites)
{
    return std::accumulate(sites.begin(),
                           sites.end(),
                           Bytes{0},
                           [](Bytes s, const AllocationSite &x) { return addSat(s, x.bytes); });
}

void checkAnalysis(const MemorySnapshot &snap, const SnapshotAnalysis &a)
{
    const MeasuredTimeline &t = a.timeline;
    if (t.allocated.size() != t.events || t.reserved.size() != t.events)
        fuzz::broken("a curve without one point per event", "");
    Bytes high = t.allocated_at_start;
    for (Bytes b : t.allocated)
        high = std::max(high, b);
    if (high != t.peak_allocated || t.peak_allocated < t.allocated_at_start)
        fuzz::broken("peak allocated is not the curve's maximum", std::to_string(high));
    high = t.reserved_at_start;
    for (Bytes b : t.reserved)
        high = std::max(high, b);
    if (high != t.peak_reserved)
        fuzz::broken("peak reserved is not the curve's maximum", std::to_string(high));
    // The live allocations (paired from the trace and the blocks) agree with the running sums.
    const Bytes atPeak = sum(liveAllocationSites(snap, a.history, a.sites_event, 0));
    const Bytes expected = t.has_history ? t.peak_allocated : t.requested_at_snapshot;
    if (atPeak != expected && !isSaturated(atPeak))
        fuzz::broken("live allocations do not add up to the peak",
                     std::to_string(atPeak) + " vs " + std::to_string(expected));
    if (a.replay
        && (a.replay->start.reserved != t.reserved_at_start
            || a.replay->start.allocated != t.allocated_at_start))
        fuzz::broken("the replay's start state does not add up to the baselines", "");
    // The recorded requests through the caching-allocator model: it may refuse them (error) or
    // run out (with a capacity), but what it reports must be coherent.
    std::optional<SnapshotReplay> replay;
    if (a.replay) {
        replay = replaySnapshot(snap, *a.replay, 64 * kGiB);
        const ReplayResult &r = replay->result;
        if (replay->ran && r.stats.reserved.peak < r.stats.allocated.peak)
            fuzz::broken("the model reserved less than it allocated", r.error);
    }
    nlohmann::json j = snapshotToJson("fuzz.pickle", snap, a);
    addReplayJson(j, a, replay);
    (void) j.dump();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    LoadError error;
    const auto snap = readMemorySnapshot(std::string(reinterpret_cast<const char *>(data), size),
                                         "fuzz.pickle",
                                         error);
    if (!snap) {
        fuzz::checkError(error);
        return 0;
    }
    SnapshotAnalysis first;
    std::string problem;
    if (!analyzeSnapshot(*snap, -1, 10, first, problem)) {
        error.message = problem;
        fuzz::checkError(error);
        return 0;
    }
    for (int device : first.devices) {
        SnapshotAnalysis a;
        if (analyzeSnapshot(*snap, device, 10, a, problem))
            checkAnalysis(*snap, a);
        else if (problem.empty())
            fuzz::broken("an analysis failed without a reason", "");
    }
    return 0;
}
