// SPDX-License-Identifier: GPL-3.0-or-later
#include "charts/chart_export.h"

#include "base/byte_format.h"
#include "charts/chart_theme.h"
#include "document/file_writer.h"

#include <QBuffer>
#include <QFileInfo>
#include <QImageWriter>
#include <QPageLayout>
#include <QPdfWriter>
#include <QRegularExpression>
#include <QSvgGenerator>

#include <qcustomplot.h>

namespace membudget {

namespace {

// Adds a title row above and a caption row below the plot's layout; removes them when destroyed.
class TextRows
{
public:
    // Breaks `text` into lines no wider than `width` pixels (the layout sizes the row by its lines).
    static QString wrapped(const QString &text, const QFont &font, int width)
    {
        const QFontMetrics fm(font);
        QStringList lines;
        QString line;
        for (const QString &word : text.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
            const QString candidate = line.isEmpty() ? word : line + QLatin1Char(' ') + word;
            if (!line.isEmpty() && fm.horizontalAdvance(candidate) > width) {
                lines << line;
                line = word;
            } else {
                line = candidate;
            }
        }
        if (!line.isEmpty())
            lines << line;
        return lines.join(QLatin1Char('\n'));
    }

    TextRows(QCustomPlot *plot, const QString &title, const QString &caption, int width)
        : m_plot(plot)
    {
        const ChartColors colors = chartColors(plot->palette());
        QCPLayoutGrid *layout = plot->plotLayout();
        if (!title.isEmpty()) {
            QFont f = plot->font();
            f.setPointSizeF(f.pointSizeF() * 1.4);
            f.setBold(true);
            m_title = new QCPTextElement(plot, title, f);
            m_title->setTextColor(colors.text);
            m_title->setMargins(QMargins(12, 10, 12, 4));
            layout->insertRow(0);
            layout->addElement(0, 0, m_title);
        }
        if (!caption.isEmpty()) {
            QFont f = plot->font();
            f.setPointSizeF(f.pointSizeF() * 0.92);
            m_caption = new QCPTextElement(plot, wrapped(caption, f, width - 28), f);
            m_caption->setTextColor(colors.mutedText);
            m_caption->setTextFlags(Qt::AlignLeft | Qt::AlignVCenter);
            m_caption->setMargins(QMargins(14, 4, 14, 10));
            const int row = layout->rowCount();
            layout->insertRow(row);
            layout->addElement(row, 0, m_caption);
        }
    }
    ~TextRows()
    {
        QCPLayoutGrid *layout = m_plot->plotLayout();
        if (m_title)
            layout->remove(m_title);
        if (m_caption)
            layout->remove(m_caption);
        layout->simplify();
        m_plot->replot(QCustomPlot::rpQueuedReplot);
    }

private:
    QCustomPlot *m_plot;
    QCPTextElement *m_title = nullptr;
    QCPTextElement *m_caption = nullptr;
};

// XML 1.0, section 2.2: Char ::= #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] |
// [#x10000-#x10FFFF]. Anything else makes the file malformed, escaped or not.
bool allowedInXml(char32_t c)
{
    return c == 0x9 || c == 0xA || c == 0xD || (c >= 0x20 && c <= 0xD7FF)
           || (c >= 0xE000 && c <= 0xFFFD) || (c >= 0x10000 && c <= 0x10FFFF);
}

// The same rule on the bytes QSvgGenerator wrote (UTF-8): a last pass over the whole document, for
// text that reached it another way than escapeForSvg (texts the painter drew).
QByteArray withoutXmlForbidden(const QByteArray &svg)
{
    const QString text = QString::fromUtf8(svg);
    QString out;
    out.reserve(text.size());
    for (const char32_t c : text.toUcs4())
        if (allowedInXml(c))
            out.append(QString::fromUcs4(&c, 1));
    return out.toUtf8();
}

bool renderSvg(QCustomPlot *plot, const ExportOptions &o, QByteArray &out, QString *error)
{
    QBuffer buffer;
    buffer.open(QIODevice::WriteOnly);
    QSvgGenerator generator;
    generator.setOutputDevice(&buffer);
    generator.setSize(QSize(o.width, o.height));
    generator.setViewBox(QRect(0, 0, o.width, o.height));
    generator.setResolution(96);
    // QSvgGenerator writes the title and description into the file as they are: a title holding
    // "</title><script>" would otherwise be live markup.
    generator.setTitle(
        escapeForSvg(o.title.isEmpty() ? QStringLiteral("MemBudget chart") : o.title));
    generator.setDescription(escapeForSvg(o.caption));
    QCPPainter painter;
    if (!painter.begin(&generator)) {
        if (error)
            *error = QObject::tr("cannot render the SVG");
        return false;
    }
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNoCaching);
    plot->toPainter(&painter, o.width, o.height);
    painter.end();

