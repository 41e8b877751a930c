// SPDX-License-Identifier: GPL-3.0-or-later
#include "charts/budget_chart.h"

#include "advice/explanation.h"
#include "charts/chart_theme.h"

#include <QToolTip>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace membudget {

namespace {

constexpr double kBarWidth = 0.62;

// The next "nice" number (1, 2, 2.5, 5 x 10^k) at or above `v`.
double niceCeil(double v)
{
    if (!(v > 0))
        return 1;
    const double exp = std::pow(10.0, std::floor(std::log10(v)));
    for (double m : {1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0})
        if (m * exp >= v * 0.9999)
            return m * exp;
    return 10 * exp;
}

QString unitName(ByteUnit unit)
{
    return unit == ByteUnit::GiB ? QStringLiteral("GiB") : QStringLiteral("GB");
}

QString bytesText(Bytes bytes, ByteUnit unit, int decimals = 1)
{
    return QString::fromStdString(formatBytes(bytes, unit, decimals));
}

// A text item that, on screen, draws a pixmap of its text made when the text (or its font, colour,
// alignment or padding) last changed: laying out and shaping text is the largest part of a
// replot, and during a slider drag most labels (the pinned bars', the capacity lines') keep their
// text. Exports (vectorized or non-caching painters) draw real text, as QCPItemText does.
class CachedTextItem : public QCPItemText
{
public:
    using QCPItemText::QCPItemText;

    // The size of the text with its padding, as QCPItemText lays it out.
    QSize boxSize()
    {
        const QFont font = mainFont();
        if (!m_boxValid || m_text != mText || m_font != font || m_alignment != mTextAlignment
            || m_padding != mPadding) {
            m_text = mText;
            m_font = font;
            m_alignment = mTextAlignment;
            m_padding = mPadding;
            m_textRect = QFontMetrics(font)
                             .boundingRect(0, 0, 0, 0, Qt::TextDontClip | mTextAlignment, mText);
            m_boxValid = true;
            m_pixmap = QPixmap();
        }
        return m_textRect
            .adjusted(-mPadding.left(), -mPadding.top(), mPadding.right(), mPadding.bottom())
            .size();
    }

protected:
    void draw(QCPPainter *painter) override
    {
        const bool plain = qFuzzyIsNull(mRotation) && mainPen().style() == Qt::NoPen
                           && mainBrush().style() == Qt::NoBrush;
        if (!plain || painter->modes().testFlag(QCPPainter::pmVectorized)
            || painter->modes().testFlag(QCPPainter::pmNoCaching)) {
            QCPItemText::draw(painter);
            return;
        }
        const QSize box = boxSize();
        if (mText.isEmpty() || box.isEmpty())
            return;
        const qreal dpr = painter->device() ? painter->device()->devicePixelRatioF() : 1.0;
        const QColor color = mainColor();
        if (m_pixmap.isNull() || m_color != color
            || !qFuzzyCompare(m_pixmap.devicePixelRatio(), dpr)) {
            m_color = color;
            m_pixmap = QPixmap(QSize(qCeil(box.width() * dpr), qCeil(box.height() * dpr)));
            m_pixmap.setDevicePixelRatio(dpr);
            m_pixmap.fill(Qt::transparent);
            QPainter p(&m_pixmap);
            p.setFont(m_font);
            p.setPen(color);
            p.drawText(m_textRect.translated(mPadding.left() - m_textRect.left(),
                                             mPadding.top() - m_textRect.top()),
                       Qt::TextDontClip | mTextAlignment,
                       mText);
        }
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
        if (QRect(corner, box).intersects(clipRect()))
            painter->drawPixmap(corner, m_pixmap);
    }

private:
    bool m_boxValid = false;
    QString m_text;
    QFont m_font;
    Qt::Alignment m_alignment;
    QMargins m_padding;
    QRect m_textRect;
    QColor m_color;
    QPixmap m_pixmap;
};

// A legend entry for a component's bars that remembers its text's size and, on screen, draws the
// text from a pixmap: the legend is laid out and drawn on every replot, its texts hardly change.
class CachedLegendItem : public QCPPlottableLegendItem
{
public:
    CachedLegendItem(QCPLegend *legend, QCPBars *bars)
        : QCPPlottableLegendItem(legend, bars)
        , m_bars(bars)
    {}

protected:
    QSize minimumOuterSizeHint() const override
    {
        const QRect text = textRect();
        const QSize icon = mParentLegend->iconSize();
        return {icon.width() + mParentLegend->iconTextPadding() + text.width() + mMargins.left()
                    + mMargins.right(),
                std::max(text.height(), icon.height()) + mMargins.top() + mMargins.bottom()};
    }

