// SPDX-License-Identifier: GPL-3.0-or-later
#include "charts/timeline_chart.h"

#include "base/column_decimation.h"
#include "charts/cached_text_item.h"
#include "charts/chart_theme.h"

#include <QFontMetricsF>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace membudget {

namespace {

QString bytesText(Bytes bytes, ByteUnit unit)
{
    return QString::fromStdString(formatBytes(bytes, unit, 2));
}

QColor stageShade(Stage stage, bool dark)
{
    QColor c;
    switch (stage) {
    case Stage::Loss:
        c = QColor(150, 90, 200);
        break;
    case Stage::Backward:
        c = QColor(230, 140, 40);
        break;
    case Stage::OptimizerStep:
        c = QColor(60, 170, 90);
        break;
    default:
        c = QColor(70, 130, 220);
    }
    c.setAlpha(dark ? 40 : 28);
    return c;
}

// Consecutive stage spans of the same stage as one shaded band.
std::vector<TimelineStageSpan> bands(const std::vector<TimelineStageSpan> &stages)
{
    std::vector<TimelineStageSpan> out;
    for (const TimelineStageSpan &s : stages) {
        if (!out.empty() && out.back().stage == s.stage)
            out.back().end = s.end;
        else
            out.push_back(s);
    }
    return out;
}

} // namespace

TimelineChart::TimelineChart(QWidget *parent)
    : QCustomPlot(parent)
{
    setMouseTracking(true);
    setMinimumSize(320, 220);
    // The legend in rows under the plot: inside, it would hide the step's start.
    legend->setVisible(true);
    legend->setFont(font());
    plotLayout()->addElement(1, 0, legend);
    plotLayout()->setRowStretchFactor(1, 0.001);
    legend->setFillOrder(QCPLayoutGrid::foColumnsFirst);
    legend->setWrap(5);
    legend->setMargins(QMargins(6, 4, 6, 4));
    xAxis->setLabel(tr("Allocations and frees of one step, in order"));
    setNoAntialiasingOnDrag(true);
    // Zoom and pan along the step only; the memory axis keeps showing everything.
    setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
    axisRect()->setRangeDrag(Qt::Horizontal);
    axisRect()->setRangeZoom(Qt::Horizontal);
    connect(xAxis,
            QOverload<const QCPRange &>::of(&QCPAxis::rangeChanged),
            this,
            &TimelineChart::onXRangeChanged);
    // Every curve here is a step line (horizontal and vertical strokes) and every fill the area
    // between two of them: crisp without antialiasing, which costs most of a replot's time with
    // nine stacked fills of a thousand columns each (text stays antialiased).
    setNotAntialiasedElements(QCP::aePlottables | QCP::aeFills | QCP::aeGrid | QCP::aeSubGrid
                              | QCP::aeZeroLine);
    // The stacked components, under every graph and item of the main layer.
    m_areas = new StackedStepAreas(xAxis, yAxis);
}

void TimelineChart::setUnit(ByteUnit unit)
{
    if (unit == m_unit)
        return;
    m_unit = unit;
    rebuild();
}

void TimelineChart::setContents(std::shared_ptr<const TimelineChartContents> contents,
                                std::shared_ptr<const TimelineChartMeasured> measured)
{
    m_contents = std::move(contents);
    m_measured = std::move(measured);
    // A zoomed stretch stays while the step still reaches it (an edit of a slider).
    if (!m_contents || m_zoom.upper > static_cast<double>(m_contents->series.positions()) - 1)
        m_zoom = QCPRange(0, 0);
    rebuild();
}

void TimelineChart::showWholeStep()
{
    m_zoom = QCPRange(0, 0);
    rebuild();
}

void TimelineChart::mouseDoubleClickEvent(QMouseEvent *event)
{
    QCustomPlot::mouseDoubleClickEvent(event);
    if (zoomed())
        showWholeStep();
}

// The user zoomed or panned: keep the stretch within the step and draw it again at the detail
// its width allows (once per event-loop pass, however many wheel steps arrive).
void TimelineChart::onXRangeChanged(const QCPRange &range)
{
    if (m_rebuilding || !m_contents || m_contents->series.positions() < 2)
        return;
    const double end = static_cast<double>(m_contents->series.positions() - 1);
    const double width = std::min(range.size(), end);
    const double lower = std::clamp(range.lower, 0.0, end - width);
    m_zoom = width >= end || width < 2 ? QCPRange(0, 0) : QCPRange(lower, lower + width);
    if (m_rebuildQueued)
        return;
    m_rebuildQueued = true;
    QMetaObject::invokeMethod(
        this,
        [this] {
            m_rebuildQueued = false;
            rebuild();
        },
        Qt::QueuedConnection);
}

