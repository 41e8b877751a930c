// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/memory_estimator.h"

#include <cstdint>

namespace membudget {

enum class FitMetric { PeakAllocated, PeakReserved, DeviceTotal };

// The largest micro-batch (from 1 up to `limit`) whose `metric` fits in `capacity`; 0 when even 1
// does not fit. Memory grows monotonically with the micro-batch, so this is a bisection.
std::int64_t maxMicroBatch(const EstimateInput &input,
                           std::int64_t capacity,
                           FitMetric metric = FitMetric::DeviceTotal,
                           std::int64_t limit = 1 << 20);

// The longest sequence (1 token up to `limit`) that fits, at the input's micro-batch; 0 when none.
std::int64_t maxSequenceLength(const EstimateInput &input,
                               std::int64_t capacity,
                               FitMetric metric = FitMetric::DeviceTotal,
                               std::int64_t limit = 1 << 24);

Bytes metricOf(const MemoryEstimate &estimate, FitMetric metric);

} // namespace membudget
