// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The per-phase breakdown as a table in the window: each component at the end of forward, at the
// backward peak, at the optimizer-step peak and at the peak itself, with the allocated and device
// totals (what Copy Breakdown puts on the clipboard, here to read).

#include "base/byte_format.h"

#include <QWidget>

class QLabel;
class QTreeWidget;

namespace membudget {

class ScenarioDocument;

class BreakdownView : public QWidget
{
    Q_OBJECT
public:
    explicit BreakdownView(QWidget *parent = nullptr);

    void update(const ScenarioDocument &document, ByteUnit unit);

    QTreeWidget *table() const { return m_table; }

private:
    QLabel *m_summary;
    QTreeWidget *m_table;
};

} // namespace membudget
