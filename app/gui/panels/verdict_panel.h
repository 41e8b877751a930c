// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Fits / does not fit on each selected GPU, headroom, the phase that holds the peak, the largest
// micro-batch and sequence that fit, and the CPU RAM that offload needs.

#include "base/byte_format.h"

#include <QWidget>

#include <array>

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

private:
    void setSummary(const QString &html);

    QTextEdit *m_summary;
    QString m_summaryHtml;
    QTreeWidget *m_table;
    std::array<qsizetype, 5> m_fittedLength{}; // per column: the longest text it was last fitted to
};

} // namespace membudget
