// SPDX-License-Identifier: GPL-3.0-or-later
#include "charts/budget_chart.h"

#include "advice/explanation.h"
#include "advice/gpu_verdict.h"
#include "charts/cached_text_item.h"
#include "charts/chart_theme.h"
#include "model/step_model.h"
#include "workers/fit_limits_worker.h"

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

// A value label inside a bar segment: BudgetChart::layoutLabels() shows it only where the segment
// is tall and wide enough and no other label is in the way, at the size being painted.
class SegmentLabel : public CachedTextItem
{
public:
    using CachedTextItem::CachedTextItem;
    double low = 0;
    double high = 0;
    QColor fill;        // the segment's colour, behind the text
    bool inUse = false; // holds a segment of the current bars
};

// The black or white that reads best on `fill`: WCAG 2 contrast, at least 4.58:1 whatever `fill`.
QColor textOn(const QColor &fill)
{
    return contrastRatio(Qt::black, fill) >= contrastRatio(Qt::white, fill) ? QColor(Qt::black)
                                                                            : QColor(Qt::white);
}

double niceFloor(double v)
{
    if (!(v > 0))
        return 1e-3;
    return std::pow(10.0, std::floor(std::log10(v)));
}

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
    m_side = side;
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
    // No tick marks under the bars. A tick pen, not a zero tick length: PDF writers turn a zero-length
    // line into a path without points ("No current point in closepath" in poppler).
    xAxis->setTickPen(Qt::NoPen);
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
    // The band (gpu_verdict.h: low and high of what the device will show) as a whisker on each
    // bar: error bars on an invisible graph through the bars' totals, drawn above the bars.
    m_bandAnchor = new QCPGraph(xAxis, yAxis);
    m_bandAnchor->setLineStyle(QCPGraph::lsNone);
    m_bandAnchor->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssNone));
    m_bandAnchor->setSelectable(QCP::stNone);
    m_band = new QCPErrorBars(xAxis, yAxis);
    m_band->setName(tr("Band: low to high on the device"));
    m_band->setDataPlottable(m_bandAnchor);
    m_band->setErrorType(QCPErrorBars::etValueError);
    m_band->setWhiskerWidth(12);
    m_band->setSymbolGap(0);
    m_band->setSelectable(QCP::stNone);
    m_band->setAntialiased(false); // vertical and horizontal strokes: crisp without
    m_verdictWorker = new FitLimitsWorker(this);
    connect(m_verdictWorker, &FitLimitsWorker::verdictsReady, this, &BudgetChart::onVerdicts);
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
        askForVerdicts();
        requestReplot();
    }
}

// A chart on a tab that is not shown replots when it is shown again, not at every change: each
// replot draws every layer into its buffers, seen or not (the Timeline tab paid for both charts).
void BudgetChart::requestReplot()
{
    if (!isVisible()) {
        m_replotWhenShown = true;
        return;
    }
    replot(rpQueuedReplot);
}

void BudgetChart::showEvent(QShowEvent *event)
{
    QCustomPlot::showEvent(event);
    if (m_replotWhenShown) {
        m_replotWhenShown = false;
        replot(rpQueuedReplot);
    }
}

void BudgetChart::resetAxis()
{
    m_upper = 0;
    updateRange();
    requestReplot();
}

void BudgetChart::refresh()
{
    updateData();
    updateRange();
    updateCapacityLines();
    updateLabels();
    requestReplot();
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
    const bool anyBand = updateBands();
    // The legend lists only what some bar holds, from the top of the stack down, then the band.
    // Rebuilt only when that set changes (not on every slider step).
    if (legend && (inLegend != m_inLegend || anyBand != m_bandInLegend)) {
        m_inLegend = inLegend;
        m_bandInLegend = anyBand;
        legend->clearItems();
        for (int c = kComponentCount - 1; c >= 0; --c)
            if (inLegend[static_cast<std::size_t>(c)])
                legend->addItem(
                    new CachedLegendItem(legend, m_components[static_cast<std::size_t>(c)]));
        if (anyBand)
            legend->addItem(new QCPPlottableLegendItem(legend, m_band));
        const ChartColors colors = chartColors(palette());
        for (int i = 0; i < legend->itemCount(); ++i)
            if (auto *item = legend->item(i))
                item->setTextColor(colors.text);
    }

    // Bar names: the label, then the detail; wrapped to the bars' slots when laid out.
    m_barNames.clear();
    for (int i = 0; i < n; ++i) {
        const ChartBar &bar = m_bars[static_cast<std::size_t>(i)];
        m_barNames.push_back(bar.detail.isEmpty() ? bar.label
                                                  : bar.label + QLatin1Char('\n') + bar.detail);
    }
    m_wrappedFor = -1;
    wrapBarNames(axisRect()->width());
    // Room on the right for the capacity labels; at least three bars' worth so that one bar is not
    // a wall.
    xAxis->setRange(-0.6, std::max(n - 0.4, 2.9));
}

