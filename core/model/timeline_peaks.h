// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/step_timeline.h"

#include <array>

namespace membudget {

using TimelineMoment = PeakMoment;

// The most a phase holds at once, what it is made of, and when.
struct PhasePeak
{
    bool present = false;
    Breakdown breakdown; // allocated components only
    double allocated = 0;
    TimelineMoment at;
    Breakdown at_end; // allocated components when the phase ends
};

// The peak of each phase of a timeline for micro-batch b and sequence s (tokens = b x s), in time
// linear in the events of one layer: the layers' repeated blocks are summed arithmetically (memory
// changes by the same amount each layer, so a block's maximum is in its first or last layer).
std::array<PhasePeak, kPhaseCount> timelinePeaks(const StepTimeline &timeline,
                                                 double tokens,
                                                 double seq);

// Bytes of one event's tensor (all its copies) at this shape.
double eventBytes(const StepTimeline &timeline, const TimelineEvent &e, double tokens, double seq);

} // namespace membudget