    void draw(QCPPainter *painter) override
    {
        if (painter->modes().testFlag(QCPPainter::pmVectorized)
            || painter->modes().testFlag(QCPPainter::pmNoCaching)
            || getIconBorderPen().style() != Qt::NoPen) {
            QCPPlottableLegendItem::draw(painter);
            return;
        }
        // As QCPPlottableLegendItem: the text right of the icon, top-aligned; the icon as
        // QCPBars::drawLegendIcon draws it.
        const QSize icon = mParentLegend->iconSize();
        const QRect text = textRect();
        const QSize box(text.width(), std::max(text.height(), icon.height()));
        const qreal dpr = painter->device() ? painter->device()->devicePixelRatioF() : 1.0;
        const QColor color = getTextColor();
        if (m_pixmap.isNull() || m_pixmapText != m_bars->name() || m_color != color
            || !qFuzzyCompare(m_pixmap.devicePixelRatio(), dpr)) {
            m_pixmapText = m_bars->name();
            m_color = color;
            m_pixmap = QPixmap(QSize(qCeil(box.width() * dpr), qCeil(box.height() * dpr)));
            m_pixmap.setDevicePixelRatio(dpr);
            m_pixmap.fill(Qt::transparent);
            QPainter p(&m_pixmap);
            p.setFont(getFont());
            p.setPen(color);
            p.drawText(QRect(QPoint(0, 0), box), Qt::TextDontClip, m_pixmapText);
        }
        painter->drawPixmap(QPoint(mRect.x() + icon.width() + mParentLegend->iconTextPadding(),
                                   mRect.y()),
                            m_pixmap);
        const QRect iconRect(mRect.topLeft(), icon);
        painter->save();
        painter->setClipRect(iconRect, Qt::IntersectClip);
        painter->setAntialiasing(m_bars->antialiased());
        painter->setBrush(m_bars->brush());
        painter->setPen(m_bars->pen());
        QRectF r(0, 0, iconRect.width() * 0.67, iconRect.height() * 0.67);
        r.moveCenter(QRectF(iconRect).center());
        painter->drawRect(r);
        painter->restore();
    }

private:
    QRect textRect() const
    {
        const QFont font = getFont();
        const QSize icon = mParentLegend->iconSize();
        if (m_text != m_bars->name() || m_font != font || m_iconHeight != icon.height()) {
            m_text = m_bars->name();
            m_font = font;
            m_iconHeight = icon.height();
            m_textRect
                = QFontMetrics(font).boundingRect(0, 0, 0, icon.height(), Qt::TextDontClip, m_text);
        }
        return m_textRect;
    }

    QCPBars *m_bars;
    mutable QString m_text;
    mutable QFont m_font;
    mutable int m_iconHeight = -1;
    mutable QRect m_textRect;
    QString m_pixmapText;
    QColor m_color;
    QPixmap m_pixmap;
};

// A value label inside a bar segment that draws itself only when the segment is tall and wide
// enough at the size being painted (screen or export).
class SegmentLabel : public CachedTextItem
{
public:
    using CachedTextItem::CachedTextItem;
    double low = 0;
    double high = 0;
    double barWidth = kBarWidth;

protected:
    void draw(QCPPainter *painter) override
    {
        QCPAxis *y = position->valueAxis();
        QCPAxis *x = position->keyAxis();
        if (!x || !y)
            return;
        const double height = std::abs(y->coordToPixel(low) - y->coordToPixel(high));
        const double width = std::abs(x->coordToPixel(barWidth) - x->coordToPixel(0));
        const QSize text = boxSize();
        if (height < text.height() + 2 || width < text.width() + 8)
            return;
        CachedTextItem::draw(painter);
    }
};

} // namespace

