// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "base/byte_format.h"
#include "model/memory_estimate.h"
#include "model/memory_estimator.h"

#include <string>

namespace membudget {

// One line that says how a component's bytes come about, with the numbers filled in, e.g.
// "7,504,924,672 params x 2 B (bf16) = 15.01 GB". Not for the hot path: it formats strings.
std::string explainComponent(const EstimateInput &input,
                             const MemoryEstimate &estimate,
                             Phase phase,
                             Component component,
                             ByteUnit unit = ByteUnit::GB);

// A sentence on what the phase is and why its peak is where it is.
std::string explainPhase(const EstimateInput &input,
                         const MemoryEstimate &estimate,
                         Phase phase,
                         ByteUnit unit = ByteUnit::GB);

} // namespace membudget