bool BudgetChart::updateBands()
{
    m_bands.assign(m_bars.size(), MemoryBand{});
    QVector<double> keys, values, minus, plus;
    for (std::size_t i = 0; i < m_bars.size(); ++i) {
        const ChartBar &bar = m_bars[i];
        if (!bar.valid || bar.estimate.too_large)
            continue;
        const MemoryBand band = memoryBand(bar.input, bar.estimate); // no replay: a few additions
        m_bands[i] = band;
        if (band.high <= band.low)
            continue;
        // Beside the bar's right edge, so that the whisker never crosses a segment's value.
        keys.push_back(static_cast<double>(i) + kBarWidth / 2 + 0.05);
        values.push_back(toUnit(band.expected));
        minus.push_back(toUnit(band.expected) - toUnit(band.low));
        plus.push_back(toUnit(band.high) - toUnit(band.expected));
    }
    m_bandAnchor->setData(keys, values, true);
    m_band->setData(minus, plus);
    return !keys.isEmpty();
}

MemoryBand BudgetChart::band(int index) const
{
    if (index < 0 || index >= static_cast<int>(m_bands.size()))
        return {};
    return m_bands[static_cast<std::size_t>(index)];
}

double BudgetChart::bandTop(std::size_t index) const
{
    const ChartBar &bar = m_bars[index];
    const Bytes top = index < m_bands.size()
                          ? std::max(m_bands[index].high, bar.estimate.device_total)
                          : bar.estimate.device_total;
    return toUnit(top);
}

int BudgetChart::widestLine(const QFont &font, const QString &text)
{
    const QString key = font.key() + QLatin1Char('\x1f') + text;
    auto it = m_widthCache.constFind(key);
    if (it == m_widthCache.constEnd()) {
        if (m_widthCache.size() > 1024)
            m_widthCache.clear();
        const QFontMetrics fm(font);
        int widest = 0;
        for (const QString &line : text.split(QLatin1Char('\n')))
            widest = std::max(widest, fm.horizontalAdvance(line));
        it = m_widthCache.insert(key, widest);
    }
    return *it;
}

double BudgetChart::slotWidth() const
{
    return std::abs(xAxis->coordToPixel(1.0) - xAxis->coordToPixel(0.0));
}

bool BudgetChart::wrapBarNames(double axisWidth)
{
    if (std::abs(axisWidth - m_wrappedFor) < 0.5)
        return false;
    m_wrappedFor = axisWidth;
    const double span = std::max(xAxis->range().size(), 1.0);
    // Narrower than the slot by a gap; on a very narrow chart down to an ellipsis.
    const int width = std::max(6, static_cast<int>(axisWidth / span) - 6);
    const QFontMetrics fm(xAxis->tickLabelFont());
    std::vector<QString> wrapped;
    const QString fontKey = xAxis->tickLabelFont().key();
    for (const QString &name : m_barNames) {
        // Most names stay as they were from one slider step to the next: wrapped once.
        const QString key = fontKey + QLatin1Char('\x1f') + QString::number(width)
                            + QLatin1Char('\x1f') + name;
        auto it = m_wrapCache.constFind(key);
        if (it == m_wrapCache.constEnd()) {
            if (m_wrapCache.size() > 512)
                m_wrapCache.clear();
            const QStringList parts = name.split(QLatin1Char('\n'));
            QString text = wrapText(parts.front(), fm, width, 2);
            if (parts.size() > 1)
                text += QLatin1Char('\n')
                        + wrapText(parts.mid(1).join(QLatin1Char(' ')), fm, width, 3);
            it = m_wrapCache.insert(key, text);
        }
        wrapped.push_back(*it);
    }
    if (wrapped == m_wrappedBarNames)
        return false;
    m_wrappedBarNames = wrapped;
    auto ticker = qSharedPointerCast<QCPAxisTickerText>(xAxis->ticker());
    ticker->clear();
    for (std::size_t i = 0; i < wrapped.size(); ++i)
        ticker->addTick(static_cast<double>(i), wrapped[i]);
    return true;
}

