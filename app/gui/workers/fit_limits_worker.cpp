// SPDX-License-Identifier: GPL-3.0-or-later
#include "workers/fit_limits_worker.h"

#include "advice/fit_solver.h"

#include <QEventLoop>
#include <QtConcurrent/QtConcurrentRun>

namespace membudget {

namespace {

std::vector<std::int64_t> fitLimits(const StepModel &model,
                                    const std::vector<FitLimitQuery> &queries,
                                    bool exact)
{
    // One GPU's search probes estimates the others' searches ask for too.
    FitProbes probes(model, FitMetric::DeviceTotal);
    std::vector<std::int64_t> out;
    out.reserve(queries.size());
    for (const FitLimitQuery &q : queries)
        out.push_back(q.kind == FitLimitQuery::Kind::MicroBatch
                          ? maxMicroBatch(probes, q.capacity, q.limit, exact)
                          : maxSequenceLength(probes, q.capacity, q.limit, exact));
    return out;
}

} // namespace

std::vector<std::int64_t> exactFitLimits(const EstimateInput &input,
                                         const std::vector<FitLimitQuery> &queries)
{
    const StepModel model(input);
    return fitLimits(model, queries, true);
}

std::vector<std::int64_t> estimatedFitLimits(const StepModel &model,
                                             const std::vector<FitLimitQuery> &queries)
{
    return fitLimits(model, queries, false);
}

FitVerdict provisionalVerdict(const MemoryBand &band, Bytes capacity)
{
    if (band.high <= capacity)
        return FitVerdict::Fits;
    if (band.low > capacity || band.expected > capacity)
        return FitVerdict::DoesNotFit;
    return FitVerdict::Tight;
}

FitLimitsWorker::FitLimitsWorker(QObject *parent)
    : QObject(parent)
{
    connect(&m_watcher, &QFutureWatcherBase::finished, this, &FitLimitsWorker::onFinished);
}

// The running job holds copies of its input only; it finishes on its own (the global thread pool
// waits for it at exit).
FitLimitsWorker::~FitLimitsWorker() = default;

quint64 FitLimitsWorker::request(const EstimateInput &input,
                                 std::vector<Bytes> capacities,
                                 std::vector<FitLimitQuery> queries,
                                 ByteUnit unit)
{
    return enqueue(
        {++m_generation, input, nullptr, std::move(capacities), std::move(queries), unit});
}

quint64 FitLimitsWorker::request(std::shared_ptr<const StepModel> model,
                                 std::vector<Bytes> capacities,
                                 std::vector<FitLimitQuery> queries,
                                 ByteUnit unit)
{
    const EstimateInput &input = model->input();
    return enqueue(
        {++m_generation, input, std::move(model), std::move(capacities), std::move(queries), unit});
}

quint64 FitLimitsWorker::enqueue(Request r)
{
    if (m_running) {
        m_waiting = std::move(r); // replaces an older waiting request
    } else {
        m_current = std::move(r);
        start(false);
    }
    return m_generation;
}

bool FitLimitsWorker::busy() const
{
    return m_running || m_waiting.has_value();
}

void FitLimitsWorker::start(bool limitsPhase)
{
    m_running = true;
    m_watcher.setFuture(QtConcurrent::run([r = *m_current, limitsPhase] {
        Answer a{r.generation, limitsPhase, r.model, {}, {}};
        if (!a.model)
            a.model = std::make_shared<const StepModel>(r.input);
        if (limitsPhase) {
            a.limits = fitLimits(*a.model, r.queries, true);
        } else {
            const MemoryEstimate est = a.model->estimate();
            for (Bytes capacity : r.capacities)
                a.verdicts.push_back(gpuVerdict(*a.model, est, capacity, r.unit));
        }
        return a;
    }));
}

void FitLimitsWorker::onFinished()
{
    m_running = false;
    const Answer answer = m_watcher.result();
    if (m_waiting) { // a newer request: it runs next, the current one's limits are not wanted
        m_current = std::move(m_waiting);
        m_waiting.reset();
        start(false);
    } else if (!answer.limitsPhase) {
        m_current->model = answer.model; // built once for both phases
        start(true);
    } else {
        m_current.reset();
    }
    if (answer.generation != m_generation)
        return; // stale: something newer was asked for
    if (answer.limitsPhase)
        Q_EMIT finished(answer.generation, answer.limits);
    else
        Q_EMIT verdictsReady(answer.generation, answer.verdicts);
}

void FitLimitsWorker::waitForNewest()
{
    const quint64 wanted = m_generation;
    if (!busy())
        return;
    QEventLoop loop;
    bool done = false;
    const auto c = connect(this, &FitLimitsWorker::finished, &loop, [&](quint64 g) {
        if (g >= wanted) { // the one waited for, or a newer one
            done = true;
            loop.quit();
        }
    });
    while (!done && busy())
        loop.exec();
    disconnect(c);
}

} // namespace membudget
