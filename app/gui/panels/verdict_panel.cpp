// SPDX-License-Identifier: GPL-3.0-or-later
#include "panels/verdict_panel.h"

#include "advice/fit_solver.h"
#include "advice/gpu_verdict.h"
#include "charts/chart_theme.h"
#include "document/scenario_document.h"
#include "model/pipeline_parallel.h"
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

// The verdict's mark and word, and how much room is left or missing at the expected figure.
QString verdictCell(const GpuVerdict &v, Bytes deviceTotal, ByteUnit unit)
{
    const bool under = deviceTotal <= v.capacity;
    const QString margin
        = under ? VerdictPanel::tr("%1 free").arg(bytes(v.capacity - deviceTotal, unit))
                : VerdictPanel::tr("%1 over").arg(bytes(deviceTotal - v.capacity, unit));
    switch (v.verdict) {
    case FitVerdict::Fits:
        return VerdictPanel::tr("✓ fits · %1").arg(margin);
    case FitVerdict::Tight:
        return VerdictPanel::tr("⚠ tight · %1").arg(margin);
    case FitVerdict::DoesNotFit:
        break;
    }
    // Out of memory with the expected total below capacity: fragmentation, said in the reason.
    return under ? VerdictPanel::tr("✗ does not fit")
                 : VerdictPanel::tr("✗ does not fit · %1").arg(margin);
}

QColor verdictColor(FitVerdict v, const ChartColors &colors)
{
    switch (v) {
    case FitVerdict::Fits:
        return colors.ok;
    case FitVerdict::Tight:
        return colors.warning;
    case FitVerdict::DoesNotFit:
        break;
    }
    return colors.danger;
}

// The band as one line: "expected 76.1 GiB, 73.9 to 78.0 GiB".
QString bandText(const MemoryBand &band, ByteUnit unit)
{
    return VerdictPanel::tr("On the device: %1 expected, %2 to %3")
        .arg(bytes(band.expected, unit), bytes(band.low, unit), bytes(band.high, unit));
}