double TimelineChart::value(Bytes bytes) const
{
    return static_cast<double>(bytes) / (m_unit == ByteUnit::GiB ? double(kGiB) : 1e9);
}

int TimelineChart::columns() const
{
    return std::max(64, axisRect()->width() > 0 ? axisRect()->width() : width());
}

void TimelineChart::resizeEvent(QResizeEvent *event)
{
    QCustomPlot::resizeEvent(event);
    if (width() != m_builtWidth)
        rebuild();
}

void TimelineChart::changeEvent(QEvent *event)
{
    QCustomPlot::changeEvent(event);
    if (event->type() == QEvent::PaletteChange)
        rebuild();
}

void TimelineChart::rebuild()
{
    m_builtWidth = width();
    clearGraphs();
    clearItems();
    applyPlotColors(this, chartColors(palette()));
    yAxis->setLabel(
        tr("Allocated by PyTorch (%1)")
            .arg(m_unit == ByteUnit::GiB ? QStringLiteral("GiB") : QStringLiteral("GB")));
    m_drawnPoints = 0;
    m_areas->clearData();
    if (!m_contents || m_contents->series.positions() < 2) {
        replot(QCustomPlot::rpQueuedReplot);
        return;
    }
    const TimelineSeries &s = m_contents->series;
    const double end = static_cast<double>(s.positions() - 1);
    const double x0 = zoomed() ? m_zoom.lower : 0.0;
    const double x1 = zoomed() ? m_zoom.upper : end;
    const std::vector<std::size_t> kept = decimateColumns(
        s.positions(),
        [](std::size_t i) { return static_cast<double>(i); },
        [&](std::size_t i) { return s.allocated[i]; },
        x0,
        x1,
        columns());
    m_drawnPoints = static_cast<int>(kept.size());
    drawComponents(kept);
    drawReserved(x0, x1);
    drawMeasured(x0, x1);
    const std::vector<Bytes> &highest = s.reserved.empty() ? s.allocated : s.reserved;
    double top = value(*std::max_element(highest.begin(), highest.end()));
    if (m_measured)
        for (const std::vector<Bytes> *v : {&m_measured->allocated, &m_measured->reserved})
            if (!v->empty())
                top = std::max(top, value(*std::max_element(v->begin(), v->end())));
    for (const GpuSpec &gpu : m_contents->gpus) {
        const double cap = value(gpu.memory_bytes - m_contents->outside_allocator);
        if (cap > top && cap < top * 1.6)
            top = cap;
    }
    top *= 1.15;
    m_rebuilding = true;
    xAxis->setRange(x0, x1);
    m_rebuilding = false;
    yAxis->setRange(0, top);
    drawStages(top);
    drawCapacities();
    drawPeak();
    replot(QCustomPlot::rpQueuedReplot);
}

void TimelineChart::drawComponents(const std::vector<std::size_t> &kept)
{
    const TimelineSeries &s = m_contents->series;
    const std::vector<ComponentBytes> parts = componentsAt(m_contents->timeline, s, kept);
    QVector<double> keys(static_cast<int>(kept.size()));
    for (std::size_t i = 0; i < kept.size(); ++i)
        keys[static_cast<int>(i)] = static_cast<double>(kept[i]);
    QVector<double> below(keys.size(), 0.0);
    const bool dark = chartColors(palette()).dark;
    std::vector<StackedStepAreas::Band> bands;
    for (int c = 0; c < kAllocatedComponentCount; ++c) {
        bool any = false;
        QVector<double> values(keys.size());
        for (int i = 0; i < keys.size(); ++i) {
            const Bytes b = parts[static_cast<std::size_t>(i)][static_cast<std::size_t>(c)];
            any = any || b > 0;
            values[i] = below[i] + value(b);
        }
        if (!any)
            continue;
        const auto component = static_cast<Component>(c);
        const QColor fill = componentColor(component, dark);
        // The graph holds the curve and names it in the legend; StackedStepAreas draws it.
        QCPGraph *g = addGraph();
        g->setName(componentName(component));
        g->setLineStyle(QCPGraph::lsNone);
        g->setPen(QPen(fill.darker(115), 1));
        g->setBrush(fill);
        g->setData(keys, values, true);
        bands.push_back({fill, fill.darker(115), values});
        below = values;
    }
    m_areas->setData(keys, std::move(bands));
}

