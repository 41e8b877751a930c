// SPDX-License-Identifier: GPL-3.0-or-later
#include "widgets/collapsible_section.h"

#include <QToolButton>
#include <QVBoxLayout>

namespace membudget {

CollapsibleSection::CollapsibleSection(const QString &title, QWidget *parent)
    : QWidget(parent)
    , m_header(new QToolButton)
    , m_content(new QWidget)
{
    m_header->setText(title);
    m_header->setCheckable(true);
    m_header->setChecked(true);
    m_header->setAutoRaise(true);
    m_header->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    m_header->setArrowType(Qt::DownArrow);
    m_header->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    m_header->setToolTip(tr("Show or hide these settings"));
    QFont bold = m_header->font();
    bold.setBold(true);
    m_header->setFont(bold);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    layout->addWidget(m_header);
    layout->addWidget(m_content);
    connect(m_header, &QToolButton::toggled, this, [this](bool on) {
        m_header->setArrowType(on ? Qt::DownArrow : Qt::RightArrow);
        m_content->setVisible(on);
        Q_EMIT expandedChanged(on);
    });
}

bool CollapsibleSection::isExpanded() const
{
    return m_header->isChecked();
}

void CollapsibleSection::setExpanded(bool expanded)
{
    m_header->setChecked(expanded);
}

} // namespace membudget