void BudgetChart::setCompact(bool compact)
{
    if (compact == m_compact)
        return;
    m_compact = compact;
    // Narrow: the legend goes under the plot in rows, giving the bars the width beside it.
    if (compact) {
        m_side->take(legend);
        m_body->addElement(1, 0, legend);
        m_body->setRowStretchFactor(1, 0.001); // as tall as its rows, the plot takes the rest
        legend->setWrap(std::max(1, viewport().width() / 170));
        legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);
    } else {
        m_body->take(legend);
        m_body->simplify();
        m_side->addElement(0, 0, legend);
        legend->setWrap(0);
        legend->setFillOrder(QCPLayoutGrid::foRowsFirst, true);
    }
    updateCapacityLines();
}

void BudgetChart::updateLayout()
{
    // Below about 760 pixels a legend and capacity labels beside the plot would leave the bars
    // too little width (a docked, narrow window; a small export).
    setCompact(viewport().width() < 760);
    if (m_compact && legend->wrap() != std::max(1, viewport().width() / 170)) {
        legend->setWrap(std::max(1, viewport().width() / 170));
        legend->setFillOrder(QCPLayoutGrid::foColumnsFirst, true);
    }
    wrapBarNames(axisRect()->width());
    QCustomPlot::updateLayout();
    // The first pass at a new size (an export, a resized window) sets the width the names wrap to;
    // a second pass lays out the rewrapped names.
    if (wrapBarNames(axisRect()->width()))
        QCustomPlot::updateLayout();
    layoutLabels();
}

