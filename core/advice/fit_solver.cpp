// SPDX-License-Identifier: GPL-3.0-or-later
#include "advice/fit_solver.h"

#include "advice/gpu_verdict.h"
#include "model/step_model.h"

#include <algorithm>

namespace membudget {

namespace {

// Largest value v in [1, limit] with value(v) <= capacity; memory is monotone in v. Doubles up
// to a bracket, then closes it by interpolating the values at its ends (memory is close to linear
// or quadratic in v, so a step lands next to the answer), falling back to a bisection step
// whenever an interpolation did not halve the bracket: at most about twice bisection's probes.
// 0 if even 1 does not fit.
template<typename Value>
std::int64_t largestFitting(std::int64_t limit, Bytes capacity, Value value)
{
    if (limit < 1 || value(1) > capacity)
        return 0;
    std::int64_t lo = 1; // fits
    std::int64_t hi = 2; // probe upwards by doubling first: cheap for small answers
    while (hi <= limit && value(hi) <= capacity) {
        lo = hi;
        hi *= 2;
    }
    if (hi > limit) {
        if (value(limit) <= capacity)
            return limit;
        hi = limit;
    }
    bool bisect = false;
    while (hi - lo > 1) {
        std::int64_t mid = lo + (hi - lo) / 2;
        const Bytes atLo = value(lo), atHi = value(hi); // probed already
        if (!bisect && atHi > atLo) {
            const double t = static_cast<double>(capacity - atLo)
                             / static_cast<double>(atHi - atLo);
            const auto step = static_cast<std::int64_t>(t * static_cast<double>(hi - lo));
            mid = std::clamp<std::int64_t>(lo + step, lo + 1, hi - 1);
        }
        const std::int64_t width = hi - lo;
        (value(mid) <= capacity ? lo : hi) = mid;
        bisect = !bisect && 2 * (hi - lo) > width;
    }
    return lo;
}

} // namespace

// The largest value the oracle accepts, starting from a guess: walks up or down from it with
// doubling steps, then bisects. The guess comes from the fast estimate, so a few oracle calls (each
// a replay of the step) settle the exact boundary.
template<typename Fits>
std::int64_t refine(std::int64_t guess, std::int64_t limit, Fits fits)
{
    std::int64_t lo, hi; // lo fits (or is 0), hi does not (or is limit + 1)
    guess = std::clamp<std::int64_t>(guess, 1, std::max<std::int64_t>(1, limit));
    if (limit >= 1 && fits(guess)) {
        lo = guess;
        std::int64_t step = 1;
        while (lo < limit && fits(std::min(limit, lo + step))) {
            lo = std::min(limit, lo + step);
            step *= 2;
        }
        hi = std::min(limit, lo + step) + (lo == limit ? 1 : 0);
        if (lo == limit)
            return lo;
    } else {
        hi = guess;
        std::int64_t step = 1;
        lo = hi - step;
        while (lo >= 1 && !fits(lo)) {
            hi = lo;
            step *= 2;
            lo = std::max<std::int64_t>(0, hi - step);
        }
        if (lo < 1)
            return 0;
    }
    while (hi - lo > 1) {
        const std::int64_t mid = lo + (hi - lo) / 2;
        (fits(mid) ? lo : hi) = mid;
    }
    return lo;
}

std::int64_t maxMicroBatch(
    const StepModel &model, std::int64_t capacity, FitMetric metric, std::int64_t limit, bool exact)
{
    FitProbes probes(model, metric);
    return maxMicroBatch(probes, capacity, limit, exact);
}

std::int64_t maxSequenceLength(
    const StepModel &model, std::int64_t capacity, FitMetric metric, std::int64_t limit, bool exact)
{
    FitProbes probes(model, metric);
    return maxSequenceLength(probes, capacity, limit, exact);
}

std::int64_t maxMicroBatch(FitProbes &probes, std::int64_t capacity, std::int64_t limit, bool exact)
{
    const StepModel &model = probes.model();
    const std::int64_t seq = model.input().training.sequence_length;
    const std::int64_t guess = largestFitting(limit, capacity, [&](std::int64_t b) {
        return probes.atMicroBatch(b);
    });
    if (probes.metric() != FitMetric::DeviceTotal || !exact)
        return guess;
    return refine(guess, limit, [&](std::int64_t b) { return fitsOn(model, b, seq, capacity); });
}

std::int64_t maxSequenceLength(FitProbes &probes,
                               std::int64_t capacity,
                               std::int64_t limit,
                               bool exact)
{
    const StepModel &model = probes.model();
    // Not past the model's context length, when known (max_position_embeddings x RoPE scaling).
    if (model.input().arch.context_length > 0)
        limit = std::min(limit, model.input().arch.context_length);
    const std::int64_t batch = model.input().training.micro_batch_size;
    // Context parallelism splits a sequence into 2 x cp equal chunks (context_parallel.h): search
    // in whole units of them.
    const std::int64_t unit = 2 * model.input().parallelism.context_parallel > 2
                                  ? 2 * model.input().parallelism.context_parallel
                                  : 1;
    const std::int64_t units = limit / unit;
    const std::int64_t guess = largestFitting(units, capacity, [&](std::int64_t n) {
        return probes.atSequence(n * unit);
    });
    if (probes.metric() != FitMetric::DeviceTotal || !exact)
        return guess * unit;
    return unit * refine(guess, units, [&](std::int64_t n) {
               return fitsOn(model, batch, n * unit, capacity);
           });
}

std::int64_t maxMicroBatch(const EstimateInput &input,
                           std::int64_t capacity,
                           FitMetric metric,
                           std::int64_t limit)
{
    return maxMicroBatch(StepModel(input), capacity, metric, limit);
}

std::int64_t maxSequenceLength(const EstimateInput &input,
                               std::int64_t capacity,
                               FitMetric metric,
                               std::int64_t limit)
{
    return maxSequenceLength(StepModel(input), capacity, metric, limit);
}

} // namespace membudget
