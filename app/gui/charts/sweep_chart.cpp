// SPDX-License-Identifier: GPL-3.0-or-later
#include "charts/sweep_chart.h"

#include "advice/fit_solver.h"
#include "base/parallel_for.h"
#include "charts/chart_theme.h"
#include "charts/label_layout.h"
#include "throughput/throughput_model.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QToolTip>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace membudget {

namespace {

// The swept values: powers of two and the halves between, up to 1,024 sequences or 1M tokens (and
// not past the model's context length, `context` when above 0).
std::vector<std::int64_t> sweepValues(SweepAxis axis, std::int64_t current, std::int64_t context)
{
    std::vector<std::int64_t> out;
    const std::int64_t lo = axis == SweepAxis::MicroBatch ? 1 : 128;
    std::int64_t hi = axis == SweepAxis::MicroBatch ? 1024 : (1 << 20);
    if (axis == SweepAxis::SequenceLength && context >= lo)
        hi = std::min(hi, context);
    for (std::int64_t v = lo; v <= hi; v *= 2) {
        out.push_back(v);
        if (v * 3 / 2 <= hi && v >= 2)
            out.push_back(v * 3 / 2);
    }
    if (current >= lo && current <= hi)
        out.push_back(current);
    if (out.empty() || out.back() < hi)
        out.push_back(hi);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

double niceCeil(double v)
{
    if (!(v > 0))
        return 1;
    const double exp = std::pow(10.0, std::floor(std::log10(v)));
    for (double m : {1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0})
        if (m * exp >= v * 0.9999)
            return m * exp;
    return 10 * exp;
}

QString compactCount(std::int64_t v)
{
    if (v >= (1 << 20) && v % (1 << 20) == 0)
        return QStringLiteral("%1M").arg(v >> 20);
    if (v >= 1024 && v % 1024 == 0)
        return QStringLiteral("%1k").arg(v >> 10);
    return QString::number(v);
}

class CountTicker : public QCPAxisTickerLog
{
protected:
    QString getTickLabel(double tick, const QLocale &, QChar, int) override
    {
        return compactCount(static_cast<std::int64_t>(std::llround(tick)));
    }
};

} // namespace

SweepChart::SweepChart(QWidget *parent)
    : QCustomPlot(parent)
    , m_limitsWorker(new FitLimitsWorker(this))
{
    connect(m_limitsWorker, &FitLimitsWorker::finished, this, &SweepChart::onExactLimits);
    setMinimumSize(360, 240);
    setAntialiasedElements(QCP::aeAll);
    setMouseTracking(true);
    xAxis->setScaleType(QCPAxis::stLogarithmic);
    auto ticker = QSharedPointer<CountTicker>(new CountTicker);
    ticker->setLogBase(2);
    ticker->setSubTickCount(0);
    xAxis->setTicker(ticker);
    yAxis->setNumberFormat(QStringLiteral("g"));
    yAxis->setSubTicks(false);
    xAxis->grid()->setSubGridVisible(false);

    m_total = addGraph();
    m_total->setName(tr("Total per GPU (nvidia-smi)"));
    m_allocated = addGraph();
    m_allocated->setName(tr("Peak allocated (PyTorch)"));
    m_current = addGraph();
    m_current->setName(tr("Current setting"));
    m_current->setLineStyle(QCPGraph::lsNone);
    legend->setVisible(true);
    legend->setSelectableParts(QCPLegend::spNone);
    axisRect()->insetLayout()->setInsetAlignment(0, Qt::AlignTop | Qt::AlignLeft);
    applyTheme();
}

double SweepChart::toUnit(Bytes bytes) const
{
    const double div = m_unit == ByteUnit::GiB ? static_cast<double>(kGiB)
                                               : static_cast<double>(kGB);
    return static_cast<double>(bytes) / div;
}

void SweepChart::setInput(const EstimateInput &input, bool valid)
{
    m_input = input;
    m_valid = valid;
    refresh();
}

void SweepChart::setGpus(std::vector<GpuSpec> gpus)
{
    m_gpus = std::move(gpus);
    refresh();
}

void SweepChart::setUnit(ByteUnit unit)
{
    m_unit = unit;
    refresh();
}

void SweepChart::setAxis(SweepAxis axis)
{
    m_axis = axis;
    refresh();
}

void SweepChart::setShowSpeed(bool show)
{
    m_showSpeed = show;
    refresh();
}

// The largest value that fits each GPU: the exact answer when it has arrived for this very input,
// else the fast estimate now and the exact one asked of the worker.
std::vector<std::int64_t> SweepChart::fitLimits(const StepModel &model)
{
    if (m_showingExact && m_exactFits.size() == m_gpus.size())
        return m_exactFits;
    const bool batch = m_axis == SweepAxis::MicroBatch;
    const std::int64_t context = m_input.arch.context_length;
    std::vector<FitLimitQuery> queries;
    for (const GpuSpec &gpu : m_gpus)
        queries.push_back(
            {batch ? FitLimitQuery::Kind::MicroBatch : FitLimitQuery::Kind::SequenceLength,
             gpu.memory_bytes,
             batch ? 1 << 20 : (context > 0 ? context : 1 << 24)});
    m_exactFits.clear();
    m_limitsGeneration = m_limitsWorker->request(m_input, {}, queries);
    return estimatedFitLimits(model, queries);
}

void SweepChart::onExactLimits(quint64 generation, const std::vector<std::int64_t> &limits)
{
    if (generation != m_limitsGeneration || limits.size() != m_gpus.size() || !m_valid)
        return; // asked for another input
    m_exactFits = limits;
    m_showingExact = true;
    refresh();
    m_showingExact = false;
}

// Tokens per second on each GPU at every sample that fits it: memory and speed on one picture, the
// curve ending at the largest value that fits (marked).
void SweepChart::refreshSpeed(const std::vector<std::int64_t> &values)
{
    const ChartColors colors = chartColors(palette());
    const bool batch = m_axis == SweepAxis::MicroBatch;
    const std::size_t wanted = m_showSpeed && m_valid ? m_gpus.size() : 0;
    while (m_speedGraphs.size() > wanted) {
        removeGraph(m_speedGraphs.back());
        m_speedGraphs.pop_back();
    }
    while (m_speedGraphs.size() < wanted) {
        QCPGraph *g = addGraph(xAxis, yAxis2);
        g->setLineStyle(QCPGraph::lsLine);
        m_speedGraphs.push_back(g);
    }
    m_speeds.assign(wanted, {});
    yAxis2->setVisible(wanted > 0);
    if (wanted == 0)
        return;
    yAxis2->setLabel(tr("Tokens/s, whole job (modelled)"));
    double top = 0;
    for (std::size_t i = 0; i < wanted; ++i) {
        const GpuSpec &gpu = m_gpus[i];
        QVector<double> xs, ys;
        std::vector<std::int64_t> points;
        const std::int64_t fit = i < m_maxFits.size() ? m_maxFits[i] : 0;
        for (std::int64_t v : values)
            if (v <= fit)
                points.push_back(v);
        if (fit > 0 && (points.empty() || points.back() < fit))
            points.push_back(fit); // the curve ends at the largest value that fits
        for (std::int64_t v : points) {
            EstimateInput in = m_input;
            (batch ? in.training.micro_batch_size : in.training.sequence_length) = v;
            const ThroughputEstimate t = estimateThroughput(in, gpu.performance);
            if (!t.valid)
                break;
            m_speeds[i].emplace_back(v, t.tokens_per_second);
            xs.push_back(static_cast<double>(v));
            ys.push_back(t.tokens_per_second);
            top = std::max(top, t.tokens_per_second);
        }
        QCPGraph *g = m_speedGraphs[i];
        g->setName(tr("Tokens/s on %1").arg(shortGpuName(gpu)));
        g->setData(xs, ys, true);
        const QColor color = gpuLineColor(static_cast<int>(i), colors.dark);
        g->setPen(QPen(color, 2.0));
        g->setScatterStyle(QCPScatterStyle(QCPScatterStyle::ssCircle, color, color, 4));
    }
    yAxis2->setRange(0, niceCeil(top * 1.15));
    yAxis2->grid()->setVisible(false);
    yAxis2->setNumberFormat(QStringLiteral("f"));
    yAxis2->setNumberPrecision(0);
}

void SweepChart::refresh()
{
    const ChartColors colors = chartColors(palette());
    clearItems();
    m_capacityLabels.clear();
    m_samples.clear();
    m_maxFits.clear();
    if (!m_showingExact)
        m_exactFits.clear();
    if (m_message) {
        plotLayout()->remove(m_message);
        plotLayout()->simplify();
        m_message = nullptr;
    }
    const bool batch = m_axis == SweepAxis::MicroBatch;
    xAxis->setLabel(batch ? tr("Micro-batch size (sequences)") : tr("Sequence length (tokens)"));
    yAxis->setLabel(
        tr("Memory per GPU (%1)")
            .arg(m_unit == ByteUnit::GiB ? QStringLiteral("GiB") : QStringLiteral("GB")));
    if (!m_valid) {
        m_total->data()->clear();
        m_allocated->data()->clear();
        m_current->data()->clear();
        refreshSpeed({});
        replot(rpQueuedReplot);
        return;
    }

    const std::int64_t current = batch ? m_input.training.micro_batch_size
                                       : m_input.training.sequence_length;
    const std::int64_t context = m_input.arch.context_length;
    const std::vector<std::int64_t> values = sweepValues(m_axis, current, context);
    QVector<double> xs, totals, allocs;
    const StepModel model(m_input); // one timeline, evaluated at every point
    // Each point replays the step (milliseconds for a 7B model): on every core at once.
    m_samples.assign(values.size(), {});
    parallelFor(values.size(), [&](std::size_t i) {
        const std::int64_t v = values[i];
        const MemoryEstimate est = batch
                                       ? model.replayedEstimate(v, m_input.training.sequence_length)
                                       : model.replayedEstimate(m_input.training.micro_batch_size,
                                                                v);
        m_samples[i] = {v, est.device_total, est.peak_allocated};
    });
    for (const Sample &sample : m_samples) {
        xs.push_back(static_cast<double>(sample.x));
        totals.push_back(toUnit(sample.total));
        allocs.push_back(toUnit(sample.allocated));
    }
    m_total->setData(xs, totals, true);
    m_allocated->setData(xs, allocs, true);
    const MemoryEstimate now = model.estimate();
    m_current->setData({static_cast<double>(current)}, {toUnit(now.device_total)});

    m_total->setPen(QPen(componentColor(Component::Weights, colors.dark), 2.4));
    m_allocated->setPen(
        QPen(componentColor(Component::Activations, colors.dark), 1.6, Qt::DashLine));
    m_current->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssCircle, colors.text, colors.background, 9));

    const double xLo = batch ? 1 : 128;
    const double xHi = std::max(static_cast<double>(values.back()),
                                static_cast<double>(std::min<std::int64_t>(current, 1 << 24)));
    xAxis->setRange(xLo / 1.15, xHi * 1.15);
    double top = toUnit(now.device_total);
    for (const GpuSpec &gpu : m_gpus)
        top = std::max(top, toUnit(gpu.memory_bytes));
    yAxis->setRange(0, niceCeil(top * 1.6));

    const std::vector<std::int64_t> fits = fitLimits(model);
    QFont small = font();
    small.setPointSizeF(small.pointSizeF() * 0.88);
    if (!batch && context > 0) {
        // The model's context length: the sweep stops there.
        auto *limit = new QCPItemStraightLine(this);
        limit->point1->setCoords(static_cast<double>(context), 0);
        limit->point2->setCoords(static_cast<double>(context), 1);
        limit->setPen(QPen(colors.mutedText, 1.2, Qt::DashDotLine));
        auto *text = new QCPItemText(this);
        text->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
        text->position->setCoords(static_cast<double>(context), 0.0);
        text->setPositionAlignment(Qt::AlignRight | Qt::AlignTop);
        text->setText(tr("context %1").arg(compactCount(context)));
        text->setColor(colors.mutedText);
        text->setFont(small);
        text->setPadding(QMargins(2, 4, 4, 2));
    }
    for (std::size_t i = 0; i < m_gpus.size(); ++i) {
        const GpuSpec &gpu = m_gpus[i];
        const QColor color = gpuLineColor(static_cast<int>(i), colors.dark);
        const double y = toUnit(gpu.memory_bytes);
        auto *line = new QCPItemStraightLine(this);
        line->point1->setCoords(xLo, y);
        line->point2->setCoords(xHi, y);
        line->setPen(QPen(color, 1.4, Qt::DashLine));
        auto *label = new QCPItemText(this);
        label->position->setType(QCPItemPosition::ptAbsolute); // placed by updateLayout()
        label->setPositionAlignment(Qt::AlignRight | Qt::AlignBottom);
        label->setColor(gpuLabelColor(static_cast<int>(i), colors));
        label->setBrush(QBrush(colors.background));
        label->setClipToAxisRect(false);
        m_capacityLabels.push_back({label, y});
        label->setFont(small);
        label->setPadding(QMargins(2, 0, 4, 1));

        const std::int64_t fit = fits[i];
        m_maxFits.push_back(fit);
        const QString approx = m_exactFits.empty() ? QStringLiteral("≈ ") : QString();
        QString fitText;
        if (fit <= 0) {
            fitText = approx + (batch ? tr("no micro-batch fits") : tr("no sequence fits"));
        } else {
            fitText = (batch ? tr("max batch %1") : tr("max %1 tokens"))
                          .arg(approx + QLocale().toString(static_cast<qlonglong>(fit)));
            if (static_cast<double>(fit) >= xLo && static_cast<double>(fit) <= xHi) {
                auto *mark = new QCPItemLine(this);
                mark->start->setCoords(static_cast<double>(fit), 0);
                mark->end->setCoords(static_cast<double>(fit), y);
                mark->setPen(QPen(color, 1.2, Qt::DotLine));
                mark->setHead(QCPLineEnding(QCPLineEnding::esDisc, 7));
                auto *markLabel = new QCPItemText(this);
                markLabel->position->setCoords(static_cast<double>(fit), 0);
                markLabel->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
                markLabel->setRotation(-90);
                markLabel->setPositionAlignment(Qt::AlignLeft | Qt::AlignBottom);
                markLabel->setText(compactCount(fit));
                markLabel->setColor(color);
                markLabel->setFont(small);
                markLabel->setPadding(QMargins(4, 2, 2, 2));
            }
        }
        label->setText(QStringLiteral("%1 (%2) · %3")
                           .arg(shortGpuName(gpu),
                                QString::fromStdString(formatCapacity(gpu.memory_bytes, m_unit)),
                                fitText));
    }
    refreshSpeed(values);
    replot(rpQueuedReplot);
}