void BudgetChart::updateCapacityLines()
{
    const ChartColors colors = chartColors(palette());
    while (m_capacityLines.size() > m_gpus.size()) {
        removeItem(m_capacityLines.back());
        m_capacityLines.pop_back();
        removeItem(m_capacityLeaders.back());
        m_capacityLeaders.pop_back();
    }
    while (m_capacityLines.size() < m_gpus.size()) {
        auto *line = new QCPItemStraightLine(this);
        line->setSelectable(false);
        line->setAntialiased(false); // horizontal: crisp without, and antialiased dashes cost
        line->setLayer(QStringLiteral("overlay"));
        m_capacityLines.push_back(line);
        auto *leader = new QCPItemLine(this);
        leader->setSelectable(false);
        leader->setClipToAxisRect(false);
        leader->setLayer(QStringLiteral("overlay"));
        leader->start->setType(QCPItemPosition::ptAbsolute);
        leader->end->setType(QCPItemPosition::ptAbsolute);
        m_capacityLeaders.push_back(leader);
    }
    QFont labelFont = font();
    labelFont.setPointSizeF(labelFont.pointSizeF() * 0.9);
    labelFont.setBold(true);

    // One label per GPU in its line's colour, right of the plot; layoutLabels() stacks them where
    // capacities are close. The right axis carries the same texts, invisible, so that the layout
    // leaves room for them.
    auto ticker = QSharedPointer<QCPAxisTickerText>(new QCPAxisTickerText);
    m_capacityToolTips.clear();
    for (std::size_t i = 0; i < m_gpus.size(); ++i) {
        const GpuSpec &gpu = m_gpus[i];
        const double y = toUnit(gpu.memory_bytes);
        const QColor color = gpuLineColor(static_cast<int>(i), colors.dark);
        QCPItemStraightLine *line = m_capacityLines[i];
        line->point1->setCoords(0, y);
        line->point2->setCoords(1, y);
        line->setPen(QPen(color, 1.6, Qt::DashLine));
        m_capacityLeaders[i]->setPen(QPen(color, 1));
        // A narrow chart names the GPU only (its name carries the marketed size; the hover text
        // the capacity).
        const QString text = m_compact
                                 ? shortGpuName(gpu)
                                 : QStringLiteral("%1  %2").arg(shortGpuName(gpu),
                                                                QString::fromStdString(
                                                                    formatCapacity(gpu.memory_bytes,
                                                                                   m_unit)));
        QCPItemText *label = labelAt(m_capacityLabels, i); // reused: its text stays cached
        label->setClipToAxisRect(false);
        label->position->setType(QCPItemPosition::ptAbsolute);
        label->setPositionAlignment(Qt::AlignLeft | Qt::AlignVCenter);
        label->setTextAlignment(Qt::AlignLeft);
        label->setPadding(QMargins(8, 1, 2, 1));
        label->setFont(labelFont);
        label->setColor(gpuLabelColor(static_cast<int>(i), colors));
        // Off the top of the axis the label says so; the room is reserved for that text.
        ticker->addTick((m_lower + m_upper) / 2, QStringLiteral("▲ ") + text);
        label->setText(text);
        m_capacityToolTips.push_back(
            tr("%1: %2 (%3 bytes)")
                .arg(QString::fromStdString(gpu.name),
                     QString::fromStdString(formatCapacity(gpu.memory_bytes, m_unit, 2)),
                     QString::fromStdString(formatCount(static_cast<double>(gpu.memory_bytes)))));
    }
    for (std::size_t g = m_gpus.size(); g < m_capacityLabels.size(); ++g)
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
    yAxis2->setTickLabelPadding(10);
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

FitVerdict BudgetChart::verdictOn(int index, const GpuSpec &gpu) const
{
    if (index < 0 || index >= static_cast<int>(m_bars.size()))
        return FitVerdict::Fits;
    const ChartBar &bar = m_bars[static_cast<std::size_t>(index)];
    if (!bar.valid)
        return FitVerdict::Fits;
    if (bar.estimate.too_large)
        return FitVerdict::DoesNotFit;
    const MemoryBand b = band(index);
    const Bytes capacity = gpu.memory_bytes;
    if (b.high <= capacity)
        return FitVerdict::Fits; // as gpuVerdict says without a replay
    if (b.low > capacity)
        return FitVerdict::DoesNotFit; // even the allocated peak does not fit
    // Inside the band: what the replay says, worked out on the worker (once per bar and
    // capacity; only bars near a capacity line get here); until then what the band suggests.
    const auto &known = bar.verdicts->byCapacity;
    const auto it = known.find(capacity);
    return it != known.end() ? it->second : provisionalVerdict(b, capacity);
}

void BudgetChart::askForVerdicts()
{
    // The first bar with a capacity inside its band and no replayed verdict for it yet; one
    // request at a time, a newer one replacing it. Not while a slider is held (the axis frozen):
    // each value is gone before its replay could answer, and the replay would take a core from
    // the drag; the band's verdict shows until the drag ends.
    if (m_frozen)
        return;
    for (std::size_t i = 0; i < m_bars.size(); ++i) {
        const ChartBar &bar = m_bars[i];
        if (!bar.valid || bar.estimate.too_large || i >= m_bands.size())
            continue;
        std::vector<Bytes> capacities;
        for (const GpuSpec &gpu : m_gpus)
            if (m_bands[i].low <= gpu.memory_bytes && gpu.memory_bytes < m_bands[i].high
                && !bar.verdicts->byCapacity.count(gpu.memory_bytes))
                capacities.push_back(gpu.memory_bytes);
        if (capacities.empty())
            continue;
        if (m_verdictTarget == bar.verdicts && m_verdictCapacities == capacities)
            return; // asked already
        m_verdictTarget = bar.verdicts;
        m_verdictCapacities = capacities;
        m_verdictGeneration = m_verdictWorker->request(bar.input, capacities, {});
        return;
    }
}

void BudgetChart::onVerdicts(quint64 generation, const std::vector<GpuVerdict> &verdicts)
{
    if (generation != m_verdictGeneration || !m_verdictTarget
        || verdicts.size() != m_verdictCapacities.size())
        return;
    for (std::size_t k = 0; k < verdicts.size(); ++k)
        m_verdictTarget->byCapacity[m_verdictCapacities[k]] = verdicts[k].verdict;
    m_verdictTarget.reset();
    m_verdictCapacities.clear();
    updateLabels(); // and asks for the next bar's
    requestReplot();
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
        if (verdictOn(index, gpu) == FitVerdict::DoesNotFit)
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

    m_totalVariants.assign(n, {});
    std::size_t segment = 0;
    std::size_t frames = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const ChartBar &bar = m_bars[i];
        QCPItemText *total = labelAt(m_totalLabels, i);
        total->position->setType(QCPItemPosition::ptAbsolute); // placed by layoutLabels()
        total->setClipToAxisRect(false);
        total->setPositionAlignment(Qt::AlignHCenter | Qt::AlignBottom);
        total->setTextAlignment(Qt::AlignHCenter);
        total->setFont(bold);
        total->setPadding(QMargins(3, 1, 3, 2));
        // A backdrop, so that a capacity line passing behind does not strike through the text.
        total->setBrush(QBrush(colors.background));
        std::vector<QString> &variants = m_totalVariants[i];
        if (!bar.valid) {
            variants = {tr("cannot estimate"), tr("error")};
            total->setColor(colors.danger);
            continue;
        }
        // Longest first; layoutLabels() takes the first that fits the bar's slot (the whole text is
        // the hover text of the bar).
        const QString value = bar.estimate.too_large ? tr("too large")
                                                     : bytesText(bar.estimate.device_total, m_unit);
        const QString number = bar.estimate.too_large
                                   ? tr("too large")
                                   : QString::number(toUnit(bar.estimate.device_total),
                                                     'f',
                                                     toUnit(bar.estimate.device_total) < 100 ? 1
                                                                                             : 0);
        int over = 0;
        QStringList tight;
        for (const GpuSpec &gpu : m_gpus) {
            const FitVerdict v = verdictOn(static_cast<int>(i), gpu);
            over += v == FitVerdict::DoesNotFit ? 1 : 0;
            if (v == FitVerdict::Tight)
                tight << shortGpuName(gpu);
        }
        const int count = static_cast<int>(m_gpus.size());
        if (over > 0) {
            const QString names = overCapacityText(static_cast<int>(i));
            const QString counted = over == count ? (count == 1 ? tr("over capacity")
                                                                : tr("over all %1").arg(count))
                                                  : tr("over %1 of %2").arg(over).arg(count);
            variants = {value + QStringLiteral("\n✗ ") + names,
                        value + QStringLiteral("\n✗ ") + counted,
                        value + QStringLiteral("\n✗"),
                        number + QStringLiteral("\n✗"),
                        number};
        } else if (!tight.isEmpty()) {
            variants = {value + QStringLiteral("\n⚠ ")
                            + tr("tight on %1").arg(tight.join(QStringLiteral(", "))),
                        value + QStringLiteral("\n⚠ ") + tr("tight"),
                        number + QStringLiteral("\n⚠"),
                        number};
        } else if (count > 0) {
            variants = {value + QStringLiteral("\n✓ ") + tr("fits"),
                        value + QStringLiteral("\n✓"),
                        number + QStringLiteral("\n✓"),
                        number};
        } else {
            variants = {value, number};
        }
        total->setColor(over > 0 ? colors.danger : (tight.isEmpty() ? colors.text : colors.warning));

        if (over > 0) {
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

        // Segment values inside the bar; layoutLabels() hides those that do not fit.
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
            label->inUse = true;
            label->low = base;
            label->high = base + v;
            label->position->setType(QCPItemPosition::ptPlotCoords);
            label->position->setCoords(static_cast<double>(i),
                                       m_log ? std::sqrt(std::max(base, m_lower) * (base + v))
                                             : base + v / 2);
            label->setPositionAlignment(Qt::AlignCenter);
            label->setFont(small);
            label->fill = componentColor(comp, colors.dark);
            label->setColor(textOn(label->fill));
            label->setText(QString::number(v, 'f', v < 10 ? 1 : 0));
            base += v;
        }
    }
    for (std::size_t i = n; i < m_totalLabels.size(); ++i)
        m_totalLabels[i]->setVisible(false);
    for (std::size_t i = segment; i < m_segmentLabels.size(); ++i) {
        static_cast<SegmentLabel *>(m_segmentLabels[i])->inUse = false;
        m_segmentLabels[i]->setVisible(false);
    }
    for (std::size_t i = frames; i < m_overFrames.size(); ++i)
        m_overFrames[i]->setVisible(false);
    askForVerdicts();
}