    // QSvgGenerator states the size in millimetres, which renderers convert at different DPIs;
    // state it in pixels so that the drawing is exactly width x height everywhere.
    static const QRegularExpression size(
        QStringLiteral("<svg([^>]*?) width=\"[^\"]*\" height=\"[^\"]*\""));
    QString text = QString::fromUtf8(withoutXmlForbidden(buffer.data()));
    text.replace(size,
                 QStringLiteral("<svg\\1 width=\"%1\" height=\"%2\"").arg(o.width).arg(o.height));
    out = text.toUtf8();
    return true;
}

bool renderPdf(QCustomPlot *plot, const ExportOptions &o, QByteArray &out, QString *error)
{
    // What QCustomPlot::savePdf does, into memory: one page of exactly width x height points at
    // 72 dpi (so one point is one device pixel), vectorized, no cosmetic pens.
    QBuffer buffer(&out);
    buffer.open(QIODevice::WriteOnly);
    QPdfWriter writer(&buffer);
    writer.setCreator(QStringLiteral("MemBudget"));
    writer.setTitle(o.title);
    writer.setResolution(72);
    writer.setPageLayout(QPageLayout(QPageSize(QSizeF(o.width, o.height),
                                               QPageSize::Point,
                                               QString(),
                                               QPageSize::ExactMatch),
                                     QPageLayout::Portrait,
                                     QMarginsF(0, 0, 0, 0)));
    QCPPainter painter;
    if (!painter.begin(&writer)) {
        if (error)
            *error = QObject::tr("cannot render the PDF");
        return false;
    }
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNoCaching);
    painter.setMode(QCPPainter::pmNonCosmetic);
    plot->toPainter(&painter, o.width, o.height);
    return painter.end();
}

bool renderPng(QCustomPlot *plot, const ExportOptions &o, QByteArray &out, QString *error)
{
    QImage image = plot->toPixmap(o.width, o.height, o.scale).toImage();
    if (image.isNull()) {
        if (error)
            *error = QObject::tr("not enough memory for a %1 x %2 image")
                         .arg(qRound(o.width * o.scale))
                         .arg(qRound(o.height * o.scale));
        return false;
    }
    // 96 dpi times the scale, as QCustomPlot::savePng states it.
    const int dotsPerMeter = qRound(96 * o.scale / 0.0254);
    image.setDotsPerMeterX(dotsPerMeter);
    image.setDotsPerMeterY(dotsPerMeter);
    QBuffer buffer(&out);
    buffer.open(QIODevice::WriteOnly);
    QImageWriter writer(&buffer, "png");
    if (!writer.write(image)) {
        if (error)
            *error = QObject::tr("cannot encode the PNG: %1").arg(writer.errorString());
        return false;
    }
    return true;
}

} // namespace

std::optional<ExportFormat> exportFormatForPath(const QString &path)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    if (suffix == QLatin1String("png"))
        return ExportFormat::Png;
    if (suffix == QLatin1String("svg"))
        return ExportFormat::Svg;
    if (suffix == QLatin1String("pdf"))
        return ExportFormat::Pdf;
    return std::nullopt;
}