void TimelineChart::drawReserved(double x0, double x1)
{
    const TimelineSeries &s = m_contents->series;
    if (s.reserved.empty()) // a slider drag: replayed once the value settles
        return;
    const std::vector<std::size_t> kept = decimateColumns(
        s.positions(),
        [](std::size_t i) { return static_cast<double>(i); },
        [&](std::size_t i) { return s.reserved[i]; },
        x0,
        x1,
        columns());
    QVector<double> keys, values;
    for (std::size_t i : kept) {
        keys << static_cast<double>(i);
        values << value(s.reserved[i]);
    }
    QCPGraph *g = addGraph();
    g->setName(tr("Reserved (allocator model)"));
    g->setLineStyle(QCPGraph::lsStepLeft);
    g->setPen(QPen(chartColors(palette()).text, 1.5, Qt::DashLine));
    g->setData(keys, values, true);
}

void TimelineChart::drawMeasured(double x0, double x1)
{
    if (!m_measured || !m_measured->alignment.usable() || m_measured->allocated.empty())
        return;
    const TimelineChartMeasured &m = *m_measured;
    const auto x = [&](std::size_t k) { return m.alignment.position(static_cast<double>(k)); };
    const QColor colors[] = {QColor(200, 30, 60), QColor(200, 30, 60).lighter(140)};
    const QString names[] = {tr("Measured allocated"), tr("Measured reserved")};
    const std::vector<Bytes> *curves[] = {&m.allocated, &m.reserved};
    for (int c = 0; c < 2; ++c) {
        const std::vector<Bytes> &v = *curves[c];
        const std::vector<std::size_t> kept = decimateColumns(
            v.size(), x, [&](std::size_t k) { return v[k]; }, x0, x1, columns());
        QVector<double> keys, values;
        for (std::size_t k : kept) {
            keys << x(k);
            values << value(v[k]);
        }
        QCPGraph *g = addGraph();
        g->setName(names[c]);
        g->setLineStyle(QCPGraph::lsStepLeft);
        g->setPen(QPen(colors[c], c == 0 ? 2.0 : 1.5, c == 0 ? Qt::SolidLine : Qt::DotLine));
        g->setData(keys, values, true);
    }
}

void TimelineChart::drawStages(double top)
{
    const ChartColors colors = chartColors(palette());
    for (const TimelineStageSpan &b : bands(m_contents->series.stages)) {
        auto *rect = new QCPItemRect(this);
        rect->setLayer(QStringLiteral("grid"));
        rect->setPen(Qt::NoPen);
        rect->setBrush(stageShade(b.stage, colors.dark));
        rect->topLeft->setCoords(static_cast<double>(b.first), top);
        rect->bottomRight->setCoords(static_cast<double>(b.end), 0);
        auto *label = new CachedTextItem(this);
        label->setLayer(QStringLiteral("grid"));
        label->position->setCoords((static_cast<double>(b.first) + static_cast<double>(b.end)) / 2,
                                   top);
        label->setPositionAlignment(Qt::AlignTop | Qt::AlignHCenter);
        label->setText(QString::fromUtf8(stageLabel(b.stage)));
        label->setColor(colors.mutedText);
        label->setClipToAxisRect(true);
        const double span = xAxis->coordToPixel(double(b.end))
                            - xAxis->coordToPixel(double(b.first));
        label->setVisible(span > label->boxSize().width() + 4);
    }
}

void TimelineChart::drawCapacities()
{
    const ChartColors colors = chartColors(palette());
    for (std::size_t i = 0; i < m_contents->gpus.size(); ++i) {
        const GpuSpec &gpu = m_contents->gpus[i];
        const double cap = value(gpu.memory_bytes - m_contents->outside_allocator);
        auto *line = new QCPItemStraightLine(this);
        line->setPen(QPen(gpuLineColor(static_cast<int>(i), colors.dark), 1.5));
        line->point1->setCoords(0, cap);
        line->point2->setCoords(1, cap);
        auto *label = new CachedTextItem(this);
        label->position->setCoords(xAxis->range().upper, cap);
        label->setPositionAlignment(Qt::AlignRight | Qt::AlignBottom);
        label->setColor(gpuLabelColor(static_cast<int>(i), colors));
        label->setText(m_contents->outside_allocator > 0
                           ? tr("%1 less CUDA context").arg(shortGpuName(gpu))
                           : shortGpuName(gpu));
        label->setClipToAxisRect(true);
    }
}