void BudgetChart::updateRange()
{
    // Fitted to what matters: the tallest bar and the nearest capacity above it (GPUs far larger
    // get a label at the top edge instead of squashing the bars into slivers).
    double tallest = 0;
    double smallest = 0;
    for (const ChartBar &bar : m_bars) {
        if (!bar.valid || bar.estimate.too_large)
            continue;
        const double v = toUnit(bar.estimate.device_total);
        tallest = std::max(tallest, bandTop(static_cast<std::size_t>(&bar - m_bars.data())));
        smallest = smallest > 0 ? std::min(smallest, v) : v;
    }
    double above = 0;
    for (const GpuSpec &gpu : m_gpus) {
        const double c = toUnit(gpu.memory_bytes);
        if (c >= tallest && (above <= 0 || c < above))
            above = c;
    }
    if (tallest <= 0 && above <= 0)
        above = 1;
    // Room above the tallest bar for its two-line total; a little above the capacity line.
    double target = niceCeil(std::max(tallest * (m_log ? 2.0 : 1.15), above * 1.04));
    double lower = 0;
    if (m_log) {
        double least = smallest > 0 ? smallest : above;
        for (const GpuSpec &gpu : m_gpus)
            least = std::min(least, toUnit(gpu.memory_bytes));
        lower = niceFloor(least / 40);
    }
    // Grow at once; shrink only when far too tall (and not while a slider is held) so the axis
    // does not jump with every step of a drag.
    if (m_upper <= 0 || target > m_upper || (!m_frozen && target < m_upper * 0.55)
        || lower != m_lower)
        m_upper = target;
    m_lower = lower;
    yAxis->setRange(m_lower, m_upper);
    yAxis2->setRange(m_lower, m_upper); // carries the capacity labels' room
    yAxis->setLabel(tr("Memory per GPU (%1)").arg(unitName(m_unit)));
}