ChartBar chartBarFor(const QString &label,
                     const QString &detail,
                     const Scenario &scenario,
                     const PresetCatalog &catalog)
{
    ChartBar bar;
    bar.label = label;
    bar.detail = detail;
    std::string error;
    if (auto input = resolveScenario(scenario, catalog, error)) {
        bar.input = *input;
        bar.estimate = estimateMemory(*input);
    } else {
        bar.valid = false;
        bar.error = QString::fromStdString(error);
    }
    return bar;
}

BudgetChart::BudgetChart(QWidget *parent)
    : QCustomPlot(parent)
{
    setMinimumSize(360, 260);
    // Antialiasing as each element asks (QCP::aeAll forced it on everything): bars, frames, grid
    // and capacity lines are axis-aligned, crisp and cheaper without; text is antialiased anyway.
    setAntialiasedElements(QCP::aeNone);
    // Capacity lines, totals, segment values and frames go on the "overlay" layer, above the bars.
    // Everything is redrawn on each replot anyway, so one paint buffer for all layers: a buffered
    // overlay would be cleared and blended onto the widget separately every time.
    layer(QStringLiteral("overlay"))->setMode(QCPLayer::lmLogical);
    setNoAntialiasingOnDrag(false);
    setMouseTracking(true);
    setAttribute(Qt::WA_AlwaysShowToolTips);

    // Layout: [title] / [axis rect | legend] / [caption]; title and caption are added on demand.
    QCPAxisRect *rect = axisRect();
    plotLayout()->take(rect);
    plotLayout()->simplify();
    m_body = new QCPLayoutGrid;
    plotLayout()->addElement(0, 0, m_body);
    m_body->addElement(0, 0, rect);
    rect->insetLayout()->take(legend);
    auto *side = new QCPLayoutGrid;
    m_body->addElement(0, 1, side);
    side->addElement(0, 0, legend);
    side->addElement(1, 0, new QCPLayoutElement(this)); // spacer keeps the legend at the top
    side->setRowStretchFactor(0, 0.001);
    side->setRowStretchFactor(1, 1);
    m_body->setColumnStretchFactor(0, 1);
    m_body->setColumnStretchFactor(1, 0.001);
    legend->setVisible(true);
    legend->setIconSize(14, 14);
    legend->setRowSpacing(5);
    legend->setMargins(QMargins(10, 6, 14, 6));
    legend->setSelectableParts(QCPLegend::spNone);

    rect->setupFullAxesBox(false);
    xAxis2->setVisible(false);
    yAxis2->setVisible(false);
    xAxis->setTickLength(0, 0);
    xAxis->setSubTicks(false);
    xAxis->grid()->setVisible(false);
    yAxis->grid()->setSubGridVisible(false);
    yAxis->setSubTicks(false);
    yAxis->setNumberFormat(QStringLiteral("g"));
    yAxis->setPadding(6);
    xAxis->setTicker(QSharedPointer<QCPAxisTickerText>(new QCPAxisTickerText));

    // Bars in stacking order, bottom to top: persistent memory first, the transient on top. The
    // legend lists them as updateData() says.
    setAutoAddPlottableToLegend(false);
    for (int c = 0; c < kComponentCount; ++c) {
        auto *bars = new QCPBars(xAxis, yAxis);
        bars->setName(componentName(static_cast<Component>(c)));
        bars->setWidth(kBarWidth);
        bars->setStackingGap(0);
        bars->setAntialiased(false);
        if (c > 0)
            bars->moveAbove(m_components[static_cast<std::size_t>(c - 1)]);
        m_components[static_cast<std::size_t>(c)] = bars;
    }
    applyTheme();
    refresh();
}

