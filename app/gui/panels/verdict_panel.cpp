// SPDX-License-Identifier: GPL-3.0-or-later
#include "panels/verdict_panel.h"

#include "advice/fit_solver.h"
#include "charts/chart_theme.h"
#include "document/scenario_document.h"
#include "panels/breakdown_table.h"
#include "panels/throughput_text.h"

#include <QAbstractTextDocumentLayout>
#include <QApplication>
#include <QHash>
#include <QHeaderView>
#include <QHelpEvent>
#include <QLocale>
#include <QPainter>
#include <QStaticText>
#include <QStyledItemDelegate>
#include <QTextEdit>
#include <QToolTip>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace membudget {

namespace {
enum Column {
    ColGpu,
    ColMemory,
    ColVerdict,
    ColRun,
    ColSpeed,
    ColMaxBatch,
    ColMaxSequence,
    ColCount
};

QString bytes(Bytes b, ByteUnit unit)
{
    return QString::fromStdString(formatBytes(b, unit));
}

// Draws cell texts from laid-out (and, where too wide, elided) text kept between paints
// (QStaticText). The table is repainted on every slider step, whole rows at a time, and shaping its
// texts again each time cost more than drawing the chart's bars.
class StaticTextDelegate : public QStyledItemDelegate
{
public:
    using QStyledItemDelegate::QStyledItemDelegate;

    void paint(QPainter *painter,
               const QStyleOptionViewItem &option,
               const QModelIndex &index) const override
    {
        QStyleOptionViewItem opt = option;
        initStyleOption(&opt, index);
        const QWidget *widget = opt.widget;
        const QStyle *style = widget ? widget->style() : QApplication::style();
        // Plain one-line text without icon or check box (the style would measure the text to
        // place it); the text area is the cell less the style's text margins.
        if (opt.text.isEmpty() || opt.text.contains(QLatin1Char('\n'))
            || opt.features.testFlag(QStyleOptionViewItem::WrapText)
            || opt.features.testFlag(QStyleOptionViewItem::HasDecoration)
            || opt.features.testFlag(QStyleOptionViewItem::HasCheckIndicator)) {
            QStyledItemDelegate::paint(painter, option, index);
            return;
        }
        const int margin = style->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, widget) + 1;
        const QRect textRect = opt.rect.adjusted(margin, 0, -margin, 0);
        const QStaticText &text = laidOut(opt.text, opt.font, textRect.width(), opt.textElideMode);
        const QSize size(static_cast<int>(text.size().width()),
                         static_cast<int>(std::ceil(text.size().height())));
        opt.text.clear();
        style->drawControl(QStyle::CE_ItemViewItem, &opt, painter, widget); // background, focus
        const QPalette::ColorGroup group = !opt.state.testFlag(QStyle::State_Enabled)
                                               ? QPalette::Disabled
                                           : opt.state.testFlag(QStyle::State_Active)
                                               ? QPalette::Normal
                                               : QPalette::Inactive;
        painter->save();
        painter->setPen(opt.palette.color(group,
                                          opt.state.testFlag(QStyle::State_Selected)
                                              ? QPalette::HighlightedText
                                              : QPalette::Text));
        painter->setFont(opt.font);
        painter->drawStaticText(
            QStyle::alignedRect(opt.direction, opt.displayAlignment, size, textRect).topLeft(),
            text);
        painter->restore();
    }

private:
    // `text` laid out in `font`, elided as the style would when wider than `width`.
    const QStaticText &laidOut(const QString &text,
                               const QFont &font,
                               int width,
                               Qt::TextElideMode elide) const
    {
        const QString key = font.key() + QLatin1Char('\x1f') + QString::number(width)
                            + QLatin1Char('\x1f') + text;
        auto it = m_cache.find(key);
        if (it == m_cache.end()) {
            if (m_cache.size() > 512) // values seen while dragging; start over now and then
                m_cache.clear();
            const QFontMetrics fm(font);
            QStaticText laid(fm.horizontalAdvance(text) > width ? fm.elidedText(text, elide, width)
                                                                : text);
            laid.setTextFormat(Qt::PlainText);
            laid.setPerformanceHint(QStaticText::AggressiveCaching);
            laid.prepare(QTransform(), font);
            it = m_cache.insert(key, laid);
        }
        return *it;
    }

