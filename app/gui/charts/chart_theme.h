// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The one place that maps memory components to colours and names, and the chart colours that
// follow the platform palette (light or dark).

#include "model/gpu_spec.h"
#include "model/memory_estimate.h"

#include <QColor>
#include <QPalette>
#include <QString>

class QCustomPlot;

namespace membudget {

struct ChartColors
{
    QColor background;
    QColor text;
    QColor mutedText;
    QColor grid;
    QColor axis;
    // Text colours: each reads at 4.5:1 or better on the chart, on table rows (plain and alternate)
    // and on the window (see chartColors()).
    QColor danger; // over-capacity
    QColor ok;     // fits
    QColor warning;
    bool dark = false;
};

// Chart colours derived from a palette: window background, text, a faint grid.
ChartColors chartColors(const QPalette &palette);

// Fill colour of a component: distinct hues that stay readable on light and dark backgrounds.
QColor componentColor(Component component, bool dark);
QString componentName(Component component);
// What the component is, for the legend's tooltip and the hover text.
QString componentDescription(Component component);

// "NVIDIA GeForce RTX 4090 24GB" -> "RTX 4090 24GB" (the vendor is clear from the model).
QString shortGpuName(const GpuSpec &gpu);

// Capacity-line colour of the n-th selected GPU, and the same hue as a readable label text.
QColor gpuLineColor(int index, bool dark);
QColor gpuLabelColor(int index, const ChartColors &colors);

// WCAG 2 relative luminance of an opaque colour and the contrast ratio of two (1 to 21; text wants at
// least 4.5). https://www.w3.org/TR/WCAG21/#dfn-contrast-ratio
double relativeLuminance(const QColor &color);
double contrastRatio(const QColor &a, const QColor &b);
// `color` blended over `background` by its alpha (what the eye sees of a translucent colour).
QColor over(const QColor &color, const QColor &background);

// Applies background, axis, tick and grid colours to a plot's default axis rect and legend.
void applyPlotColors(QCustomPlot *plot, const ChartColors &colors);

} // namespace membudget