double BudgetChart::toUnit(Bytes bytes) const
{
    const double div = m_unit == ByteUnit::GiB ? static_cast<double>(kGiB)
                                               : static_cast<double>(kGB);
    return static_cast<double>(bytes) / div;
}

void BudgetChart::setBars(std::vector<ChartBar> bars)
{
    m_bars = std::move(bars);
    refresh();
}

void BudgetChart::setGpus(std::vector<GpuSpec> gpus)
{
    m_gpus = std::move(gpus);
    refresh();
}

void BudgetChart::setContents(std::vector<ChartBar> bars, std::vector<GpuSpec> gpus)
{
    m_bars = std::move(bars);
    m_gpus = std::move(gpus);
    refresh();
}

void BudgetChart::setUnit(ByteUnit unit)
{
    if (unit == m_unit)
        return;
    m_unit = unit;
    m_upper = 0;
    refresh();
}

void BudgetChart::setAxisFrozen(bool frozen)
{
    if (frozen == m_frozen)
        return;
    m_frozen = frozen;
    if (!frozen) {
        updateRange();
        replot(rpQueuedReplot);
    }
}

void BudgetChart::resetAxis()
{
    m_upper = 0;
    updateRange();
    replot(rpQueuedReplot);
}

void BudgetChart::refresh()
{
    updateData();
    updateRange();
    updateCapacityLines();
    updateLabels();
    replot(rpQueuedReplot);
}

double BudgetChart::segmentValue(int index, Component component) const
{
    const QCPBars *bars = componentBars(component);
    auto it = bars->data()->findBegin(index, false);
    if (it == bars->data()->constEnd() || it->key != index)
        return 0;
    return it->value;
}

void BudgetChart::updateData()
{
    const int n = static_cast<int>(m_bars.size());
    std::array<bool, kComponentCount> inLegend{};
    for (int c = 0; c < kComponentCount; ++c) {
        QVector<double> keys, values;
        keys.reserve(n);
        values.reserve(n);
        bool any = false;
        for (int i = 0; i < n; ++i) {
            const ChartBar &bar = m_bars[static_cast<std::size_t>(i)];
            const double v = bar.valid ? toUnit(bar.estimate.components[static_cast<Component>(c)])
                                       : 0.0;
            keys.push_back(i);
            values.push_back(v);
            any = any || v > 0;
        }
        m_components[static_cast<std::size_t>(c)]->setData(keys, values, true);
        inLegend[static_cast<std::size_t>(c)] = any;
    }
    // The legend lists only what some bar holds, from the top of the stack down. Rebuilt only when
    // that set changes (not on every slider step).
    if (legend && inLegend != m_inLegend) {
        m_inLegend = inLegend;
        legend->clearItems();
        for (int c = kComponentCount - 1; c >= 0; --c)
            if (inLegend[static_cast<std::size_t>(c)])
                legend->addItem(
                    new CachedLegendItem(legend, m_components[static_cast<std::size_t>(c)]));
        const ChartColors colors = chartColors(palette());
        for (int i = 0; i < legend->itemCount(); ++i)
            if (auto *item = legend->item(i))
                item->setTextColor(colors.text);
    }

    auto ticker = qSharedPointerCast<QCPAxisTickerText>(xAxis->ticker());
    ticker->clear();
    for (int i = 0; i < n; ++i) {
        const ChartBar &bar = m_bars[static_cast<std::size_t>(i)];
        QString label = bar.label;
        if (!bar.detail.isEmpty()) {
            QString detail = bar.detail;
            const int room = n <= 3 ? 60 : 34;
            if (detail.size() > room)
                detail = detail.left(room - 2) + QStringLiteral("…");
            label += QLatin1Char('\n') + detail;
        }
        ticker->addTick(i, label);
    }
    // Room on the right for the capacity labels; at least three bars' worth so that one bar is not
    // a wall.
    xAxis->setRange(-0.6, std::max(n - 0.4, 2.9));
}

