// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "allocator/allocator_settings.h"
#include "allocator/step_replay.h"
#include "model/activation_model.h"
#include "model/memory_estimator.h"
#include "model/model_states.h"
#include "model/step_graphs.h"
#include "model/step_timeline.h"

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace membudget {

// Everything an estimate needs that does not depend on the micro-batch size and the sequence
// length: the parameter layout, the model states, the op graphs and the step's timeline. Built once
// (tens of microseconds); estimates for any (b, s) then take a few microseconds, which is what the
// solvers' bisections and sweeps rely on.
class StepModel
{
public:
    // With pipeline parallelism the model is of one stage: the input's pipeline_stage, or the one
    // that allocates the most (input() then holds that stage's layers and ends).
    explicit StepModel(const EstimateInput &input);
    // A model that takes reserved memory as `assumedReserveRatio` times allocated at the peak
    // instead of replaying the step for it (another model's reserveRatio(): the app's figure while
    // a slider is dragged, settled by a model without it). Replays asked for explicitly (replay(),
    // referenceReplay(), referenceReplayAgainst()) still run.
    StepModel(const EstimateInput &input, double assumedReserveRatio);

    const EstimateInput &input() const { return m_input; }
    bool valid() const { return m_valid; }
    const ModelStates &states() const { return m_states; }
    const StepTimeline &timeline() const { return m_timeline; }
    const ActivationProfile &activations() const { return m_profile; }

    // The estimate at the input's shape, or at another one. Reserved memory comes from replaying
    // the step through the caching-allocator model at the input's shape (once per StepModel);
    // other shapes keep that replay's ratio of reserved to allocated at the peak (replay() tells
    // exactly). An explicit allocator_reserve fraction in the scenario replaces the model.
    MemoryEstimate estimate() const;
    MemoryEstimate estimate(std::int64_t microBatch, std::int64_t sequence) const;
    // The estimate at another shape with its own replay: what estimateMemory() gives for the input
    // with that micro-batch and sequence (a few milliseconds for a large model).
    MemoryEstimate replayedEstimate(std::int64_t microBatch, std::int64_t sequence) const;
    // The estimate at the input's shape with no allocator reserve (reserved = allocated) and no
    // replay: a lower bound of estimate() that costs only the timeline's peaks (microseconds).
    MemoryEstimate allocatedEstimate() const;

    // Reserved over allocated at the peak that estimates use: the scenario's allocator_reserve
    // when it sets one, else the assumed ratio when there is one, else the reference replay's.
    double reserveRatio() const;
    bool reserveAssumed() const { return m_assumedRatio > 0; }

    // The scenario's allocator settings (PYTORCH_CUDA_ALLOC_CONF) for `capacity` bytes.
    AllocatorSettings allocatorSettings(Bytes capacity = kBytesMax) const;
    // One step at shape (b, s) replayed through the caching-allocator model (the resident tensors
    // are replayed once per settings and reused).
    StepReplay replay(std::int64_t microBatch,
                      std::int64_t sequence,
                      const AllocatorSettings &settings) const;
    // The replay at the input's shape with unlimited capacity (computed once), its step events
    // (expandTimeline from the first step block) and the reserved bytes after each of them.
    const StepReplay &referenceReplay() const;
    const std::vector<ExpandedEvent> &referenceEvents() const;
    const std::vector<Bytes> &referenceReservedAfter() const;
    // The input's shape replayed against `settings`: from the start the reference replay made
    // (after the first step, step_replay.h) when the settings are the scenario's and that start
    // stayed within the capacity, which then changes nothing before the step; else in full.
    StepReplay referenceReplayAgainst(const AllocatorSettings &settings) const;
    // The allocator holding the resident tensors, replayed once per settings (capacity ignored).
    const ResidentAllocatorState &resident(const AllocatorSettings &settings) const;

private:
    StepModel(std::pair<EstimateInput, double> stage, const EstimateInput &whole);
    MemoryEstimate estimateWithRatio(std::int64_t microBatch,
                                     std::int64_t sequence,
                                     double ratio) const;
    void fillDerivation(MemoryEstimate &est, double tokens, double seq) const;
    double ratioOf(const StepReplay &replay, std::int64_t microBatch, std::int64_t sequence) const;

    EstimateInput m_input; // with pipeline parallelism, the stage's (pipeline_parallel.h)
    bool m_valid = false;
    struct WholeModel
    {
        double parameters = 0, active = 0, trainable = 0;
    } m_model;             // what the estimate reports as the model's, whichever stage it models
    double m_inFlight = 1; // micro-batches whose activations the stage holds at once
    ParameterLayout m_layout;
    ModelStates m_states;
    StepGraphs m_graphs;
    StepTimeline m_timeline;
    ActivationProfile m_profile;

    mutable std::mutex m_residentMutex;
    mutable std::vector<std::pair<std::string, std::shared_ptr<const ResidentAllocatorState>>>
        m_resident;
    mutable std::once_flag m_referenceOnce;
    mutable StepReplay m_reference;
    mutable std::optional<StepStartState> m_referenceStart;
    mutable std::vector<ExpandedEvent> m_referenceEvents;
    mutable std::vector<Bytes> m_referenceReservedAfter;
    mutable double m_ratio = 1;
    double m_assumedRatio = 0; // 0: none
};

} // namespace membudget
