// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "advice/fit_probes.h"
#include "model/memory_estimator.h"
#include "model/step_model.h"

#include <cstdint>

namespace membudget {

// The largest micro-batch (from 1 up to `limit`) whose `metric` fits in `capacity`; 0 when even 1
// does not fit. Memory grows monotonically with the micro-batch, so this is a bisection on the
// fast estimate; for DeviceTotal (the default) the answer is then settled by the fits oracle: a
// replay of the step through the caching-allocator model against the GPU (gpu_verdict.h), so the
// largest value is the largest that runs, not the largest whose estimate is below capacity.
std::int64_t maxMicroBatch(const EstimateInput &input,
                           std::int64_t capacity,
                           FitMetric metric = FitMetric::DeviceTotal,
                           std::int64_t limit = 1 << 20);

// The longest sequence (1 token up to `limit`, and no longer than the model's context length when
// that is known) that fits, at the input's micro-batch; 0 when none.
std::int64_t maxSequenceLength(const EstimateInput &input,
                               std::int64_t capacity,
                               FitMetric metric = FitMetric::DeviceTotal,
                               std::int64_t limit = 1 << 24);

// The same on a model built once (the GUI asks for several GPUs). `exact` false: the bisection on
// the fast estimate only, without the replays that settle the boundary (an answer a step or two
// off, at a fraction of the cost).
std::int64_t maxMicroBatch(const StepModel &model,
                           std::int64_t capacity,
                           FitMetric metric = FitMetric::DeviceTotal,
                           std::int64_t limit = 1 << 20,
                           bool exact = true);
std::int64_t maxSequenceLength(const StepModel &model,
                               std::int64_t capacity,
                               FitMetric metric = FitMetric::DeviceTotal,
                               std::int64_t limit = 1 << 24,
                               bool exact = true);

// The same on estimates shared by several searches (one per GPU): the probes' model and metric.
std::int64_t maxMicroBatch(FitProbes &probes,
                           std::int64_t capacity,
                           std::int64_t limit = 1 << 20,
                           bool exact = false);
std::int64_t maxSequenceLength(FitProbes &probes,
                               std::int64_t capacity,
                               std::int64_t limit = 1 << 24,
                               bool exact = false);

} // namespace membudget