void useExportPalette(QCustomPlot *plot)
{
    QPalette p = plot->palette();
    p.setColor(QPalette::Base, Qt::white);
    p.setColor(QPalette::Window, Qt::white);
    p.setColor(QPalette::Text, QColor(25, 25, 25));
    p.setColor(QPalette::WindowText, QColor(25, 25, 25));
    plot->setPalette(p);
}

QString escapeForSvg(const QString &text)
{
    QString allowed;
    allowed.reserve(text.size());
    for (const char32_t c : text.toUcs4())
        if (allowedInXml(c))
            allowed.append(QString::fromUcs4(&c, 1));
    return allowed.toHtmlEscaped(); // < > & "
}

QString exportSizeProblem(const ExportOptions &o, ExportFormat format)
{
    if (o.width < kMinExportSide || o.height < kMinExportSide || o.width > kMaxExportSide
        || o.height > kMaxExportSide)
        return QObject::tr("the size must be between %1 and %2 pixels, not %3 x %4")
            .arg(kMinExportSide)
            .arg(kMaxExportSide)
            .arg(o.width)
            .arg(o.height);
    if (!(o.scale >= kMinExportScale && o.scale <= kMaxExportScale))
        return QObject::tr("the scale must be between %1 and %2, not %3")
            .arg(kMinExportScale)
            .arg(kMaxExportScale)
            .arg(o.scale);
    const double scale = format == ExportFormat::Png ? o.scale : 1.0;
    const double pixels = static_cast<double>(o.width) * o.height * scale * scale;
    if (pixels > kMaxExportPixels)
        return QObject::tr("%1 x %2%3 is %4 pixels; an export has at most %5 (width x height x "
                           "scale squared): enough for an 8K screen or an A3 page at 300 dpi")
            .arg(o.width)
            .arg(o.height)
            .arg(format == ExportFormat::Png && o.scale != 1.0
                     ? QStringLiteral(" at scale %1").arg(o.scale)
                     : QString())
            .arg(QString::fromStdString(formatCount(pixels)))
            .arg(QString::fromStdString(formatCount(kMaxExportPixels)));
    return {};
}

bool exportPlot(QCustomPlot *plot, const QString &path, const ExportOptions &o, QString *error)
{
    return exportPlot(plot, nativePath(path), o, error);
}

bool exportPlot(QCustomPlot *plot, const std::string &path, const ExportOptions &o, QString *error)
{
    const QString shown = displayPath(path);
    const auto format = exportFormatForPath(shown);
    if (!format) {
        if (error)
            *error = QObject::tr("unknown export format '%1'; expected .png, .svg or .pdf")
                         .arg(QFileInfo(shown).suffix());
        return false;
    }
    if (const QString problem = exportSizeProblem(o, *format); !problem.isEmpty()) {
        if (error)
            *error = problem;
        return false;
    }
    QByteArray bytes;
    bool ok = false;
    QString problem;
    {
        TextRows rows(plot, o.title, o.caption, o.width);
        plot->replot(QCustomPlot::rpImmediateRefresh);
        switch (*format) {
        case ExportFormat::Png:
            ok = renderPng(plot, o, bytes, &problem);
            break;
        case ExportFormat::Svg:
            ok = renderSvg(plot, o, bytes, &problem);
            break;
        case ExportFormat::Pdf:
            ok = renderPdf(plot, o, bytes, &problem);
            break;
        }
    }
    if (ok)
        ok = writeFileSafely(path, bytes, problem);
    if (!ok && error)
        *error = problem;
    return ok;
}

QImage renderPlot(QCustomPlot *plot, const ExportOptions &o)
{
    TextRows rows(plot, o.title, o.caption, o.width);
    return plot->toPixmap(o.width, o.height, o.scale).toImage();
}

} // namespace membudget
