// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/memory_estimator.h"
#include "model/model_states.h"
#include "model/step_graphs.h"
#include "model/step_timeline.h"

namespace membudget {

// The timeline of one steady-state training step (the last micro-batch of an optimizer step, so
// gradient accumulation has its gradients) or of one inference prefill, on one GPU.
// `graphs` must be those of `input` (stepGraphs()).
StepTimeline buildStepTimeline(const EstimateInput &input,
                               const ModelStates &states,
                               const StepGraphs &graphs);

} // namespace membudget
