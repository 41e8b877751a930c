// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Writing a chart to PNG (with a scale factor), SVG (QSvgGenerator + QCPPainter, vectorized) or
// PDF (QCustomPlot::savePdf) at a chosen size, with an optional title above and caption below.

#include <QImage>
#include <QString>

#include <optional>

class QCustomPlot;

namespace membudget {

enum class ExportFormat { Png, Svg, Pdf };

// From the file's extension (case-insensitive); std::nullopt for anything else.
std::optional<ExportFormat> exportFormatForPath(const QString &path);

struct ExportOptions
{
    int width = 1200; // logical pixels (PNG: multiplied by scale; SVG: pixels; PDF: points)
    int height = 700;
    double scale = 1.0; // PNG only
    QString title;
    QString caption;
};

// Writes `plot` to `path` in the format of its extension. The plot gets the title and caption for
// the duration of the export. Returns false with a message on failure.
bool exportPlot(QCustomPlot *plot,
                const QString &path,
                const ExportOptions &options,
                QString *error = nullptr);

// Renders `plot` to an image (for the clipboard).
QImage renderPlot(QCustomPlot *plot, const ExportOptions &options);

// A light palette for exported charts: reports are printed on white.
void useExportPalette(QCustomPlot *plot);

} // namespace membudget
