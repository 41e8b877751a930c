// SPDX-License-Identifier: GPL-3.0-or-later
#include "advice/fit_solver.h"

#include "model/step_model.h"

#include <algorithm>

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

namespace {

// Largest value v in [1, limit] with fits(v); memory is monotone in v, so bisect. 0 if none fits.
template<typename Fits>
std::int64_t largestFitting(std::int64_t limit, Fits fits)
{
    if (limit < 1 || !fits(1))
        return 0;
    std::int64_t lo = 1; // fits
    std::int64_t hi = 2; // probe upwards by doubling first: cheap for small answers
    while (hi <= limit && fits(hi)) {
        lo = hi;
        hi *= 2;
    }
    if (hi > limit) {
        if (fits(limit))
            return limit;
        hi = limit;
    }
    while (hi - lo > 1) {
        const std::int64_t mid = lo + (hi - lo) / 2;
        (fits(mid) ? lo : hi) = mid;
    }
    return lo;
}

} // namespace

std::int64_t maxMicroBatch(const EstimateInput &input,
                           std::int64_t capacity,
                           FitMetric metric,
                           std::int64_t limit)
{
    const StepModel model(input);
    const std::int64_t seq = input.training.sequence_length;
    return largestFitting(limit, [&](std::int64_t b) {
        return metricOf(model.estimate(b, seq), metric) <= capacity;
    });
}

std::int64_t maxSequenceLength(const EstimateInput &input,
                               std::int64_t capacity,
                               FitMetric metric,
                               std::int64_t limit)
{
    const StepModel model(input);
    const std::int64_t batch = input.training.micro_batch_size;
    return largestFitting(limit, [&](std::int64_t s) {
        return metricOf(model.estimate(batch, s), metric) <= capacity;
    });
}

} // namespace membudget