    mutable QHash<QString, QStaticText> m_cache;
};
} // namespace

VerdictPanel::VerdictPanel(QWidget *parent)
    : QWidget(parent)
    , m_summary(new QTextEdit)
    , m_table(new QTreeWidget)
{
    // The summary is wrapped rich text that changes with every slider step. A word-wrapped
    // rich-text QLabel would lay it out five or six times per change (size hints, height for width,
    // paint) and have the main window's layout recomputed each time; this read-only text view lays
    // it out once, and its height, hence the layout, changes only with the number of lines.
    m_summary->setObjectName(QStringLiteral("verdictSummary"));
    m_summary->setReadOnly(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_summary->setFrameShape(QFrame::NoFrame);
    m_summary->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_summary->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_summary->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
    m_summary->viewport()->setAutoFillBackground(false); // the panel's background, like a label
    m_summary->document()->setDocumentMargin(0);
    connect(m_summary->document()->documentLayout(),
            &QAbstractTextDocumentLayout::documentSizeChanged,
            this,
            [this](const QSizeF &size) {
                const int height = static_cast<int>(std::ceil(size.height()));
                if (height != m_summary->height())
                    m_summary->setFixedHeight(height);
            });
    m_table->setObjectName(QStringLiteral("verdictTable"));
    m_table->setItemDelegate(new StaticTextDelegate(m_table));
    m_table->setRootIsDecorated(false);
    m_table->setAlternatingRowColors(true);
    m_table->setUniformRowHeights(true);
    m_table->setSelectionMode(QAbstractItemView::NoSelection);
    m_table->setHeaderLabels({tr("GPU"),
                              tr("Memory"),
                              tr("Verdict"),
                              tr("Run · cost"),
                              tr("Step · speed"),
                              tr("Max batch"),
                              tr("Max seq.")});
    m_table->headerItem()->setToolTip(ColSpeed,
                                      tr("Modelled time of one optimizer step and tokens per "
                                         "second of the whole job (hover a cell for details)"));
    m_table->headerItem()->setToolTip(ColRun,
                                      tr("With a dataset (Run & cost): the run's wall-clock time "
                                         "and what it costs at the GPU's price per GPU-hour"));
    m_table->headerItem()
        ->setToolTip(ColMaxBatch, tr("The largest micro-batch that fits at this sequence length"));
    m_table->headerItem()
        ->setToolTip(ColMaxSequence,
                     tr("The longest sequence that fits at this micro-batch size; * where the "
                        "model's context length, not the memory, is the limit"));
    // The last column takes what room is left; the others are fitted to their texts, so that the
    // verdict stays whole and a narrow panel scrolls instead of eliding it.
    m_table->header()->setStretchLastSection(true);
    // Not ResizeToContents: that measures every cell again on each change of any cell, several
    // times per slider step. update() fits the columns itself.
    m_table->header()->setSectionResizeMode(QHeaderView::Interactive);
    m_table->viewport()->installEventFilter(this);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 4, 6, 6);
    layout->addWidget(m_summary);
    layout->addWidget(m_table, 1);
}