void BudgetChart::updateCapacityLines()
{
    const ChartColors colors = chartColors(palette());
    while (m_capacityLines.size() > m_gpus.size()) {
        removeItem(m_capacityLines.back());
        m_capacityLines.pop_back();
    }
    while (m_capacityLines.size() < m_gpus.size()) {
        auto *line = new QCPItemStraightLine(this);
        line->setSelectable(false);
        line->setAntialiased(false); // horizontal: crisp without, and antialiased dashes cost
        line->setLayer(QStringLiteral("overlay"));
        m_capacityLines.push_back(line);
    }
    QFont labelFont = font();
    labelFont.setPointSizeF(labelFont.pointSizeF() * 0.9);
    labelFont.setBold(true);

    // Labels sit right of the plot, beside their line. The right axis carries the same texts,
    // invisible, so that the layout leaves room for them.
    auto ticker = QSharedPointer<QCPAxisTickerText>(new QCPAxisTickerText);
    // GPUs of about the same size share a label (stacked labels would overprint each other).
    struct Group
    {
        double y;
        QStringList names;
        QStringList sizes;
        int firstGpu;
    };
    std::vector<Group> groups;
    const double near = 0.04 * std::max(m_upper, 1e-9);
    for (std::size_t i = 0; i < m_gpus.size(); ++i) {
        const GpuSpec &gpu = m_gpus[i];
        const double y = toUnit(gpu.memory_bytes);
        const QString size = bytesText(gpu.memory_bytes, m_unit, 1);
        auto it = std::find_if(groups.begin(), groups.end(), [&](const Group &g) {
            return std::abs(g.y - y) < near;
        });
        if (it == groups.end()) {
            groups.push_back({y, {shortGpuName(gpu)}, {size}, static_cast<int>(i)});
        } else {
            it->names << shortGpuName(gpu);
            if (!it->sizes.contains(size))
                it->sizes << size;
        }
    }
    for (std::size_t i = 0; i < m_gpus.size(); ++i) {
        const GpuSpec &gpu = m_gpus[i];
        const double y = toUnit(gpu.memory_bytes);
        const QColor color = gpuLineColor(static_cast<int>(i), colors.dark);
        QCPItemStraightLine *line = m_capacityLines[i];
        line->point1->setCoords(0, y);
        line->point2->setCoords(1, y);
        line->setPen(QPen(color, 1.6, Qt::DashLine));
    }
    for (std::size_t g = 0; g < groups.size(); ++g) {
        const Group &group = groups[g];
        const double y = group.y;
        const QString text = QStringLiteral("%1\n%2").arg(group.names.join(QLatin1Char('\n')),
                                                          group.sizes.join(QStringLiteral(" / ")));
        QCPItemText *label = labelAt(m_capacityLabels, g); // reused: its text stays cached
        label->setClipToAxisRect(false);
        label->position->setTypeX(QCPItemPosition::ptAxisRectRatio);
        label->position->setTypeY(QCPItemPosition::ptPlotCoords);
        label->position->setCoords(1.0, y);
        label->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
        label->setTextAlignment(Qt::AlignLeft);
        label->setPadding(QMargins(6, 0, 2, 0));
        label->setFont(labelFont);
        label->setColor(gpuLineColor(group.firstGpu, colors.dark));
        label->setText(text);
        ticker->addTick(y, text);
    }
    for (std::size_t g = groups.size(); g < m_capacityLabels.size(); ++g)
        m_capacityLabels[g]->setVisible(false);
    yAxis2->setVisible(!m_gpus.empty());
    yAxis2->setTickLabels(true);
    yAxis2->setTicker(ticker);
    yAxis2->setTickLabelFont(labelFont);
    yAxis2->setTickLabelColor(Qt::transparent);
    yAxis2->setBasePen(Qt::NoPen);
    yAxis2->setTickPen(Qt::NoPen);
    yAxis2->setSubTickPen(Qt::NoPen);
    yAxis2->grid()->setVisible(false);
    yAxis2->setTickLabelPadding(6);
    yAxis2->setPadding(12); // slack for renderers whose text is a little wider (PDF)
}

