// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The largest micro-batch and the longest sequence that fit, settled by the fits oracle (a replay
// of the step through the caching-allocator model per candidate: milliseconds each for a 70B
// model, dozens per answer) on a worker thread, so that a slider drag never waits for them. The
// views show the fast estimate (the bisection on the estimate alone, marked "≈") until the exact
// answer arrives.
//
// One request runs at a time; a request made meanwhile waits, and a newer one replaces it. Each
// request has a generation number; an answer is delivered only when it belongs to the newest
// request, so a stale answer never overwrites a newer one.

#include "model/memory_estimator.h"
#include "model/step_model.h"

#include <QFutureWatcher>
#include <QObject>

#include <cstdint>
#include <optional>
#include <vector>

namespace membudget {

struct FitLimitQuery
{
    enum class Kind { MicroBatch, SequenceLength };
    Kind kind = Kind::MicroBatch;
    Bytes capacity = 0;
    std::int64_t limit = 1 << 20; // the largest value tried

    bool operator==(const FitLimitQuery &) const = default;
};

// The exact answers to `queries` for `input` (what the worker runs; callable directly).
std::vector<std::int64_t> exactFitLimits(const EstimateInput &input,
                                         const std::vector<FitLimitQuery> &queries);
// The fast estimates of the same (the bisection without replays; microseconds).
std::vector<std::int64_t> estimatedFitLimits(const StepModel &model,
                                             const std::vector<FitLimitQuery> &queries);

class FitLimitsWorker : public QObject
{
    Q_OBJECT
public:
    explicit FitLimitsWorker(QObject *parent = nullptr);
    ~FitLimitsWorker() override;

    // Asks for the exact limits; returns the request's generation.
    quint64 request(const EstimateInput &input, std::vector<FitLimitQuery> queries);
    // The newest request's generation (0 before the first).
    quint64 generation() const { return m_generation; }
    // True while a request is running or waiting.
    bool busy() const;
    // Runs the event loop until the newest request's answer is delivered (tests, screenshots).
    void waitForNewest();

Q_SIGNALS:
    // The answer to the newest request, one value per query in its order.
    void finished(quint64 generation, const std::vector<std::int64_t> &limits);

private:
    struct Request
    {
        quint64 generation = 0;
        EstimateInput input;
        std::vector<FitLimitQuery> queries;
    };
    struct Answer
    {
        quint64 generation = 0;
        std::vector<std::int64_t> limits;
    };
    void start(Request request);
    void onFinished();

    QFutureWatcher<Answer> m_watcher;
    std::optional<Request> m_waiting;
    bool m_running = false;
    quint64 m_generation = 0;
};

} // namespace membudget