bool VerdictPanel::eventFilter(QObject *watched, QEvent *event)
{
    if (watched == m_table->viewport() && event->type() == QEvent::ToolTip) {
        const auto *help = static_cast<QHelpEvent *>(event);
        const QModelIndex index = m_table->indexAt(help->pos());
        const auto row = static_cast<std::size_t>(index.row());
        if (index.isValid() && (index.column() == ColSpeed || index.column() == ColRun)
            && row < m_speeds.size() && row < m_gpus.size()) {
            QToolTip::showText(help->globalPos(),
                               speedToolTip(m_speeds[row], m_gpus[row], m_input),
                               m_table->viewport());
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

void VerdictPanel::changeEvent(QEvent *event)
{
    QWidget::changeEvent(event);
    // A theme switch recolours at once, not at the next edit; another font refits the columns.
    const QEvent::Type type = event->type();
    if ((type == QEvent::PaletteChange || type == QEvent::ApplicationPaletteChange
         || type == QEvent::FontChange || type == QEvent::ApplicationFontChange)
        && m_doc) {
        m_summaryHtml.clear();
        m_fittedLength.fill(0);
        m_table->clear(); // rows built again, in the new font
        update(*m_doc, m_unit);
    }
}

QString VerdictPanel::summaryText() const
{
    return m_summaryHtml;
}

void VerdictPanel::setSummary(const QString &html)
{
    if (html == m_summaryHtml)
        return;
    m_summaryHtml = html;
    m_summary->setHtml(html);
}

void VerdictPanel::update(const ScenarioDocument &doc, ByteUnit unit)
{
    m_doc = &doc;
    m_unit = unit;
    const ChartColors colors = chartColors(palette());
    if (!doc.valid()) {
        m_table->clear();
        setSummary(
            QStringLiteral("<span style='color:%1'><b>%2</b> %3</span>")
                .arg(colors.danger.name(), tr("Cannot estimate:"), doc.error().toHtmlEscaped()));
        return;
    }
    const MemoryEstimate &est = doc.estimate();
    QString summary = tr("<b>%1</b> per GPU at the peak (in the <b>%2</b> phase): %3 allocated by "
                         "PyTorch, %4 reserved.")
                          .arg(est.too_large ? tr("Too large") : bytes(est.device_total, unit),
                               QString::fromUtf8(phaseLabel(est.peak_phase)).toLower(),
                               bytes(est.peak_allocated, unit),
                               bytes(est.peak_reserved, unit));
    summary += QStringLiteral("<br>")
               + tr("%1 parameters, %2 trainable.")
                     .arg(QString::fromStdString(formatCount(static_cast<double>(est.parameters))),
                          QString::fromStdString(
                              formatCount(static_cast<double>(est.trainable_parameters))));
    if (est.cpu_offload_total > 0)
        summary += QStringLiteral("<br>")
                   + tr("CPU offload needs <b>%1</b> of CPU RAM (%2 per GPU).")
                         .arg(bytes(est.cpu_offload_total, unit),
                              bytes(est.cpu_offload_bytes, unit));
    const std::int64_t context = doc.input().arch.context_length;
    if (context > 0 && doc.input().training.sequence_length > context)
        summary += QStringLiteral("<br><span style='color:%1'>%2</span>")
                       .arg(colors.danger.name(),
                            tr("⚠ %1 tokens is beyond the model's context length of %2 "
                               "(max_position_embeddings).")
                                .arg(QLocale().toString(static_cast<qlonglong>(
                                         doc.input().training.sequence_length)),
                                     QLocale().toString(static_cast<qlonglong>(context))));
    const auto gpus = doc.selectedGpus();
    if (gpus.empty())
        summary += QStringLiteral("<br><i>") + tr("Select GPUs in the controls to compare against.")
                   + QStringLiteral("</i>");
    setSummary(summary);

    // The same GPUs as last time (every slider step): update the rows in place, so that only the
    // cells whose text changes are re-laid out and repainted. Otherwise build the rows afresh.
    bool sameRows = m_table->topLevelItemCount() == static_cast<int>(gpus.size());
    for (std::size_t i = 0; sameRows && i < gpus.size(); ++i)
        sameRows = m_table->topLevelItem(static_cast<int>(i))->data(ColGpu, Qt::UserRole).toString()
                   == QString::fromStdString(gpus[i].id);
    if (!sameRows) {
        m_table->clear();
        for (const GpuSpec &gpu : gpus) {
            auto *item = new QTreeWidgetItem(m_table);
            item->setText(ColGpu, shortGpuName(gpu));
            item->setToolTip(ColGpu, QString::fromStdString(gpu.name));
            item->setData(ColGpu, Qt::UserRole, QString::fromStdString(gpu.id));
            QFont f = item->font(ColVerdict);
            f.setBold(true);
            item->setFont(ColVerdict, f);
            for (int c = ColMemory; c < ColCount; ++c)
                if (c != ColVerdict)
                    item->setTextAlignment(c, Qt::AlignRight | Qt::AlignVCenter);
        }
    }

    const StepModel model(doc.input()); // built once for every GPU's solvers
    const EstimateInput &in = doc.input();
    m_gpus = gpus;
    m_input = in;
    m_speeds.resize(gpus.size());
    for (std::size_t i = 0; i < gpus.size(); ++i) {
        const GpuSpec &gpu = gpus[i];
        QTreeWidgetItem *item = m_table->topLevelItem(static_cast<int>(i));
        const bool fits = est.device_total <= gpu.memory_bytes;
        item->setText(ColMemory, QString::fromStdString(formatCapacity(gpu.memory_bytes, unit)));
        // Short, so that the columns fit a laptop's panel: the mark says fits or not, the words
        // how much room is left or missing; the whole sentence is the hover text.
        const Bytes margin = fits ? gpu.memory_bytes - est.device_total
                                  : est.device_total - gpu.memory_bytes;
        const QString verdict = fits ? tr("✓ %1 free").arg(bytes(margin, unit))
                                     : tr("✗ %1 over").arg(bytes(margin, unit));
        item->setText(ColVerdict, verdict);
        item->setToolTip(ColVerdict, verdictText(est, gpu, unit));
        item->setForeground(ColVerdict, fits ? colors.ok : colors.danger);
        const std::int64_t batch = maxMicroBatch(model, gpu.memory_bytes);
        const std::int64_t seq = maxSequenceLength(model, gpu.memory_bytes);
        item->setText(ColMaxBatch,
                      batch > 0 ? QLocale().toString(static_cast<qlonglong>(batch)) : tr("none"));
        // At the model's context length the memory is not what limits the sequence: marked.
        const bool atContext = context > 0 && seq == context;
        item->setText(ColMaxSequence,
                      seq > 0 ? QLocale().toString(static_cast<qlonglong>(seq))
                                    + (atContext ? QStringLiteral("*") : QString())
                              : tr("none"));
        item->setToolTip(ColMaxSequence,
                         atContext ? tr("* The model's context length (max_position_embeddings); "
                                        "more would fit in memory")
                                   : QString());
        // Speed and cost; their tooltips are made when asked for (eventFilter), not on every step.
        m_speeds[i] = gpuSpeed(doc.scenario(), in, gpu);
        item->setText(ColSpeed, speedCell(m_speeds[i], in));
        item->setText(ColRun, runCell(m_speeds[i]));
    }

    // Fit a column to its contents when the rows are new or a text is longer than those it was
    // fitted to (digits are as wide as each other); it does not shrink while a slider is dragged.
    for (int c : {ColGpu, ColMemory, ColVerdict, ColSpeed, ColRun, ColMaxBatch}) {
        qsizetype longest = 0;
        for (int r = 0; r < m_table->topLevelItemCount(); ++r)
            longest = std::max(longest, m_table->topLevelItem(r)->text(c).size());
        qsizetype &fitted = m_fittedLength[static_cast<std::size_t>(c)];
        if (!sameRows || longest > fitted) {
            m_table->resizeColumnToContents(c);
            fitted = longest;
        }
    }
}

} // namespace membudget