void BudgetChart::setLogScale(bool on)
{
    if (on == m_log)
        return;
    m_log = on;
    yAxis->setScaleType(on ? QCPAxis::stLogarithmic : QCPAxis::stLinear);
    if (on) {
        auto ticker = QSharedPointer<QCPAxisTickerLog>(new QCPAxisTickerLog);
        ticker->setLogBase(10);
        ticker->setSubTickCount(8);
        yAxis->setTicker(ticker);
        yAxis->setNumberFormat(QStringLiteral("gb"));
    } else {
        yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new QCPAxisTicker));
        yAxis->setNumberFormat(QStringLiteral("g"));
    }
    yAxis->grid()->setSubGridVisible(on);
    m_upper = 0;
    refresh();
}

void BudgetChart::layoutLabels()
{
    m_placed.clear();
    QRectF occupied;
    placeCapacityLabels(occupied);
    placeTotals();
    placeSegmentLabels();
    // Bar names under the axis (QCustomPlot draws them): recorded for hover texts and tests.
    const QFont font = xAxis->tickLabelFont();
    const QString fontKey = font.key() + QLatin1Char('\x1f');
    const double top = axisRect()->bottom() + xAxis->offset() + xAxis->tickLabelPadding();
    for (std::size_t i = 0; i < m_wrappedBarNames.size(); ++i) {
        auto it = m_sizeCache.constFind(fontKey + m_wrappedBarNames[i]);
        if (it == m_sizeCache.constEnd()) {
            if (m_sizeCache.size() > 512)
                m_sizeCache.clear();
            it = m_sizeCache.insert(fontKey + m_wrappedBarNames[i],
                                    QFontMetrics(font)
                                        .boundingRect(QRect(),
                                                      Qt::AlignHCenter | Qt::TextDontClip,
                                                      m_wrappedBarNames[i])
                                        .size());
        }
        const QSize box = *it;
        const double x = xAxis->coordToPixel(static_cast<double>(i));
        PlacedLabel placed;
        placed.kind = PlacedLabel::BarName;
        placed.text = m_wrappedBarNames[i];
        placed.color = xAxis->tickLabelColor();
        placed.background = chartColors(palette()).background;
        placed.rect = QRectF(x - box.width() / 2.0, top, box.width(), box.height());
        if (placed.text.contains(QChar(0x2026)) && i < m_bars.size())
            placed.toolTip = m_barNames[i];
        if (!placed.text.trimmed().isEmpty())
            m_placed.push_back(placed);
    }
}

