// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Where chart labels go so that they never overlap: pure functions over pixel sizes, and the record
// of what a chart placed (for hover texts and for tests that check no two labels intersect).

#include <QColor>
#include <QFontMetrics>
#include <QRectF>
#include <QString>

#include <vector>

namespace membudget {

struct PlacedLabel
{
    enum Kind { Capacity, Total, Segment, BarName };
    Kind kind = Total;
    QString text;      // as drawn
    QString toolTip;   // the whole text where the drawn one is shortened, else empty
    QRectF rect;       // in the pixels of the surface last painted (screen or export)
    QColor color;      // of the text
    QColor background; // what the text sits on (the chart, a backdrop or a bar's segment)
};

// Centres for labels of `heights` that want their centres at `wanted` (pixels, y down): each as
// close to its wish as the others allow, in the same order, at least `gap` apart, inside
// [top, bottom] when they fit there (below `bottom` otherwise). Never two overlapping.
std::vector<double> stackLabels(const std::vector<double> &wanted,
                                const std::vector<double> &heights,
                                double top,
                                double bottom,
                                double gap = 1.0);

// `text` broken at spaces into lines no wider than `width` pixels, at most `maxLines` of them; a
// word too wide for a line, or what does not fit in the last line, is elided with "…" (then
// `*shortened` is set).
QString wrapText(const QString &text,
                 const QFontMetrics &metrics,
                 int width,
                 int maxLines,
                 bool *shortened = nullptr);

} // namespace membudget
