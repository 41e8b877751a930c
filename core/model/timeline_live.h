// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/step_timeline.h"

#include <string>
#include <vector>

namespace membudget {

// The tensors of one kind alive at a moment: how many (e.g. one per layer), which layers, bytes.
struct LiveTensorGroup
{
    int tensor = 0; // into StepTimeline::tensors
    int count = 0;  // live instances
    int first_layer = -1, last_layer = -1;
    double bytes = 0;
};

// What is allocated at `moment` for micro-batch shape (tokens, seq), largest first.
std::vector<LiveTensorGroup> liveAt(const StepTimeline &timeline,
                                    const PeakMoment &moment,
                                    double tokens,
                                    double seq);

// "q_proj output", "gradient of q_proj output", "layer 3 weights"... for people.
std::string timelineTensorName(const TimelineTensor &t);

} // namespace membudget
