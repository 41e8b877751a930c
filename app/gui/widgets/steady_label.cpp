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
    // A smaller size is passed on once the texts pause (a drag's values come every few ms).
    m_shrink.setSingleShot(true);
    m_shrink.setInterval(300);
    connect(&m_shrink, &QTimer::timeout, this, [this] {
        if (const QSize now = seenNow(); now != m_seen)
            passOn(now);
    });
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
// here (QWidgetPrivate::updateGeometry_helper).
bool SteadyLabel::event(QEvent *event)
{
    if (event->type() != QEvent::LayoutRequest)
        return QWidget::event(event);
    reconsider();
    return true;
}

// Passed on at once when the text wants another height, more width than the box has, or more
// height than the box was given; a text that would fit a smaller box is passed on once the texts
// pause, so that changing digits do not make a line's box jitter during a drag.
void SteadyLabel::reconsider()
{
    if (sizePolicy() != m_label->sizePolicy()) { // word wrap switched: hfw with it
        setSizePolicy(m_label->sizePolicy());    // which asks the layouts itself
        return;
    }
    const QSize now = seenNow();
    if (needsAnotherSize(now) || now.height() > height())
        passOn(now);
    else if (now != m_seen)
        m_shrink.start();
}

// What the layouts above last saw of the label: a word-wrapped one's height at the box's width (its
// minimum is its longest word, far narrower than any box it sits in), a single line's size.
QSize SteadyLabel::seenNow() const
{
    if (m_label->hasHeightForWidth())
        return {width(), m_label->heightForWidth(width())};
    return m_label->sizeHint();
}

bool SteadyLabel::needsAnotherSize(QSize now) const
{
    return now.height() != m_seen.height() || now.width() > width();
}

void SteadyLabel::passOn(QSize now)
{
    m_shrink.stop();
    m_seen = now;
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

// A text set while hidden reached no layout (the label's request went nowhere): looked at now.
void SteadyLabel::showEvent(QShowEvent *event)
{
    QWidget::showEvent(event);
    reconsider();
}

bool SteadyLabel::tooSmall() const
{
    const QSize now = seenNow();
    return now.height() > height() || (!m_label->hasHeightForWidth() && now.width() > width());
}

} // namespace membudget
