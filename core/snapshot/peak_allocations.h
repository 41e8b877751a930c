// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// What was live at a moment of the trace (its measured peak, usually), grouped by where the
// program asked for it: the first Python frame of the allocation's stack outside the torch package
// (FrameTable::topUserFrame), so that tensors made by one line of the user's model add up.

#include "base/units.h"
#include "snapshot/trace_allocations.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace membudget::snapshot {

enum class SiteKind : std::uint8_t {
    UserFrame,       // `frame` is the first Python frame outside torch
    NoPythonFrame,   // a stack was recorded but holds only C++ or torch frames
    NoStack,         // allocated during the trace, but no stack was recorded
    BeforeRecording, // allocated before recording began, where is unknown
};

struct AllocationSite
{
    SiteKind kind = SiteKind::NoStack;
    FrameId frame = 0; // for UserFrame
    Bytes bytes = 0;   // requested bytes live
    std::size_t count = 0;
};

// Allocations live after trace event `event` (kAtTraceStart: before the first), grouped by site,
// largest first; at most `limit` sites (0: all).
std::vector<AllocationSite> liveAllocationSites(const MemorySnapshot &snapshot,
                                                const AllocationHistory &history,
                                                std::int64_t event,
                                                std::size_t limit);

} // namespace membudget::snapshot
