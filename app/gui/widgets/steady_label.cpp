// SPDX-License-Identifier: GPL-3.0-or-later
#include "widgets/steady_label.h"

#include <QEvent>
#include <QLabel>

namespace membudget {

SteadyLabel::SteadyLabel(QLabel *label, QWidget *parent)
    : QWidget(parent)
    , m_label(label)
{
    m_label->setParent(this);
    m_label->installEventFilter(this);
    setSizePolicy(m_label->sizePolicy());
}

// Shown or hidden, the label takes its box with it (a hidden box hears nothing of its children).
bool SteadyLabel::eventFilter(QObject *watched, QEvent *event)
{
    if (watched == m_label && event->type() == QEvent::ShowToParent)
        show();
    else if (watched == m_label && event->type() == QEvent::HideToParent)
        hide();
    return QWidget::eventFilter(watched, event);
}

QSize SteadyLabel::sizeHint() const
{
    return m_label->sizeHint();
}

QSize SteadyLabel::minimumSizeHint() const
{
    return m_label->minimumSizeHint();
}

bool SteadyLabel::hasHeightForWidth() const
{
    return m_label->hasHeightForWidth();
}

int SteadyLabel::heightForWidth(int width) const
{
    return m_label->heightForWidth(width);
}

// The label has no layout above it but this box, so its updateGeometry posts a layout request
// here (QWidgetPrivate::updateGeometry_helper): passed on only when the text wants another height,
// or more width than the box has (a single-line label keeps the widest width it had until the next
// layout, so that changing digits do not make it jitter).
bool SteadyLabel::event(QEvent *event)
{
    if (event->type() == QEvent::LayoutRequest) {
        if (sizePolicy() != m_label->sizePolicy()) // word wrap switched: hfw with it
            setSizePolicy(m_label->sizePolicy());
        else if (needsAnotherSize())
            passOn();
        return true;
    }
    return QWidget::event(event);
}

// What the layouts above last saw of the label: a word-wrapped one's height at the box's width (its
// minimum is its longest word, far narrower than any box it sits in), a single line's size.
QSize SteadyLabel::seenNow() const
{
    if (m_label->hasHeightForWidth())
        return {width(), m_label->heightForWidth(width())};
    return m_label->sizeHint();
}

bool SteadyLabel::needsAnotherSize() const
{
    const QSize now = seenNow();
    return now.height() != m_seen.height() || now.width() > width();
}

void SteadyLabel::passOn()
{
    m_seen = seenNow();
    updateGeometry();
}

// Layouts cache a height-for-width per width, and a size hint: a text kept from them may leave a
// stale one (for a width seen before, or from a text set while the box was hidden, when the
// label's request reaches no one). Resized smaller than the text wants, the box asks again.
void SteadyLabel::resizeEvent(QResizeEvent *event)
{
    QWidget::resizeEvent(event);
    m_label->setGeometry(rect());
    const QSize before = m_seen;
    m_seen = seenNow();
    if (m_seen != before && tooSmall())
        updateGeometry();
}

void SteadyLabel::showEvent(QShowEvent *event)
{
    QWidget::showEvent(event);
    if (tooSmall())
        passOn();
}

bool SteadyLabel::tooSmall() const
{
    const QSize now = seenNow();
    return now.height() > height() || (!m_label->hasHeightForWidth() && now.width() > width());
}

} // namespace membudget
