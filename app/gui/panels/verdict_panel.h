// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Fits / does not fit on each selected GPU, headroom, the phase that holds the peak, the largest
// micro-batch and sequence that fit, the CPU RAM that offload needs, and on each GPU the modelled
// step time, tokens per second and, with a dataset, the run's time and cost.

#include "base/byte_format.h"
#include "panels/throughput_text.h"

#include <QWidget>

#include <array>
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

protected:
    bool eventFilter(QObject *watched, QEvent *event) override;
    void changeEvent(QEvent *event) override;

private:
    void setSummary(const QString &html);

    QTextEdit *m_summary;
    QString m_summaryHtml;
    QTreeWidget *m_table;
    std::array<qsizetype, 7> m_fittedLength{}; // per column: the longest text it was last fitted to
    std::vector<GpuSpec> m_gpus;               // the rows' GPUs, speeds and scenario, for tooltips
    std::vector<GpuSpeed> m_speeds;
    EstimateInput m_input;
    const ScenarioDocument *m_doc = nullptr; // shown last, for a recolour
    ByteUnit m_unit = ByteUnit::GiB;
};

} // namespace membudget
