// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/gpu_spec.h"
#include "model/memory_estimator.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace membudget {

struct Scenario;

// The `membudget estimate --json` document (shape documented in docs/cli.md): bytes as integers,
// per-phase breakdowns, peak phase, and for each GPU whether it fits plus the largest micro-batch
// and sequence that would.
nlohmann::json estimateToJson(const Scenario &scenario,
                              const EstimateInput &input,
                              const MemoryEstimate &estimate,
                              const std::vector<GpuSpec> &gpus);

// The `throughput` object of one GPU entry (step time, tokens/s, MFU and, with a dataset, the run's
// time, GPU-hours and cost); null when the GPU preset has no speed figures.
nlohmann::json throughputToJson(const Scenario &scenario,
                                const EstimateInput &input,
                                const GpuSpec &gpu);

} // namespace membudget