void BudgetChart::placeCapacityLabels(QRectF &occupied)
{
    const QRect rect = axisRect()->rect();
    const QColor background = chartColors(palette()).background;
    std::vector<double> wanted, heights;
    std::vector<std::size_t> shown;
    for (std::size_t i = 0; i < m_gpus.size(); ++i) {
        auto *label = static_cast<CachedTextItem *>(m_capacityLabels[i]);
        const double value = toUnit(m_gpus[i].memory_bytes);
        const bool offTop = value > m_upper;
        QString text = label->text();
        if (text.startsWith(QStringLiteral("▲ ")))
            text = text.mid(2);
        label->setText(offTop ? QStringLiteral("▲ ") + text : text);
        m_capacityLines[i]->setVisible(!offTop);
        const double y = offTop ? rect.top() : yAxis->coordToPixel(std::max(value, m_lower));
        wanted.push_back(y);
        heights.push_back(label->boxSize().height());
        shown.push_back(i);
    }
    // The whole height of the plot's row, not only the axis rect: many GPUs still fit.
    const std::vector<double> y = stackLabels(wanted, heights, rect.top() - 4, rect.bottom(), 1);
    for (std::size_t k = 0; k < shown.size(); ++k) {
        const std::size_t i = shown[k];
        auto *label = static_cast<CachedTextItem *>(m_capacityLabels[i]);
        const double x = rect.right();
        label->position->setCoords(x, y[k]);
        const QSize box = label->boxSize();
        const QRectF r(x, y[k] - box.height() / 2.0, box.width(), box.height());
        occupied = occupied.united(r);
        // A leader from the line's end to a label moved away from it.
        QCPItemLine *leader = m_capacityLeaders[i];
        const bool moved = std::abs(y[k] - wanted[k]) > 2 && m_capacityLines[i]->visible();
        leader->setVisible(moved);
        if (moved) {
            leader->start->setCoords(x, wanted[k]);
            leader->end->setCoords(x + 7, y[k]);
        }
        m_placed.push_back({PlacedLabel::Capacity,
                            label->text(),
                            m_capacityToolTips[i],
                            r,
                            label->color(),
                            background});
    }
}

void BudgetChart::placeTotals()
{
    // Each bar's total above it, in the longest wording that fits the bar's slot. Where even the
    // shortest does not (many bars on a narrow export), a total moves up above its neighbour's;
    // with no room left it is not drawn (the bar's hover text has it).
    const QRect rect = axisRect()->rect();
    std::vector<QRectF> placed;
    for (std::size_t i = 0; i < m_bars.size() && i < m_totalVariants.size(); ++i) {
        auto *total = static_cast<CachedTextItem *>(m_totalLabels[i]);
        const std::vector<QString> &variants = m_totalVariants[i];
        // The text and its padding within the slot, a few pixels apart from the next.
        const int slot = static_cast<int>(slotWidth()) - 6 - total->padding().left()
                         - total->padding().right();
        int chosen = static_cast<int>(variants.size()) - 1;
        for (std::size_t v = 0; v < variants.size(); ++v) {
            if (widestLine(total->font(), variants[v]) <= std::max(slot, 8)) {
                chosen = static_cast<int>(v);
                break;
            }
        }
        total->setText(variants[static_cast<std::size_t>(chosen)]);
        const ChartBar &bar = m_bars[i];
        // Above the band's whisker, which stands on the bar's total.
        const double value = bar.valid && !bar.estimate.too_large ? bandTop(i)
                                                                  : (bar.valid ? m_upper : m_lower);
        const QSize box = total->boxSize();
        const double x = xAxis->coordToPixel(static_cast<double>(i));
        double bottom = yAxis->coordToPixel(std::clamp(value, m_lower, m_upper)) - 2;
        // Inside the plot: a bar taller than the axis gets its total at the top, over the bar.
        bottom = std::clamp(bottom, rect.top() + 2.0 + box.height(), rect.bottom() - 1.0);
        double left = x - box.width() / 2.0;
        left = std::clamp(left,
                          rect.left() + 1.0,
                          std::max(rect.left() + 1.0, rect.right() - 1.0 - box.width()));
        QRectF r(left, bottom - box.height(), box.width(), box.height());
        for (bool moved = true; moved;) {
            moved = false;
            for (const QRectF &other : placed) {
                if (other.intersects(r)) {
                    r.moveBottom(other.top() - 1);
                    moved = true;
                }
            }
        }
        const bool shown = r.top() >= rect.top() + 1;
        total->setVisible(shown);
        if (!shown)
            continue;
        placed.push_back(r);
        total->position->setCoords(r.center().x(), r.bottom());
        m_placed.push_back({PlacedLabel::Total,
                            total->text(),
                            chosen > 0 ? variants.front() : QString(),
                            r,
                            total->color(),
                            total->brush().color()});
    }
}

