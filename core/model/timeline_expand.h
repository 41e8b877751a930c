// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/step_timeline.h"

#include <cstdint>
#include <vector>

namespace membudget {

// One allocation or free of the step, every layer and copy spelled out.
struct ExpandedEvent
{
    std::int64_t instance = 0; // the same for a tensor's allocation and its free; dense from 0
    Bytes bytes = 0;           // requested size of one tensor
    std::int32_t tensor = 0;   // into StepTimeline::tensors
    std::int32_t layer = -1;   // decoder layer, or -1
    std::int32_t block = 0;    // into StepTimeline::blocks
    std::uint8_t stream = 0;   // CUDA stream of the allocation
    bool alloc = true;
    std::int32_t repetition = 0; // of the block
    std::int32_t event = 0;      // into the block's events

    // The moment right after this event (for liveAt and for people).
    PeakMoment moment(const StepTimeline &timeline) const
    {
        return {block, repetition, event, layer, timeline.blocks[std::size_t(block)].stage};
    }
};

// The event list of a step's blocks [firstBlock, endBlock) for micro-batch shape (tokens, seq):
// what the caching-allocator model replays and the timeline view draws. Tensors standing for
// several copies (a layer's weights) become that many events; zero-sized tensors are left out.
std::vector<ExpandedEvent> expandTimeline(const StepTimeline &timeline,
                                          double tokens,
                                          double seq,
                                          std::size_t firstBlock = 0,
                                          std::size_t endBlock = SIZE_MAX);

// One more than the largest ExpandedEvent::instance of the timeline at any shape.
std::int64_t instanceCount(const StepTimeline &timeline);

// The blocks before the step starts (Stage::Resident): the same at every micro-batch shape.
std::size_t residentBlocks(const StepTimeline &timeline);

} // namespace membudget
