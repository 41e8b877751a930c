// SPDX-License-Identifier: GPL-3.0-or-later
#include "charts/chart_theme.h"

#include <qcustomplot.h>

#include <algorithm>
#include <array>
#include <cmath>

namespace membudget {

namespace {

// `color` darkened (on light backgrounds) or lightened (on dark ones) until it reads at 4.5:1 or
// better against each of `backgrounds` (WCAG 2.1 AA for text).
QColor readableOn(QColor color, const std::initializer_list<QColor> &backgrounds, bool dark)
{
    auto worst = [&](const QColor &c) {
        double least = 21;
        for (const QColor &b : backgrounds)
            least = std::min(least, contrastRatio(c, b));
        return least;
    };
    for (int step = 0; step < 40 && worst(color) < 4.5; ++step)
        color = dark ? color.lighter(108) : color.darker(108);
    if (worst(color) < 4.5) // a hue that cannot get there: plain black or white
        color = dark ? QColor(Qt::white) : QColor(Qt::black);
    return color;
}

ChartColors computeChartColors(const QPalette &palette);

} // namespace

ChartColors chartColors(const QPalette &palette)
{
    // Asked for on every slider step by several views; worked out once per palette (the contrast
    // search is not free). A few recent palettes: the window's and the export's alternate.
    struct Cached
    {
        qint64 key = -1;
        ChartColors colors;
    };
    static thread_local std::array<Cached, 4> cache;
    static thread_local std::size_t next = 0;
    for (const Cached &entry : cache)
        if (entry.key == palette.cacheKey())
            return entry.colors;
    Cached &entry = cache[next++ % cache.size()];
    entry.key = palette.cacheKey();
    entry.colors = computeChartColors(palette);
    return entry.colors;
}

namespace {
ChartColors computeChartColors(const QPalette &palette)
{
    ChartColors c;
    c.background = palette.color(QPalette::Base);
    c.text = palette.color(QPalette::Text);
    c.dark = c.background.lightnessF() < 0.5;
    // Texts in these colours sit on the chart, on table rows (plain and alternate) and on panels.
    const QColor alternate = over(palette.color(QPalette::AlternateBase), c.background);
    const QColor window = palette.color(QPalette::Window);
    const std::initializer_list<QColor> behind = {c.background, alternate, window};
    c.mutedText = c.dark ? c.text.darker(135) : c.text.lighter(170);
    if (c.mutedText == c.text)
        c.mutedText = c.dark ? QColor(170, 170, 170) : QColor(100, 100, 100);
    c.mutedText = readableOn(c.mutedText, behind, c.dark);
    c.grid = c.dark ? QColor(255, 255, 255, 28) : QColor(0, 0, 0, 24);
    c.axis = c.dark ? QColor(255, 255, 255, 90) : QColor(0, 0, 0, 110);
    c.danger = readableOn(c.dark ? QColor(255, 107, 107) : QColor(200, 30, 45), behind, c.dark);
    c.ok = readableOn(c.dark ? QColor(98, 200, 120) : QColor(30, 130, 60), behind, c.dark);
    c.warning = readableOn(c.dark ? QColor(255, 190, 80) : QColor(160, 95, 0), behind, c.dark);
    return c;
}
} // namespace

QColor componentColor(Component component, bool dark)
{
    // Okabe-Ito inspired, ordered so that neighbours in the stack differ in hue and lightness.
    static const std::array<QColor, kComponentCount> light = {
        QColor(0x2b, 0x6c, 0xb0), // weights: blue
        QColor(0xe0, 0x8a, 0x1e), // gradients: orange
        QColor(0x7e, 0x57, 0xc2), // master weights: violet
        QColor(0xc2, 0x3b, 0x5a), // optimizer states: raspberry
        QColor(0x2e, 0x9e, 0x6f), // activations: green
        QColor(0x1f, 0x7a, 0x5a), // KV cache: dark green (inference's activations)
        QColor(0x3f, 0xb8, 0xc8), // logits: cyan
        QColor(0xd9, 0xbf, 0x3a), // temporaries: yellow
        QColor(0x84, 0x8c, 0x96), // CUDA context: grey
        QColor(0x9a, 0x83, 0x6b), // NCCL buffers: taupe
        QColor(0xb9, 0xbf, 0xc6), // allocator reserve: light grey
    };
    QColor c = light[static_cast<int>(component)];
    if (dark)
        c = c.lighter(component == Component::AllocatorReserve ? 80 : 118);
    return c;
}

QString componentName(Component component)
{
    return QString::fromUtf8(componentLabel(component));
}

QString componentDescription(Component component)
{
    switch (component) {
    case Component::Weights:
        return QObject::tr(
            "The model's parameters as stored on this GPU (quantized base and adapters included).");
    case Component::Gradients:
        return QObject::tr("One gradient per trainable parameter, kept until the optimizer step.");
    case Component::MasterWeights:
        return QObject::tr("The fp32 copy of 16-bit weights that mixed precision updates.");
    case Component::OptimizerStates:
        return QObject::tr("Adam moments, momentum buffers or factored statistics.");
    case Component::Activations:
        return QObject::tr(
            "Tensors the forward pass saves for backward; grows with micro-batch x sequence.");
    case Component::KvCache:
        return QObject::tr(
            "Keys and values of every layer for every token so far; grows with batch x length.");
    case Component::Logits:
        return QObject::tr("The output logits over the vocabulary and their gradient.");
    case Component::Temporaries:
        return QObject::tr(
            "Short-lived buffers: recomputation, gathered shards, optimizer scratch.");
    case Component::CudaContext:
        return QObject::tr("CUDA context and kernels, outside PyTorch's allocator.");
    case Component::Communicator:
        return QObject::tr(
            "NCCL communicator buffers of each rank when several GPUs work together.");
    case Component::AllocatorReserve:
        return QObject::tr(
            "Memory the caching allocator reserves beyond what tensors use (fragmentation).");
    }
    return {};
}

QString shortGpuName(const GpuSpec &gpu)
{
    QString name = QString::fromStdString(gpu.name);
    for (QLatin1String prefix : {QLatin1String("NVIDIA "),
                                 QLatin1String("AMD "),
                                 QLatin1String("Intel "),
                                 QLatin1String("GeForce "),
                                 QLatin1String("Radeon ")})
        if (name.startsWith(prefix))
            name = name.mid(prefix.size());
    return name;
}

QColor gpuLineColor(int index, bool dark)
{
    static const std::array<QColor, 6> colors = {QColor(0xd6, 0x27, 0x28),
                                                 QColor(0x8c, 0x2d, 0x9e),
                                                 QColor(0x17, 0x7e, 0x89),
                                                 QColor(0xb3, 0x5c, 0x00),
                                                 QColor(0x44, 0x55, 0x66),
                                                 QColor(0x5a, 0x78, 0x14)};
    QColor c = colors[static_cast<std::size_t>(index) % colors.size()];
    return dark ? c.lighter(160) : c;
}

QColor gpuLabelColor(int index, const ChartColors &colors)
{
    return readableOn(gpuLineColor(index, colors.dark), {colors.background}, colors.dark);
}

double relativeLuminance(const QColor &color)
{
    // sRGB to linear light, then the Rec. 709 weights (WCAG 2.1, "relative luminance").
    auto channel = [](double c) {
        return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
    };
    return 0.2126 * channel(color.redF()) + 0.7152 * channel(color.greenF())
           + 0.0722 * channel(color.blueF());
}

double contrastRatio(const QColor &a, const QColor &b)
{
    const double la = relativeLuminance(a), lb = relativeLuminance(b);
    return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

QColor over(const QColor &color, const QColor &background)
{
    const double a = color.alphaF();
    return QColor::fromRgbF(static_cast<float>(color.redF() * a + background.redF() * (1 - a)),
                            static_cast<float>(color.greenF() * a + background.greenF() * (1 - a)),
                            static_cast<float>(color.blueF() * a + background.blueF() * (1 - a)));
}

void applyPlotColors(QCustomPlot *plot, const ChartColors &colors)
{
    plot->setBackground(colors.background);
    for (QCPAxisRect *rect : plot->axisRects()) {
        rect->setBackground(colors.background);
        for (QCPAxis *axis : rect->axes()) {
            axis->setBasePen(QPen(colors.axis));
            axis->setTickPen(QPen(colors.axis));
            axis->setSubTickPen(QPen(colors.axis));
            axis->setTickLabelColor(colors.text);
            axis->setLabelColor(colors.text);
            axis->grid()->setPen(QPen(colors.grid, 0));
            axis->grid()->setSubGridPen(QPen(colors.grid, 0, Qt::DotLine));
            axis->grid()->setZeroLinePen(Qt::NoPen);
        }
    }
    if (plot->legend) {
        plot->legend->setBrush(colors.background);
        plot->legend->setBorderPen(Qt::NoPen);
        plot->legend->setTextColor(colors.text);
    }
}

} // namespace membudget