QCPItemText *BudgetChart::labelAt(std::vector<QCPItemText *> &pool, std::size_t i)
{
    while (pool.size() <= i) {
        auto *text = new CachedTextItem(this);
        text->setSelectable(false);
        text->setLayer(QStringLiteral("overlay"));
        pool.push_back(text);
    }
    pool[i]->setVisible(true);
    return pool[i];
}

QString BudgetChart::overCapacityText(int index) const
{
    if (index < 0 || index >= static_cast<int>(m_bars.size()))
        return {};
    const ChartBar &bar = m_bars[static_cast<std::size_t>(index)];
    if (!bar.valid)
        return {};
    QStringList over;
    for (const GpuSpec &gpu : m_gpus)
        if (bar.estimate.device_total > gpu.memory_bytes)
            over << shortGpuName(gpu);
    if (over.isEmpty())
        return {};
    if (over.size() > 2)
        return tr("exceeds %1 GPUs").arg(over.size());
    return tr("exceeds %1").arg(over.join(QStringLiteral(", ")));
}

void BudgetChart::updateLabels()
{
    const ChartColors colors = chartColors(palette());
    const std::size_t n = m_bars.size();
    QFont bold = font();
    bold.setBold(true);
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.85);

    std::size_t segment = 0;
    std::size_t frames = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const ChartBar &bar = m_bars[i];
        QCPItemText *total = labelAt(m_totalLabels, i);
        total->position->setType(QCPItemPosition::ptPlotCoords);
        total->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
        total->setTextAlignment(Qt::AlignHCenter);
        total->setFont(bold);
        total->setPadding(QMargins(2, 2, 2, 4));
        if (!bar.valid) {
            total->position->setCoords(static_cast<double>(i), 0);
            total->setText(tr("cannot estimate"));
            total->setColor(colors.danger);
            continue;
        }
        const QString over = overCapacityText(static_cast<int>(i));
        QString text = bar.estimate.too_large ? tr("too large")
                                              : bytesText(bar.estimate.device_total, m_unit);
        if (!over.isEmpty()) {
            // Long words when there is room for them, a count when bars stand close together.
            int count = 0;
            for (const GpuSpec &gpu : m_gpus)
                count += bar.estimate.device_total > gpu.memory_bytes ? 1 : 0;
            if (n <= 2)
                text += QStringLiteral("\n✗ ") + over;
            else if (count == static_cast<int>(m_gpus.size()))
                text += QStringLiteral("\n✗ ")
                        + (count == 1 ? tr("over capacity") : tr("over all %1").arg(count));
            else
                text += QStringLiteral("\n✗ ") + tr("over %1 of %2").arg(count).arg(m_gpus.size());
        } else if (!m_gpus.empty()) {
            text += QStringLiteral("\n✓ ") + tr("fits");
        }
        total->setText(text);
        total->setColor(over.isEmpty() ? colors.text : colors.danger);
        total->position->setCoords(static_cast<double>(i),
                                   std::min(toUnit(bar.estimate.device_total), m_upper));

        if (!over.isEmpty()) {
            while (m_overFrames.size() <= frames) {
                auto *r = new QCPItemRect(this);
                r->setSelectable(false);
                r->setAntialiased(false); // axis-aligned: crisp without
                r->setLayer(QStringLiteral("overlay"));
                m_overFrames.push_back(r);
            }
            QCPItemRect *frame = m_overFrames[frames++];
            frame->setVisible(true);
            frame->setPen(QPen(colors.danger, 2));
            frame->setBrush(Qt::NoBrush);
            frame->topLeft->setCoords(static_cast<double>(i) - kBarWidth / 2,
                                      toUnit(bar.estimate.device_total));
            frame->bottomRight->setCoords(static_cast<double>(i) + kBarWidth / 2, 0);
        }

        // Segment values inside the bar; hidden when the segment is too thin (see beforeReplot).
        double base = 0;
        for (int c = 0; c < kComponentCount; ++c) {
            const Component comp = static_cast<Component>(c);
            const double v = toUnit(bar.estimate.components[comp]);
            if (v <= 0)
                continue;
            while (m_segmentLabels.size() <= segment) {
                auto *created = new SegmentLabel(this);
                created->setSelectable(false);
                created->setLayer(QStringLiteral("overlay"));
                m_segmentLabels.push_back(created);
            }
            auto *label = static_cast<SegmentLabel *>(m_segmentLabels[segment++]);
            label->setVisible(true);
            label->low = base;
            label->high = base + v;
            label->position->setType(QCPItemPosition::ptPlotCoords);
            label->position->setCoords(static_cast<double>(i), base + v / 2);
            label->setPositionAlignment(Qt::AlignCenter);
            label->setFont(small);
            const QColor fill = componentColor(comp, colors.dark);
            const double luminance = 0.299 * fill.red() + 0.587 * fill.green()
                                     + 0.114 * fill.blue();
            label->setColor(luminance > 150 ? QColor(20, 20, 20) : QColor(255, 255, 255));
            label->setText(QString::number(v, 'f', v < 10 ? 1 : 0));
            base += v;
        }
    }
    for (std::size_t i = n; i < m_totalLabels.size(); ++i)
        m_totalLabels[i]->setVisible(false);
    for (std::size_t i = segment; i < m_segmentLabels.size(); ++i)
        m_segmentLabels[i]->setVisible(false);
    for (std::size_t i = frames; i < m_overFrames.size(); ++i)
        m_overFrames[i]->setVisible(false);
}

