// SPDX-License-Identifier: GPL-3.0-or-later
#include "charts/chart_export.h"

#include "charts/chart_theme.h"

#include <QBuffer>
#include <QFileInfo>
#include <QRegularExpression>
#include <QSaveFile>
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

bool exportSvg(QCustomPlot *plot, const QString &path, const ExportOptions &o, QString *error)
{
    QBuffer buffer;
    buffer.open(QIODevice::WriteOnly);
    QSvgGenerator generator;
    generator.setOutputDevice(&buffer);
    generator.setSize(QSize(o.width, o.height));
    generator.setViewBox(QRect(0, 0, o.width, o.height));
    generator.setResolution(96);
    generator.setTitle(o.title.isEmpty() ? QStringLiteral("MemBudget chart") : o.title);
    generator.setDescription(o.caption);
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
    QByteArray svg = buffer.data();
    static const QRegularExpression size(
        QStringLiteral("<svg([^>]*?) width=\"[^\"]*\" height=\"[^\"]*\""));
    QString text = QString::fromUtf8(svg);
    text.replace(size,
                 QStringLiteral("<svg\\1 width=\"%1\" height=\"%2\"").arg(o.width).arg(o.height));
    svg = text.toUtf8();

    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(svg) != svg.size() || !file.commit()) {
        if (error)
            *error = QObject::tr("cannot write %1: %2").arg(path, file.errorString());
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

bool exportPlot(QCustomPlot *plot, const QString &path, const ExportOptions &o, QString *error)
{
    const auto format = exportFormatForPath(path);
    if (!format) {
        if (error)
            *error = QObject::tr("unknown export format '%1'; expected .png, .svg or .pdf")
                         .arg(QFileInfo(path).suffix());
        return false;
    }
    if (o.width < 16 || o.height < 16 || o.width > 20000 || o.height > 20000 || !(o.scale > 0)
        || o.scale > 16) {
        if (error)
            *error = QObject::tr(
                "the size must be between 16 and 20000 pixels and the scale between 0 and 16");
        return false;
    }
    bool ok = false;
    {
        TextRows rows(plot, o.title, o.caption, o.width);
        plot->replot(QCustomPlot::rpImmediateRefresh);
        switch (*format) {
        case ExportFormat::Png:
            ok = plot->savePng(path, o.width, o.height, o.scale);
            break;
        case ExportFormat::Svg:
            ok = exportSvg(plot, path, o, error);
            break;
        case ExportFormat::Pdf:
            ok = plot->savePdf(path,
                               o.width,
                               o.height,
                               QCP::epNoCosmetic,
                               QStringLiteral("MemBudget"),
                               o.title);
            break;
        }
    }
    if (!ok && error && error->isEmpty())
        *error = QObject::tr("cannot write %1").arg(path);
    return ok;
}

QImage renderPlot(QCustomPlot *plot, const ExportOptions &o)
{
    TextRows rows(plot, o.title, o.caption, o.width);
    return plot->toPixmap(o.width, o.height, o.scale).toImage();
}

} // namespace membudget
