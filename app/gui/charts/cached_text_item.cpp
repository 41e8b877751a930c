// SPDX-License-Identifier: GPL-3.0-or-later
#include "charts/cached_text_item.h"

#include <QCache>
#include <QPainter>

#include <cmath>

namespace membudget {

namespace {

// Pixmaps of texts drawn lately, by what they show; a few MB at most.
QCache<QString, QPixmap> &sharedPixmaps()
{
    static QCache<QString, QPixmap> cache(8 * 1024 * 1024);
    return cache;
}

// Texts' bounding rectangles by font, alignment and text: a chart that makes its items anew for
// each value measures each label once.
QCache<QString, QRect> &sharedTextRects()
{
    static QCache<QString, QRect> cache(4096);
    return cache;
}

// Everything of a font that changes how a text is laid out or drawn: QFont::key() leaves out
// kerning, overline and the hinting preference.
QString fontKey(const QFont &font)
{
    return font.toString()
           + QStringLiteral(",%1,%2,%3")
                 .arg(font.kerning())
                 .arg(font.overline())
                 .arg(int(font.hintingPreference()));
}

} // namespace

QSize CachedTextItem::boxSize()
{
    const QFont font = mainFont();
    if (!m_boxValid || m_text != mText || m_font != font || m_alignment != mTextAlignment
        || m_padding != mPadding) {
        m_text = mText;
        m_font = font;
        m_alignment = mTextAlignment;
        m_padding = mPadding;
        const QString key = fontKey(font) + QLatin1Char('\x1f')
                            + QString::number(int(mTextAlignment)) + QLatin1Char('\x1f') + mText;
        if (const QRect *known = sharedTextRects().object(key)) {
            m_textRect = *known;
        } else {
            m_textRect = QFontMetrics(font)
                             .boundingRect(0, 0, 0, 0, Qt::TextDontClip | mTextAlignment, mText);
            sharedTextRects().insert(key, new QRect(m_textRect));
        }
        m_boxValid = true;
        m_pixmap = QPixmap();
    }
    return m_textRect
        .adjusted(-mPadding.left(), -mPadding.top(), mPadding.right(), mPadding.bottom())
        .size();
}

// The text drawn in its colour on a transparent pixmap of the box's size (boxSize() first).
QPixmap CachedTextItem::pixmap(qreal dpr)
{
    const QColor color = mainColor();
    if (!m_pixmap.isNull() && m_color == color && qFuzzyCompare(m_pixmap.devicePixelRatio(), dpr))
        return m_pixmap;
    m_color = color;
    const QString key = QStringLiteral("%1\x1f%2\x1f%3\x1f%4\x1f%5,%6,%7,%8\x1f%9")
                            .arg(fontKey(m_font))
                            .arg(color.rgba())
                            .arg(int(m_alignment))
                            .arg(dpr)
                            .arg(m_padding.left())
                            .arg(m_padding.top())
                            .arg(m_padding.right())
                            .arg(m_padding.bottom())
                            .arg(m_text);
    if (const QPixmap *shared = sharedPixmaps().object(key)) {
        m_pixmap = *shared;
        return m_pixmap;
    }
    const QSize box = boxSize();
    m_pixmap = QPixmap(QSize(qCeil(box.width() * dpr), qCeil(box.height() * dpr)));
    m_pixmap.setDevicePixelRatio(dpr);
    m_pixmap.fill(Qt::transparent);
    QPainter p(&m_pixmap);
    p.setFont(m_font);
    p.setPen(color);
    p.drawText(m_textRect.translated(mPadding.left() - m_textRect.left(),
                                     mPadding.top() - m_textRect.top()),
               Qt::TextDontClip | m_alignment,
               m_text);
    p.end();
    sharedPixmaps().insert(key,
                           new QPixmap(m_pixmap),
                           std::max<qsizetype>(1, m_pixmap.width() * m_pixmap.height() * 4));
    return m_pixmap;
}

void CachedTextItem::draw(QCPPainter *painter)
{
    const bool plain = qFuzzyIsNull(mRotation) && mainPen().style() == Qt::NoPen
                       && (mainBrush().style() == Qt::NoBrush
                           || mainBrush().style() == Qt::SolidPattern);
    if (!plain || painter->modes().testFlag(QCPPainter::pmVectorized)
        || painter->modes().testFlag(QCPPainter::pmNoCaching)) {
        QCPItemText::draw(painter);
        return;
    }
    const QSize box = boxSize();
    if (mText.isEmpty() || box.isEmpty())
        return;
    // Where QCPItemText puts the box: the anchor plus the alignment offset, rounded as it does.
    const QPointF pos = position->pixelPosition();
    // A label scrolled far off the axis range lands at a pixel position past int; not drawn
    // (qRound of it would overflow, found by tst_monkey_input under UBSan).
    if (!(std::abs(pos.x()) < 1e6 && std::abs(pos.y()) < 1e6))
        return;
    const QPoint offset = getTextDrawPoint(QPointF(0, 0),
                                           QRectF(QPointF(0, 0), QSizeF(box)),
                                           mPositionAlignment)
                              .toPoint();
    const QPoint corner(qRound(pos.x()) + offset.x(), qRound(pos.y()) + offset.y());
    if (!QRect(corner, box).intersects(clipRect()))
        return;
    const qreal dpr = painter->device() ? painter->device()->devicePixelRatioF() : 1.0;
    if (mainBrush().style() == Qt::SolidPattern) // a backdrop: lines behind stay behind
        painter->fillRect(QRect(corner, box), mainBrush());
    painter->drawPixmap(corner, pixmap(dpr));
}

} // namespace membudget
