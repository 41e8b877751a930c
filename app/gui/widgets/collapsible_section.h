// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// A titled section of the controls panel whose contents fold away under its header (a tool button
// with an arrow), so that a small screen shows the sections in use.

#include <QWidget>

class QToolButton;

namespace membudget {

class CollapsibleSection : public QWidget
{
    Q_OBJECT
public:
    explicit CollapsibleSection(const QString &title, QWidget *parent = nullptr);

    // Lay the section's controls out in this widget.
    QWidget *content() const { return m_content; }
    QToolButton *header() const { return m_header; }

    bool isExpanded() const;
    void setExpanded(bool expanded);

Q_SIGNALS:
    void expandedChanged(bool expanded);

private:
    QToolButton *m_header;
    QWidget *m_content;
};

} // namespace membudget