void SweepChart::updateLayout()
{
    QCustomPlot::updateLayout();
    // Each capacity label just above its line, right-aligned; close capacities stack (labels never
    // overlap), at the size being painted.
    const QRect rect = axisRect()->rect();
    std::vector<double> wanted, heights;
    for (const CapacityLabel &c : m_capacityLabels) {
        const QFontMetrics fm(c.item->font());
        const double h = fm.height() + c.item->padding().top() + c.item->padding().bottom();
        heights.push_back(h);
        wanted.push_back(yAxis->coordToPixel(c.value) - h / 2);
    }
    const std::vector<double> y = stackLabels(wanted, heights, rect.top(), rect.bottom(), 1);
    for (std::size_t i = 0; i < m_capacityLabels.size(); ++i)
        m_capacityLabels[i].item->position->setCoords(rect.right(), y[i] + heights[i] / 2);
}

void SweepChart::applyTheme()
{
    const ChartColors colors = chartColors(palette());
    applyPlotColors(this, colors);
    legend->setBrush(QBrush(colors.background));
    legend->setBorderPen(QPen(colors.grid));
}

void SweepChart::changeEvent(QEvent *event)
{
    QCustomPlot::changeEvent(event);
    if (event->type() == QEvent::PaletteChange
        || event->type() == QEvent::ApplicationPaletteChange) {
        applyTheme();
        refresh();
    }
}