void BudgetChart::updateRange()
{
    double needed = 0;
    for (const ChartBar &bar : m_bars)
        if (bar.valid && !bar.estimate.too_large)
            needed = std::max(needed, toUnit(bar.estimate.device_total));
    for (const GpuSpec &gpu : m_gpus)
        needed = std::max(needed, toUnit(gpu.memory_bytes));
    const double target = niceCeil(needed * 1.18);
    // Grow at once; shrink only when far too tall (and not while a slider is held) so the axis
    // does not jump with every step of a drag.
    if (m_upper <= 0 || target > m_upper || (!m_frozen && target < m_upper * 0.55))
        m_upper = target;
    yAxis->setRange(0, m_upper);
    yAxis2->setRange(0, m_upper); // carries the capacity labels' room
    yAxis->setLabel(tr("Memory per GPU (%1)").arg(unitName(m_unit)));
}

void BudgetChart::applyTheme()
{
    const ChartColors colors = chartColors(palette());
    m_dark = colors.dark;
    applyPlotColors(this, colors);
    for (int c = 0; c < kComponentCount; ++c) {
        QCPBars *bars = m_components[static_cast<std::size_t>(c)];
        const QColor fill = componentColor(static_cast<Component>(c), colors.dark);
        bars->setBrush(fill);
        bars->setPen(QPen(colors.background, 1));
    }
    for (int i = 0; legend && i < legend->itemCount(); ++i)
        if (auto *item = legend->item(i))
            item->setTextColor(colors.text);
}

void BudgetChart::changeEvent(QEvent *event)
{
    QCustomPlot::changeEvent(event);
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::ApplicationPaletteChange
        || event->type() == QEvent::StyleChange) {
        applyTheme();
        refresh();
    }
}

