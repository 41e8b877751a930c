// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Fits / tight / does not fit on each selected GPU (gpu_verdict.h) with the reason and the band, headroom, the phase that holds the peak, the largest
// micro-batch and sequence that fit, the CPU RAM that offload needs, and on each GPU the modelled
// step time, tokens per second and, with a dataset, the run's time and cost.

#include "advice/gpu_verdict.h"
#include "base/byte_format.h"
#include "model/pipeline_parallel.h"
#include "model/scenario.h"
#include "panels/throughput_text.h"
#include "workers/fit_limits_worker.h"

#include <QWidget>

#include <array>
#include <optional>
#include <vector>

class QTextEdit;
class QTreeWidget;

namespace membudget {

class ScenarioDocument;

class VerdictPanel : public QWidget
{
    Q_OBJECT
public:
    explicit VerdictPanel(QWidget *parent = nullptr);

    void update(const ScenarioDocument &document, ByteUnit unit);

    QTreeWidget *table() const { return m_table; }
    QString summaryText() const;
    // The speed of row `row` (for its tooltip and for tests).
    const std::vector<GpuSpeed> &speeds() const { return m_speeds; }
    // The rows' verdicts, and the line under the table with the first non-fitting one's reason.
    // Until the worker's replays answer, what the band says (verdictsExact() false).
    const std::vector<GpuVerdict> &verdicts() const { return m_verdicts; }
    bool verdictsExact() const { return !m_exactVerdicts.empty(); }
    QString reasonText() const { return m_reasonHtml; }
    // Computes the exact Max batch / Max seq. columns off the GUI thread.
    FitLimitsWorker *limitsWorker() const { return m_limitsWorker; }
    // True once the exact values replaced the fast estimates ("≈") in the table.
    bool limitsExact() const { return !m_exactLimits.empty(); }

Q_SIGNALS:
    // The replays' verdicts replaced the band's.
    void verdictsSettled();

protected:
    bool eventFilter(QObject *watched, QEvent *event) override;
    void changeEvent(QEvent *event) override;

private:
    void setSummary(const QString &html);
    void fitColumns(bool sameRows);
    void showReason(ByteUnit unit);
    void updateReplays(const ScenarioDocument &document, const StepModel &model);
    void onExactVerdicts(quint64 generation, const std::vector<GpuVerdict> &verdicts);
    void showVerdicts();
    void onExactLimits(quint64 generation, const std::vector<std::int64_t> &limits);
    void showLimits();

    QTextEdit *m_summary;
    QString m_summaryHtml;
    QTreeWidget *m_table;
    std::array<qsizetype, 7> m_fittedLength{}; // per column: the longest text it was last fitted to
    std::vector<GpuSpec> m_gpus;               // the rows' GPUs, speeds and scenario, for tooltips
    std::vector<GpuSpeed> m_speeds;
    EstimateInput m_input;
    std::vector<GpuVerdict> m_verdicts; // shown: the exact ones, else the provisional ones
    std::vector<GpuVerdict> m_provisionalVerdicts;
    std::vector<GpuVerdict> m_exactVerdicts;
    QTextEdit *m_reason;
    QString m_reasonHtml;
    // Max batch and Max seq.: two queries per row, the fast answers at once, the exact ones when
    // the worker delivers the newest request's (m_limitsGeneration).
    FitLimitsWorker *m_limitsWorker;
    std::optional<Scenario> m_limitsScenario;
    ByteUnit m_limitsUnit = ByteUnit::GiB; // of the reasons asked for
    bool m_limitsProvisional = false;      // asked for a drag's provisional estimate
    std::vector<FitLimitQuery> m_limitsQueries;
    std::vector<std::int64_t> m_estimatedLimits;
    std::vector<std::int64_t> m_exactLimits;
    quint64 m_limitsGeneration = 0;
    // A pipeline's every stage's allocated peak, of the settled estimate (the document's).
    QString stagePeaksLine(const ScenarioDocument &document, ByteUnit unit);
    const ScenarioDocument *m_doc = nullptr; // shown last, for a recolour
    ByteUnit m_unit = ByteUnit::GiB;
};

} // namespace membudget
