// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/gpu_spec.h"
#include "model/memory_estimator.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace membudget {

struct Scenario;

class StepModel;

// The `membudget estimate --json` document (shape documented in docs/cli.md): bytes as integers,
// per-phase breakdowns, peak phase, the band of what the device may show, and for each GPU the
// verdict (fits / tight / does_not_fit) plus the largest micro-batch and sequence that run.
// `withTimeline`: also every allocation and free of the step (`timeline`).
nlohmann::json estimateToJson(const Scenario &scenario,
                              const EstimateInput &input,
                              const MemoryEstimate &estimate,
                              const std::vector<GpuSpec> &gpus,
                              bool withTimeline = false);

// The step's events in order with the running allocated total: {stage, phase, layer, tensor,
// component, bytes, alloc, allocated} each.
nlohmann::json timelineToJson(const StepModel &model);

// The `throughput` object of one GPU entry (step time, tokens/s, MFU and, with a dataset, the run's
// time, GPU-hours and cost); null when the GPU preset has no speed figures.
nlohmann::json throughputToJson(const Scenario &scenario,
                                const EstimateInput &input,
                                const GpuSpec &gpu);

} // namespace membudget