bool BudgetChart::segmentAt(const QPointF &pos, int &index, Component &component) const
{
    if (!axisRect()->rect().contains(pos.toPoint()))
        return false;
    const double key = xAxis->pixelToCoord(pos.x());
    const double value = yAxis->pixelToCoord(pos.y());
    const int i = static_cast<int>(std::lround(key));
    if (i < 0 || i >= static_cast<int>(m_bars.size()) || std::abs(key - i) > kBarWidth / 2
        || value < 0)
        return false;
    const ChartBar &bar = m_bars[static_cast<std::size_t>(i)];
    if (!bar.valid)
        return false;
    double base = 0;
    for (int c = 0; c < kComponentCount; ++c) {
        const double v = toUnit(bar.estimate.components[static_cast<Component>(c)]);
        if (v > 0 && value >= base && value < base + v) {
            index = i;
            component = static_cast<Component>(c);
            return true;
        }
        base += v;
    }
    return false;
}

QString BudgetChart::segmentToolTip(int index, Component component) const
{
    if (index < 0 || index >= static_cast<int>(m_bars.size()))
        return {};
    const ChartBar &bar = m_bars[static_cast<std::size_t>(index)];
    if (!bar.valid)
        return bar.error;
    const MemoryEstimate &est = bar.estimate;
    const Bytes bytes = est.components[component];
    const double share = est.device_total > 0 ? 100.0 * static_cast<double>(bytes)
                                                    / static_cast<double>(est.device_total)
                                              : 0;
    const QString formula = QString::fromStdString(
        explainComponent(bar.input, est, est.peak_phase, component));
    QString html = QStringLiteral("<b>%1 — %2</b><br>")
                       .arg(bar.label.toHtmlEscaped(), componentName(component));
    if (!bar.tooltip.isEmpty())
        html += QStringLiteral("<i>%1</i><br>").arg(bar.tooltip.toHtmlEscaped());
    html += tr("%1 (%2 bytes), %3% of %4")
                .arg(bytesText(bytes, m_unit, 2),
                     QString::fromStdString(formatCount(static_cast<double>(bytes))))
                .arg(share, 0, 'f', 1)
                .arg(bytesText(est.device_total, m_unit, 2));
    html += QStringLiteral("<br><span style='white-space:pre-wrap'>%1</span>")
                .arg(formula.toHtmlEscaped());
    html += QStringLiteral("<br><i>%1</i>")
                .arg(tr("At the peak, in the %1 phase.")
                         .arg(QString::fromUtf8(phaseLabel(est.peak_phase)).toLower()));
    return html;
}

void BudgetChart::mouseMoveEvent(QMouseEvent *event)
{
    QCustomPlot::mouseMoveEvent(event);
    int index = -1;
    Component component = Component::Weights;
    if (segmentAt(event->position(), index, component)) {
        QToolTip::showText(event->globalPosition().toPoint(),
                           segmentToolTip(index, component),
                           this);
        return;
    }
    // Over a bar's column (its label, or an invalid bar): say what the bar is.
    const double key = xAxis->pixelToCoord(event->position().x());
    const int i = static_cast<int>(std::lround(key));
    if (i >= 0 && i < static_cast<int>(m_bars.size()) && std::abs(key - i) <= kBarWidth / 2) {
        const ChartBar &bar = m_bars[static_cast<std::size_t>(i)];
        QString text = bar.valid ? bar.tooltip : bar.error;
        if (text.isEmpty())
            text = bar.detail;
        if (!text.isEmpty()) {
            QToolTip::showText(event->globalPosition().toPoint(),
                               QStringLiteral("<b>%1</b><br>%2")
                                   .arg(bar.label.toHtmlEscaped(), text.toHtmlEscaped()),
                               this);
            return;
        }
    }
    QToolTip::hideText();
}

void BudgetChart::leaveEvent(QEvent *event)
{
    QCustomPlot::leaveEvent(event);
    QToolTip::hideText();
}

void BudgetChart::contextMenuEvent(QContextMenuEvent *event)
{
    const double key = xAxis->pixelToCoord(event->pos().x());
    const int i = static_cast<int>(std::lround(key));
    if (i >= 0 && i < static_cast<int>(m_bars.size()) && std::abs(key - i) <= 0.5)
        Q_EMIT barContextMenuRequested(i, event->globalPos());
    else
        Q_EMIT barContextMenuRequested(-1, event->globalPos());
}

} // namespace membudget