void SweepChart::mouseMoveEvent(QMouseEvent *event)
{
    QCustomPlot::mouseMoveEvent(event);
    if (m_samples.empty() || !axisRect()->rect().contains(event->position().toPoint())) {
        QToolTip::hideText();
        return;
    }
    const double x = xAxis->pixelToCoord(event->position().x());
    const Sample *best = nullptr;
    double bestDist = 1e300;
    for (const Sample &s : m_samples) {
        const double d = std::abs(std::log(static_cast<double>(s.x)) - std::log(std::max(x, 1e-9)));
        if (d < bestDist) {
            bestDist = d;
            best = &s;
        }
    }
    if (!best)
        return;
    const QString what = m_axis == SweepAxis::MicroBatch ? tr("Micro-batch %1") : tr("%1 tokens");
    QString text = QStringLiteral("<b>%1</b><br>%2: %3<br>%4: %5")
                       .arg(what.arg(QLocale().toString(static_cast<qlonglong>(best->x))),
                            tr("Total per GPU"),
                            QString::fromStdString(formatBytes(best->total, m_unit)),
                            tr("Peak allocated"),
                            QString::fromStdString(formatBytes(best->allocated, m_unit)));
    for (std::size_t i = 0; i < m_speeds.size() && i < m_gpus.size(); ++i)
        for (const auto &[value, rate] : m_speeds[i])
            if (value == best->x)
                text += QStringLiteral("<br>")
                        + tr("%1: %2 tokens/s")
                              .arg(shortGpuName(m_gpus[i]), QLocale().toString(rate, 'f', 0));
    QToolTip::showText(event->globalPosition().toPoint(), text, this);
}

