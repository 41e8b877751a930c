// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Writing a chart to PNG (with a scale factor), SVG (QSvgGenerator + QCPPainter, vectorized) or
// PDF (QPdfWriter + QCPPainter) at a chosen size, with an optional title above and caption below.
// Every export is rendered in memory and written through writeFileSafely: the old file survives
// any failure.

#include <QImage>
#include <QString>

#include <optional>
#include <string>

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

// The limits of an export. A report figure needs a few million pixels (an A4 page at 300 dpi is
// 8.7 million, an 8K screen 33 million); past kMaxExportPixels a PNG only costs seconds and
// gigabytes (20000 x 20000 at scale 2 took 45 s and 6.3 GB).
inline constexpr int kMinExportSide = 16;
inline constexpr int kMaxExportSide = 20000;
inline constexpr double kMinExportScale = 0.25;
inline constexpr double kMaxExportScale = 8.0;
inline constexpr double kMaxExportPixels = 40'000'000; // width x height x scale^2 (PNG)

// Why `options` cannot be exported as `format` (sides, scale, pixel count), or an empty string.
QString exportSizeProblem(const ExportOptions &options, ExportFormat format);

// Writes `plot` to `path` (native bytes, see file_writer.h) in the format of its extension. The
// plot gets the title and caption for the duration of the export. Returns false with a message on
// failure, the old file at `path` untouched.
bool exportPlot(QCustomPlot *plot,
                const std::string &path,
                const ExportOptions &options,
                QString *error = nullptr);
bool exportPlot(QCustomPlot *plot,
                const QString &path,
                const ExportOptions &options,
                QString *error = nullptr);

// Renders `plot` to an image (for the clipboard).
QImage renderPlot(QCustomPlot *plot, const ExportOptions &options);

// A light palette for exported charts: reports are printed on white.
void useExportPalette(QCustomPlot *plot);

// Text on its way into an SVG file (the title and description elements): characters XML 1.0 does
// not allow removed, markup characters escaped. The one escaping function of that sink.
QString escapeForSvg(const QString &text);

} // namespace membudget
