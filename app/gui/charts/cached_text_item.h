// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// A text item that, on screen, draws a pixmap of its text instead of laying the text out again:
// laying out and shaping text is a large part of a replot, and during a slider drag most labels
// (the pinned bars', the capacity lines', the Timeline tab's stages) keep their text. The pixmaps
// are shared by every item of the process, keyed by what they show, so that a chart which makes
// its items anew for each value (the Timeline tab) finds its labels drawn already. Exports
// (vectorized or non-caching painters) draw real text, as QCPItemText does.

#include <qcustomplot.h>

namespace membudget {

class CachedTextItem : public QCPItemText
{
public:
    using QCPItemText::QCPItemText;

    // The size of the text with its padding, as QCPItemText lays it out.
    QSize boxSize();

protected:
    void draw(QCPPainter *painter) override;

private:
    QPixmap pixmap(qreal dpr);

    bool m_boxValid = false;
    QString m_text;
    QFont m_font;
    Qt::Alignment m_alignment;
    QMargins m_padding;
    QRect m_textRect;
    QColor m_color;
    QPixmap m_pixmap;
};

} // namespace membudget