void TimelineChart::drawPeak()
{
    const TimelineSeries &s = m_contents->series;
    const std::vector<ComponentBytes> at = componentsAt(m_contents->timeline, s, {s.peak});
    std::vector<std::pair<Bytes, int>> parts;
    for (int c = 0; c < kAllocatedComponentCount; ++c)
        if (at.front()[static_cast<std::size_t>(c)] > 0)
            parts.push_back({at.front()[static_cast<std::size_t>(c)], c});
    std::sort(parts.rbegin(), parts.rend());
    QStringList made;
    for (std::size_t i = 0; i < parts.size() && i < 4; ++i)
        made << tr("%1 %2").arg(componentName(static_cast<Component>(parts[i].second)).toLower(),
                                bytesText(parts[i].first, m_unit));
    const ChartColors colors = chartColors(palette());
    const double x = static_cast<double>(s.peak), y = value(s.allocated[s.peak]);
    auto *dot = new QCPItemTracer(this);
    dot->position->setCoords(x, y);
    dot->setStyle(QCPItemTracer::tsCircle);
    dot->setSize(8);
    dot->setPen(QPen(colors.text, 1.5));
    auto *label = new CachedTextItem(this);
    label->position->setCoords(x, y);
    const bool right = x < xAxis->range().center();
    label->setPadding(QMargins(6, 2, 6, 4));
    label->setColor(colors.text);
    label->setBrush(QBrush(colors.background));
    label->setText(tr("Peak %1 (%2)\n%3")
                       .arg(bytesText(s.allocated[s.peak], m_unit),
                            QString::fromUtf8(phaseLabel(m_contents->peak_phase)).toLower(),
                            made.join(QStringLiteral("\n"))));
    // Above the peak when the plot has room for the text there, else below it.
    const int lines = static_cast<int>(made.size()) + 1;
    const double height = QFontMetricsF(label->font()).lineSpacing() * lines + 6;
    const bool above = yAxis->coordToPixel(y) - axisRect()->top() > height;
    label->setPositionAlignment((above ? Qt::AlignBottom : Qt::AlignTop)
                                | (right ? Qt::AlignLeft : Qt::AlignRight));
}

QString TimelineChart::describePosition(std::size_t position) const
{
    if (!m_contents || m_contents->series.positions() == 0)
        return {};
    const TimelineSeries &s = m_contents->series;
    position = std::min(position, s.positions() - 1);
    QString text;
    if (position == 0) {
        text = tr("Start of the step: the resident tensors");
    } else {
        const ExpandedEvent &e = s.events[position - 1];
        const TimelineTensor &t = m_contents->timeline.tensors[static_cast<std::size_t>(e.tensor)];
        text = (e.alloc ? tr("Allocates %1") : tr("Frees %1")).arg(QString::fromUtf8(t.name));
        if (t.per_layer)
            text += tr(" (layer %1)").arg(e.layer);
        text += tr(", %1 · %2 · %3")
                    .arg(bytesText(e.bytes, m_unit),
                         componentName(t.component).toLower(),
                         QString::fromUtf8(stageLabel(
                             m_contents->timeline.blocks[static_cast<std::size_t>(e.block)].stage)));
    }
    if (s.reserved.empty())
        text += tr("\nEstimate: %1 allocated (reserved once the value settles)")
                    .arg(bytesText(s.allocated[position], m_unit));
    else
        text += tr("\nEstimate: %1 allocated, %2 reserved")
                    .arg(bytesText(s.allocated[position], m_unit),
                         bytesText(s.reserved[position], m_unit));
    if (m_measured)
        if (const auto k = m_measured->alignment.event(static_cast<double>(position))) {
            const auto point = std::min(static_cast<std::size_t>(std::lround(*k)),
                                        m_measured->allocated.size() - 1);
            text += tr("\nMeasured: %1 allocated, %2 reserved (trace point %3 of %4)")
                        .arg(bytesText(m_measured->allocated[point], m_unit),
                             bytesText(m_measured->reserved[point], m_unit))
                        .arg(point)
                        .arg(m_measured->name);
        }
    return text;
}

void TimelineChart::mouseMoveEvent(QMouseEvent *event)
{
    QCustomPlot::mouseMoveEvent(event);
    if (!m_contents || m_contents->series.positions() < 2
        || !axisRect()->rect().contains(event->pos())) {
        QToolTip::hideText();
        return;
    }
    const double x = xAxis->pixelToCoord(event->position().x());
    const auto position = static_cast<std::size_t>(
        std::clamp(std::lround(x), 0L, static_cast<long>(m_contents->series.positions() - 1)));
    const QString text = describePosition(position);
    QToolTip::showText(event->globalPosition().toPoint(), text, this);
    emit hovered(text);
}

} // namespace membudget