void BudgetChart::placeSegmentLabels()
{
    std::vector<QRectF> totals;
    for (const PlacedLabel &p : m_placed)
        if (p.kind == PlacedLabel::Total)
            totals.push_back(p.rect);
    const double barWidth = std::abs(xAxis->coordToPixel(kBarWidth) - xAxis->coordToPixel(0));
    for (QCPItemText *item : m_segmentLabels) {
        auto *label = static_cast<SegmentLabel *>(item);
        if (!label->inUse)
            continue;
        const double lowPx = yAxis->coordToPixel(std::max(label->low, m_lower));
        const double highPx = yAxis->coordToPixel(std::min(label->high, m_upper));
        const QSize box = label->boxSize();
        const QPointF centre = label->position->pixelPosition();
        const QRectF r(centre.x() - box.width() / 2.0,
                       centre.y() - box.height() / 2.0,
                       box.width(),
                       box.height());
        // In floating point: a label scrolled far off the axis range sits past int's range, where
        // QRectF::toRect would overflow (found by tst_monkey_input under UBSan).
        bool show = label->high > m_lower && label->low < m_upper
                    && std::abs(lowPx - highPx) >= box.height() + 2 && barWidth >= box.width() + 8
                    && QRectF(axisRect()->rect()).contains(r);
        for (const QRectF &t : totals)
            show = show && !t.intersects(r);
        label->setClipToAxisRect(true);
        label->setBrush(Qt::NoBrush);
        label->setPen(Qt::NoPen);
        label->setVisible(show);
        if (show)
            m_placed.push_back(
                {PlacedLabel::Segment, label->text(), QString(), r, label->color(), label->fill});
    }
}

void BudgetChart::applyTheme()
{
    const ChartColors colors = chartColors(palette());
    m_dark = colors.dark;
    applyPlotColors(this, colors);
    xAxis->setTickPen(Qt::NoPen); // see the constructor
    for (int c = 0; c < kComponentCount; ++c) {
        QCPBars *bars = m_components[static_cast<std::size_t>(c)];
        const QColor fill = componentColor(static_cast<Component>(c), colors.dark);
        bars->setBrush(fill);
        bars->setPen(QPen(colors.background, 1));
    }
    // The text colour, a little translucent: visible over the bars' fills and the background,
    // in light and dark themes alike, and quieter than the totals.
    QColor whisker = colors.text;
    whisker.setAlpha(200);
    m_band->setPen(QPen(whisker, 1.6));
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
        explainComponent(bar.input, est, est.peak_phase, component, m_unit));
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
    const MemoryBand b = band(index);
    if (b.high > b.low)
        html += QStringLiteral("<br>")
                + tr("On the device: %1 expected, %2 to %3 (the whisker: from no fragmentation "
                     "and a lazily loaded CUDA context to an eagerly loaded one with large NCCL "
                     "buffers)")
                      .arg(bytesText(b.expected, m_unit, 2),
                           bytesText(b.low, m_unit, 2),
                           bytesText(b.high, m_unit, 2));
    html += QStringLiteral("<br><i>%1</i>")
                .arg(tr("At the peak, in the %1 phase.")
                         .arg(QString::fromUtf8(phaseLabel(est.peak_phase)).toLower()));
    return html;
}

void BudgetChart::mouseMoveEvent(QMouseEvent *event)
{
    QCustomPlot::mouseMoveEvent(event);
    // A shortened label (a total, a GPU's capacity, a bar's name) shows its whole text.
    for (const PlacedLabel &label : m_placed) {
        if (label.kind != PlacedLabel::Segment && !label.toolTip.isEmpty()
            && label.rect.contains(event->position())) {
            QToolTip::showText(event->globalPosition().toPoint(), label.toolTip, this);
            return;
        }
    }
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
