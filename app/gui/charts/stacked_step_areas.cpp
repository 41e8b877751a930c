// SPDX-License-Identifier: GPL-3.0-or-later
#include "charts/stacked_step_areas.h"

#include <QImage>

#include <algorithm>
#include <cmath>

namespace membudget {

namespace {

// One band's pixels in an image: runs of columns, each filled between two rows.
class BandPainter
{
public:
    BandPainter(QImage &image, QRgb fill, QRgb edge)
        : m_bits(image.bits())
        , m_stride(image.bytesPerLine())
        , m_width(image.width())
        , m_height(image.height())
        , m_fill(fill)
        , m_edge(edge)
    {}

    // Columns [x0, x1) from row yTop down to row yBottom (exclusive), the top row in the edge
    // colour.
    void run(int x0, int x1, int yTop, int yBottom)
    {
        x0 = std::clamp(x0, 0, m_width);
        x1 = std::clamp(x1, 0, m_width);
        if (x0 >= x1)
            return;
        const int top = std::clamp(yTop, 0, m_height), bottom = std::clamp(yBottom, 0, m_height);
        for (int y = top; y < bottom; ++y)
            std::fill(line(y) + x0, line(y) + x1, y == yTop ? m_edge : m_fill);
    }

    // The vertical edge in column x between two tops.
    void riser(int x, int yFrom, int yTo)
    {
        if (x < 0 || x >= m_width)
            return;
        const int a = std::clamp(std::min(yFrom, yTo), 0, m_height);
        const int b = std::clamp(std::max(yFrom, yTo) + 1, 0, m_height);
        for (int y = a; y < b; ++y)
            line(y)[x] = m_edge;
    }

private:
    QRgb *line(int y) const { return reinterpret_cast<QRgb *>(m_bits + y * m_stride); }

    uchar *m_bits;
    qsizetype m_stride;
    int m_width, m_height;
    QRgb m_fill, m_edge;
};

} // namespace

StackedStepAreas::StackedStepAreas(QCPAxis *keyAxis, QCPAxis *valueAxis)
    : QCPLayerable(keyAxis->parentPlot(), QString(), keyAxis->axisRect())
    , m_keyAxis(keyAxis)
    , m_valueAxis(valueAxis)
{}

void StackedStepAreas::setData(QVector<double> keys, std::vector<Band> bands)
{
    m_keys = std::move(keys);
    m_bands = std::move(bands);
}

void StackedStepAreas::clearData()
{
    m_keys.clear();
    m_bands.clear();
}

void StackedStepAreas::applyDefaultAntialiasingHint(QCPPainter *painter) const
{
    painter->setAntialiasing(false);
}

void StackedStepAreas::draw(QCPPainter *painter)
{
    const QRect area = m_keyAxis->axisRect()->rect();
    const int n = static_cast<int>(m_keys.size());
    if (area.isEmpty() || n < 2 || m_bands.empty())
        return;
    const qreal dpr = painter->device() ? painter->device()->devicePixelRatioF() : 1.0;
    QImage image(area.size() * dpr, QImage::Format_ARGB32_Premultiplied);
    image.setDevicePixelRatio(dpr);
    image.fill(Qt::transparent);
    const auto column = [&](double key) {
        return static_cast<int>(std::lround((m_keyAxis->coordToPixel(key) - area.left()) * dpr));
    };
    const auto row = [&](double value) {
        return static_cast<int>(std::lround((m_valueAxis->coordToPixel(value) - area.top()) * dpr));
    };
    std::vector<int> columns(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i)
        columns[static_cast<std::size_t>(i)] = column(m_keys[i]);
    std::vector<int> below(static_cast<std::size_t>(n), row(0.0));
    std::vector<int> tops(static_cast<std::size_t>(n));
    for (const Band &band : m_bands) {
        for (int i = 0; i < n; ++i)
            tops[static_cast<std::size_t>(i)] = row(band.top[i]);
        BandPainter paint(image, qPremultiply(band.fill.rgba()), qPremultiply(band.edge.rgba()));
        // Each value holds from its column to the next one's; neighbours with the same rows are
        // one run (two points per pixel column are common after decimation).
        int runStart = columns[0];
        for (int i = 0; i + 1 < n; ++i) {
            const auto k = static_cast<std::size_t>(i);
            const bool same = tops[k + 1] == tops[k] && below[k + 1] == below[k];
            if (same && i + 2 < n)
                continue;
            // At least one column, even for steps closer together than a pixel.
            const int end = std::max(columns[k + 1], runStart + 1);
            paint.run(runStart, end, tops[k], std::max(below[k], tops[k] + 1));
            if (i + 2 < n)
                paint.riser(columns[k + 1], tops[k], tops[k + 1]);
            runStart = columns[k + 1];
        }
        below = tops;
    }
    painter->drawImage(QPointF(area.topLeft()), image);
}

} // namespace membudget