QString verdictToolTip(const GpuVerdict &v, const GpuSpec &gpu, ByteUnit unit)
{
    QString html = QStringLiteral("<b>%1: %2</b>")
                       .arg(QString::fromStdString(gpu.name).toHtmlEscaped(),
                            QString::fromUtf8(verdictLabel(v.verdict)));
    html += QStringLiteral("<br>") + bandText(v.band, unit).toHtmlEscaped() + QStringLiteral(" (")
            + VerdictPanel::tr("capacity %1").arg(bytes(v.capacity, unit)) + QStringLiteral(")");
    html += QStringLiteral("<br><i>")
            + VerdictPanel::tr("Low: no fragmentation, a lazily loaded CUDA context. High: the "
                               "modelled allocator with an eagerly loaded context and large NCCL "
                               "buffers.")
            + QStringLiteral("</i>");
    if (!v.reason.empty())
        html += QStringLiteral("<br>") + QString::fromStdString(v.reason).toHtmlEscaped();
    return html;
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

namespace {
void fitHeight(QTextEdit *text)
{
    const int height = static_cast<int>(std::ceil(text->document()->size().height()));
    if (height != text->maximumHeight()) // the height last fixed
        text->setFixedHeight(height);
}

// A read-only text view as tall as its text, on the panel's background (the summary, the reason).
void configureTextLine(QTextEdit *text)
{
    text->setReadOnly(true);
    text->setTextInteractionFlags(Qt::TextSelectableByMouse);
    text->setFrameShape(QFrame::NoFrame);
    text->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    text->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    text->setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
    text->viewport()->setAutoFillBackground(false); // the panel's background, like a label
    text->document()->setDocumentMargin(0);
    QObject::connect(text->document()->documentLayout(),
                     &QAbstractTextDocumentLayout::documentSizeChanged,
                     text,
                     [text] {
                         // setHtml clears the document first: a height for that moment only
                         // would lay the window out twice for nothing (setHtmlFitted fits after).
                         if (!text->document()->isEmpty())
                             fitHeight(text);
                     });
}

// New text, then the height it needs: the layout reports a size only when it differs from the
// last one reported, which during setHtml was the empty document's.
void setHtmlFitted(QTextEdit *text, const QString &html)
{
    text->setHtml(html);
    fitHeight(text);
}
} // namespace

VerdictPanel::VerdictPanel(QWidget *parent)
    : QWidget(parent)
    , m_summary(new QTextEdit)
    , m_table(new QTreeWidget)
    , m_reason(new QTextEdit)
    , m_limitsWorker(new FitLimitsWorker(this))
{
    // The summary is wrapped rich text that changes with every slider step. A word-wrapped
    // rich-text QLabel would lay it out five or six times per change (size hints, height for width,
    // paint) and have the main window's layout recomputed each time; this read-only text view lays
    // it out once, and its height, hence the layout, changes only with the number of lines.
    m_summary->setObjectName(QStringLiteral("verdictSummary"));
    configureTextLine(m_summary);
    m_reason->setObjectName(QStringLiteral("verdictReason"));
    configureTextLine(m_reason);
    m_reason->setVisible(false);
    connect(m_limitsWorker, &FitLimitsWorker::finished, this, &VerdictPanel::onExactLimits);
    connect(m_limitsWorker, &FitLimitsWorker::verdictsReady, this, &VerdictPanel::onExactVerdicts);
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
    layout->addWidget(m_reason);
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
        m_reasonHtml.clear();
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
    setHtmlFitted(m_summary, html);
}

QString VerdictPanel::stagePeaksLine(const ScenarioDocument &doc, ByteUnit unit)
{
    // Not for hundreds of stages.
    constexpr std::size_t kMaxListedStages = 64;
    if (doc.stagePeaks().size() > kMaxListedStages)
        return {};
    QStringList peaks;
    for (const PipelineStagePeak &p : doc.stagePeaks())
        peaks << tr("%1: %2").arg(p.stage + 1).arg(bytes(p.peak_allocated, unit));
    return peaks.isEmpty() ? QString()
                           : QStringLiteral("<br>")
                                 + tr("Allocated peak by stage: %1.").arg(peaks.join(tr(", ")));
}

void VerdictPanel::update(const ScenarioDocument &doc, ByteUnit unit)
{
    m_doc = &doc;
    m_unit = unit;
    const ChartColors colors = chartColors(palette());
    if (!doc.valid()) {
        m_table->clear();
        m_verdicts.clear();
        m_exactVerdicts.clear();
        m_limitsScenario.reset();
        showReason(unit);
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
    if (const std::string stage = pipelineStageSummary(doc.input().parallelism, est.derivation);
        !stage.empty())
        summary += QStringLiteral("<br>")
                   + tr("Per GPU: the pipeline's %1, the stage that allocates the most.")
                         .arg(QString::fromStdString(stage).toHtmlEscaped())
                   + stagePeaksLine(doc, unit);
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

    const StepModel &model = doc.stepModel(); // the estimate's, reference replay done
    const EstimateInput &in = doc.input();
    m_gpus = gpus;
    m_input = in;
    m_speeds.resize(gpus.size());
    for (std::size_t i = 0; i < gpus.size(); ++i) {
        const GpuSpec &gpu = gpus[i];
        QTreeWidgetItem *item = m_table->topLevelItem(static_cast<int>(i));
        item->setText(ColMemory, QString::fromStdString(formatCapacity(gpu.memory_bytes, unit)));
        item->setToolTip(ColMemory, QString::fromStdString(capacityNote(gpu, unit)));
        // Speed and cost; their tooltips are made when asked for (eventFilter), not on every step.
        m_speeds[i] = gpuSpeed(doc.scenario(), in, gpu);
        item->setText(ColSpeed, speedCell(m_speeds[i], in));
        item->setText(ColRun, runCell(m_speeds[i]));
    }
    updateReplays(doc, model);
    showVerdicts();

    fitColumns(sameRows);
}

void VerdictPanel::fitColumns(bool sameRows)
{
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

void VerdictPanel::showReason(ByteUnit unit)
{
    // Why the first GPU that is tight or does not fit is so, under the table (the others' reasons
    // are their verdicts' hover texts).
    const ChartColors colors = chartColors(palette());
    QString html;
    int others = 0;
    for (std::size_t i = 0; i < m_verdicts.size(); ++i) {
        const GpuVerdict &v = m_verdicts[i];
        if (v.verdict == FitVerdict::Fits || v.reason.empty())
            continue;
        if (!html.isEmpty()) {
            ++others;
            continue;
        }
        html = QStringLiteral("<span style='color:%1'><b>%2 %3 %4:</b></span> %5. %6")
                   .arg(verdictColor(v.verdict, colors).name(),
                        v.verdict == FitVerdict::Tight ? QStringLiteral("⚠") : QStringLiteral("✗"),
                        shortGpuName(m_gpus[i]).toHtmlEscaped(),
                        QString::fromUtf8(verdictLabel(v.verdict)),
                        QString::fromStdString(v.reason).toHtmlEscaped(),
                        bandText(v.band, unit).toHtmlEscaped() + QLatin1Char('.'));
    }
    if (others > 0)
        html += QStringLiteral(" <i>%1</i>")
                    .arg(tr("Hover the verdicts of %n other GPU(s) for theirs.", nullptr, others));
    if (html == m_reasonHtml)
        return;
    m_reasonHtml = html;
    setHtmlFitted(m_reason, html);
    m_reason->setVisible(!html.isEmpty());
}

void VerdictPanel::updateReplays(const ScenarioDocument &doc, const StepModel &model)
{
    std::vector<Bytes> capacities;
    std::vector<FitLimitQuery> queries;
    for (const GpuSpec &gpu : m_gpus) {
        capacities.push_back(gpu.memory_bytes);
        queries.push_back({FitLimitQuery::Kind::MicroBatch, gpu.memory_bytes, 1 << 20});
        queries.push_back({FitLimitQuery::Kind::SequenceLength, gpu.memory_bytes, 1 << 24});
    }
    // Asked again only when the scenario or the GPUs changed (not on a recolour).
    // A drag's provisional estimate settling asks again too: the band the verdicts carry changes.
    if (!(m_limitsScenario && *m_limitsScenario == doc.scenario() && m_limitsQueries == queries
          && m_limitsUnit == m_unit // the reasons' sizes are in the unit
          && m_limitsProvisional == doc.isProvisional())) {
        m_limitsScenario = doc.scenario();
        m_limitsProvisional = doc.isProvisional();
        m_limitsUnit = m_unit;
        m_limitsQueries = queries;
        m_exactLimits.clear();
        m_exactVerdicts.clear();
        m_estimatedLimits = estimatedFitLimits(model, queries);
        // What the band says until the replays answer: exact where a capacity lies above the
        // band (fits); a reason only with the replay.
        m_provisionalVerdicts.clear();
        const MemoryBand band = memoryBand(doc.input(), doc.estimate());
        for (Bytes capacity : capacities) {
            GpuVerdict v;
            v.capacity = capacity;
            v.band = band;
            v.verdict = provisionalVerdict(band, capacity);
            v.fits = v.verdict != FitVerdict::DoesNotFit;
            m_provisionalVerdicts.push_back(v);
        }
        // During a drag each value is gone before its replays could answer, and they would take
        // a core from the drag: the settled estimate asks.
        m_limitsGeneration
            = doc.isProvisional()
                  ? 0 // no answer matches: a late one of an earlier value is dropped
                  : m_limitsWorker->request(doc.sharedStepModel(), capacities, queries, m_unit);
    }
    showLimits();
}

void VerdictPanel::onExactVerdicts(quint64 generation, const std::vector<GpuVerdict> &verdicts)
{
    if (generation != m_limitsGeneration || verdicts.size() != m_gpus.size())
        return;
    m_exactVerdicts = verdicts;
    showVerdicts();
    fitColumns(true);
    Q_EMIT verdictsSettled();
}

void VerdictPanel::showVerdicts()
{
    const bool exact = !m_exactVerdicts.empty();
    m_verdicts = exact ? m_exactVerdicts : m_provisionalVerdicts;
    const ChartColors colors = chartColors(palette());
    const Bytes total = m_doc && m_doc->valid() ? m_doc->estimate().device_total : 0;
    for (int i = 0;
         i < m_table->topLevelItemCount() && static_cast<std::size_t>(i) < m_verdicts.size();
         ++i) {
        const GpuVerdict &v = m_verdicts[static_cast<std::size_t>(i)];
        QTreeWidgetItem *item = m_table->topLevelItem(i);
        // Short, so that the columns fit a laptop's panel: the mark and word say fits, tight or
        // not, then how much room is left or missing; the band and the reason are the hover text.
        item->setText(ColVerdict, verdictCell(v, total, m_unit));
        QString tip = verdictToolTip(v, m_gpus[static_cast<std::size_t>(i)], m_unit);
        if (!exact && v.verdict != FitVerdict::Fits)
            tip += QStringLiteral("<br><i>%1</i>")
                       .arg(tr("From the band alone; the replay of the step that settles it is on "
                               "its way."));
        item->setToolTip(ColVerdict, tip);
        item->setForeground(ColVerdict, verdictColor(v.verdict, colors));
    }
    showReason(m_unit);
}

void VerdictPanel::onExactLimits(quint64 generation, const std::vector<std::int64_t> &limits)
{
    if (generation != m_limitsGeneration || limits.size() != m_limitsQueries.size())
        return; // an answer for other rows
    m_exactLimits = limits;
    showLimits();
    fitColumns(true);
}

void VerdictPanel::showLimits()
{
    const bool exact = !m_exactLimits.empty();
    const std::vector<std::int64_t> &limits = exact ? m_exactLimits : m_estimatedLimits;
    const std::int64_t context = m_input.arch.context_length;
    const QString prefix = exact ? QString() : QStringLiteral("≈ ");
    const QString pending = exact ? QString()
                                  : tr("≈ From the estimate alone; the exact value (the step "
                                       "replayed through the allocator model) is on its way");
    const int rows = m_table->topLevelItemCount();
    for (int i = 0; i < rows && 2 * static_cast<std::size_t>(i) + 1 < limits.size(); ++i) {
        QTreeWidgetItem *item = m_table->topLevelItem(i);
        const std::int64_t batch = limits[2 * static_cast<std::size_t>(i)];
        const std::int64_t seq = limits[2 * static_cast<std::size_t>(i) + 1];
        item->setText(ColMaxBatch,
                      prefix
                          + (batch > 0 ? QLocale().toString(static_cast<qlonglong>(batch))
                                       : tr("none")));
        item->setToolTip(ColMaxBatch, pending);
        // At the model's context length the memory is not what limits the sequence: marked.
        const bool atContext = context > 0 && seq == context;
        item->setText(ColMaxSequence,
                      prefix
                          + (seq > 0 ? QLocale().toString(static_cast<qlonglong>(seq))
                                           + (atContext ? QStringLiteral("*") : QString())
                                     : tr("none")));
        QStringList tips;
        if (atContext)
            tips << tr("* The model's context length (max_position_embeddings); more would fit "
                       "in memory");
        if (!exact)
            tips << pending;
        item->setToolTip(ColMaxSequence, tips.join(QLatin1Char('\n')));
    }
}

} // namespace membudget