SweepView::SweepView(QWidget *parent)
    : QWidget(parent)
    , m_chart(new SweepChart)
    , m_axisCombo(new QComboBox)
{
    m_axisCombo->addItem(tr("Sequence length"), static_cast<int>(SweepAxis::SequenceLength));
    m_axisCombo->addItem(tr("Micro-batch size"), static_cast<int>(SweepAxis::MicroBatch));
    m_axisCombo->setToolTip(
        tr("The quantity swept along the horizontal axis; everything else stays as set."));
    m_speedCheck = new QCheckBox(tr("Tokens/s"));
    m_speedCheck->setObjectName(QStringLiteral("sweepSpeed"));
    m_speedCheck->setChecked(true);
    m_speedCheck->setToolTip(tr("Also plot the modelled tokens per second on each selected GPU "
                                "(right axis), up to the largest value that fits it"));
    auto *bar = new QHBoxLayout;
    auto *label = new QLabel(tr("Peak memory against:"));
    label->setBuddy(m_axisCombo);
    bar->addWidget(label);
    bar->addWidget(m_axisCombo);
    bar->addWidget(m_speedCheck);
    bar->addStretch(1);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 6, 0, 0);
    layout->addLayout(bar);
    layout->addWidget(m_chart, 1);
    connect(m_axisCombo, &QComboBox::currentIndexChanged, this, [this](int) {
        m_chart->setAxis(static_cast<SweepAxis>(m_axisCombo->currentData().toInt()));
    });
    connect(m_speedCheck, &QCheckBox::toggled, m_chart, &SweepChart::setShowSpeed);
}

} // namespace membudget
