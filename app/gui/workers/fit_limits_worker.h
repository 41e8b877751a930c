// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The answers that need replays of the step through the caching-allocator model (milliseconds
// each for a large model): the three-way verdict where the band straddles a capacity, and the
// largest micro-batch and the longest sequence that fit (dozens of replays each). They are worked
// out on a worker thread, so that a slider drag never waits for them; the views show what the band
// and the fast estimate say (marked "≈") until the exact answers arrive.
//
// A request is answered in two phases: the verdicts first (a few replays), then the limits. One
// request runs at a time; a request made meanwhile waits, and a newer one replaces it (and the
// running request's second phase). Each request has a generation number; answers are delivered
// only for the newest request, so a stale answer never overwrites a newer one.

#include "advice/gpu_verdict.h"
#include "model/memory_estimator.h"
#include "model/step_model.h"

#include <QFutureWatcher>
#include <QObject>

#include <cstdint>
#include <memory>
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
// The verdict from the band alone where the capacity lies outside it (what gpuVerdict says
// there, without a reason); inside it the likelier state, to be settled by a replay.
FitVerdict provisionalVerdict(const MemoryBand &band, Bytes capacity);

class FitLimitsWorker : public QObject
{
    Q_OBJECT
public:
    explicit FitLimitsWorker(QObject *parent = nullptr);
    ~FitLimitsWorker() override;

    // Asks for the verdicts on GPUs of `capacities` bytes, then for the limits; returns the
    // request's generation.
    // The verdicts' reasons give sizes in `unit`.
    quint64 request(const EstimateInput &input,
                    std::vector<Bytes> capacities,
                    std::vector<FitLimitQuery> queries,
                    ByteUnit unit = ByteUnit::GiB);
    // The same for a step model built already (the document's, whose reference replay is done):
    // the worker shares it instead of building its own.
    quint64 request(std::shared_ptr<const StepModel> model,
                    std::vector<Bytes> capacities,
                    std::vector<FitLimitQuery> queries,
                    ByteUnit unit = ByteUnit::GiB);
    // The newest request's generation (0 before the first).
    quint64 generation() const { return m_generation; }
    // True while a request is running or waiting.
    bool busy() const;
    // Runs the event loop until the newest request is answered in full (tests, screenshots).
    void waitForNewest();

Q_SIGNALS:
    // The newest request's verdicts, one per capacity in its order.
    void verdictsReady(quint64 generation, const std::vector<GpuVerdict> &verdicts);
    // The newest request's limits, one value per query in its order (after its verdicts).
    void finished(quint64 generation, const std::vector<std::int64_t> &limits);

private:
    struct Request
    {
        quint64 generation = 0;
        EstimateInput input;
        std::shared_ptr<const StepModel> model; // of input; built by the first phase if null
        std::vector<Bytes> capacities;
        std::vector<FitLimitQuery> queries;
        ByteUnit unit = ByteUnit::GiB;
    };
    struct Answer
    {
        quint64 generation = 0;
        bool limitsPhase = false;
        std::shared_ptr<const StepModel> model; // for the second phase
        std::vector<GpuVerdict> verdicts;
        std::vector<std::int64_t> limits;
    };
    quint64 enqueue(Request request);
    void start(bool limitsPhase);
    void onFinished();

    QFutureWatcher<Answer> m_watcher;
    std::optional<Request> m_current; // running, or its second phase still to run
    std::optional<Request> m_waiting;
    bool m_running = false;
    quint64 m_generation = 0;
};

} // namespace membudget
