// SPDX-License-Identifier: GPL-3.0-or-later
#include "advice/fit_probes.h"

#include "model/step_model.h"

namespace membudget {

Bytes metricOf(const MemoryEstimate &e, FitMetric metric)
{
    switch (metric) {
    case FitMetric::PeakAllocated:
        return e.peak_allocated;
    case FitMetric::PeakReserved:
        return e.peak_reserved;
    case FitMetric::DeviceTotal:
        return e.device_total;
    }
    return e.device_total;
}

FitProbes::FitProbes(const StepModel &model, FitMetric metric)
    : m_model(model)
    , m_metric(metric)
{}

Bytes FitProbes::atMicroBatch(std::int64_t microBatch)
{
    const auto [it, added] = m_batch.try_emplace(microBatch, 0);
    if (added)
        it->second = metricOf(m_model.estimate(microBatch, m_model.input().training.sequence_length),
                              m_metric);
    return it->second;
}

Bytes FitProbes::atSequence(std::int64_t sequence)
{
    const auto [it, added] = m_sequence.try_emplace(sequence, 0);
    if (added)
        it->second = metricOf(m_model.estimate(m_model.input().training.micro_batch_size, sequence),
                              m_metric);
    return it->second;
}

} // namespace membudget
