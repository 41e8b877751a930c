// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "byte_format.h"
#include "gpu_spec.h"
#include "memory_estimator.h"
#include "scenario.h"

#include <string>
#include <vector>

namespace membudget::cli {

// The human-readable breakdown `membudget estimate` prints: components by phase, the peak, each
// component's formula and the verdict for every GPU.
std::string estimateTable(const Scenario &scenario, const EstimateInput &input, const MemoryEstimate &estimate,
                          const std::vector<GpuSpec> &gpus, ByteUnit unit);

} // namespace membudget::cli
