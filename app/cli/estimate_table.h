// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "base/byte_format.h"
#include "model/gpu_spec.h"
#include "model/memory_estimator.h"
#include "model/scenario.h"

#include <string>
#include <vector>

namespace membudget::cli {

// `text` padded with spaces to `width` characters (code points, not bytes), on the left when
// `right` (numbers), on the right otherwise; longer text is left as it is.
std::string padded(const std::string &text, std::size_t width, bool right = false);

// The human-readable breakdown `membudget estimate` prints: components by phase, the peak, each
// component's formula and the verdict for every GPU.
std::string estimateTable(const Scenario &scenario,
                          const EstimateInput &input,
                          const MemoryEstimate &estimate,
                          const std::vector<GpuSpec> &gpus,
                          ByteUnit unit);

} // namespace membudget::cli
