// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/memory_estimate.h"

#include <cstdint>
#include <map>

namespace membudget {

class StepModel;

enum class FitMetric { PeakAllocated, PeakReserved, DeviceTotal };

Bytes metricOf(const MemoryEstimate &estimate, FitMetric metric);

// One model's fast estimate (its `metric`) along the micro-batch, at the model's sequence length,
// or along the sequence length, at its micro-batch, each point estimated once: the searches for
// several capacities (the verdict table's GPUs) ask about the same points.
class FitProbes
{
public:
    FitProbes(const StepModel &model, FitMetric metric);

    Bytes atMicroBatch(std::int64_t microBatch);
    Bytes atSequence(std::int64_t sequence);

    const StepModel &model() const { return m_model; }
    FitMetric metric() const { return m_metric; }
    // How many estimates were computed (not looked up).
    std::size_t estimates() const { return m_batch.size() + m_sequence.size(); }

private:
    const StepModel &m_model;
    FitMetric m_metric;
    std::map<std::int64_t, Bytes> m_batch, m_sequence;
};

} // namespace membudget
