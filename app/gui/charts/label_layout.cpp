// SPDX-License-Identifier: GPL-3.0-or-later
#include "charts/label_layout.h"

#include <QStringList>

#include <algorithm>
#include <numeric>

namespace membudget {

std::vector<double> stackLabels(const std::vector<double> &wanted,
                                const std::vector<double> &heights,
                                double top,
                                double bottom,
                                double gap)
{
    const std::size_t n = wanted.size();
    std::vector<std::size_t> order(n);
    std::iota(order.begin(), order.end(), std::size_t(0));
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return wanted[a] < wanted[b];
    });
    std::vector<double> y(n);
    // Down from the top: each at its wish or just below the one above it.
    auto pushDown = [&] {
        for (std::size_t k = 0; k < n; ++k) {
            const std::size_t i = order[k];
            const double least = k == 0 ? top + heights[i] / 2
                                        : y[order[k - 1]] + (heights[order[k - 1]] + heights[i]) / 2
                                              + gap;
            y[i] = std::max(wanted[i], least);
        }
    };
    pushDown();
    // Up from the bottom where that ran past it; then down again should they not fit at all.
    for (std::size_t k = n; k-- > 0;) {
        const std::size_t i = order[k];
        const double most = k + 1 == n
                                ? bottom - heights[i] / 2
                                : y[order[k + 1]] - (heights[order[k + 1]] + heights[i]) / 2 - gap;
        y[i] = std::min(y[i], most);
    }
    if (n > 0 && y[order[0]] - heights[order[0]] / 2 < top - 0.01) {
        for (std::size_t k = 0; k < n; ++k) {
            const std::size_t i = order[k];
            y[i] = k == 0 ? top + heights[i] / 2
                          : y[order[k - 1]] + (heights[order[k - 1]] + heights[i]) / 2 + gap;
        }
    }
    return y;
}

QString wrapText(
    const QString &text, const QFontMetrics &fm, int width, int maxLines, bool *shortened)
{
    QStringList lines;
    QString line;
    bool cut = false;
    const QStringList words = text.split(QLatin1Char(' '), Qt::SkipEmptyParts);
    for (qsizetype w = 0; w < words.size(); ++w) {
        const QString candidate = line.isEmpty() ? words[w] : line + QLatin1Char(' ') + words[w];
        if (line.isEmpty() || fm.horizontalAdvance(candidate) <= width) {
            line = candidate;
            continue;
        }
        lines << line;
        line = words[w];
        if (lines.size() == maxLines) {
            // No room for more lines: the rest goes into the last one, elided.
            line = lines.takeLast() + QLatin1Char(' ') + words.mid(w).join(QLatin1Char(' '));
            break;
        }
    }
    if (!line.isEmpty())
        lines << line;
    for (QString &l : lines) {
        if (fm.horizontalAdvance(l) > width) {
            l = fm.elidedText(l, Qt::ElideRight, std::max(width, 1));
            cut = true;
        }
    }
    if (shortened)
        *shortened = cut;
    return lines.join(QLatin1Char('\n'));
}

} // namespace membudget
