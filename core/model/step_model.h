// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/activation_model.h"
#include "model/memory_estimator.h"
#include "model/model_states.h"
#include "model/step_graphs.h"
#include "model/step_timeline.h"

#include <cstdint>

namespace membudget {

// Everything an estimate needs that does not depend on the micro-batch size and the sequence
// length: the parameter layout, the model states, the op graphs and the step's timeline. Built once
// (tens of microseconds); estimates for any (b, s) then take a few microseconds, which is what the
// solvers' bisections and sweeps rely on.
class StepModel
{
public:
    explicit StepModel(const EstimateInput &input);

    const EstimateInput &input() const { return m_input; }
    bool valid() const { return m_valid; }
    const ModelStates &states() const { return m_states; }
    const StepTimeline &timeline() const { return m_timeline; }
    const ActivationProfile &activations() const { return m_profile; }

    MemoryEstimate estimate() const;
    MemoryEstimate estimate(std::int64_t microBatch, std::int64_t sequence) const;

private:
    void fillDerivation(MemoryEstimate &est, double tokens, double seq) const;

    EstimateInput m_input;
    bool m_valid = false;
    ParameterLayout m_layout;
    ModelStates m_states;
    StepGraphs m_graphs;
    StepTimeline m_timeline;
    ActivationProfile m_profile;
};

} // namespace membudget
