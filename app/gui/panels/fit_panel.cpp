// SPDX-License-Identifier: GPL-3.0-or-later
#include "panels/fit_panel.h"

#include "advice/gpu_verdict.h"
#include "base/time_format.h"
#include "charts/chart_theme.h"
#include "document/scenario_document.h"

#include <QComboBox>
#include <QEvent>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QStyledItemDelegate>
#include <QTimer>
#include <QTreeWidget>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <algorithm>
#include <optional>
#include <thread>

namespace membudget {

namespace {
enum Column { ColChanges, ColSpeed, ColPeak, ColHeadroom, ColApply };

// Time per token against the scenario as it is, from the modelled step times (core/throughput).
// Two lines, so that the column stays narrow and the changes keep the room.
QString speedText(const FitSuggestion &s)
{
    const QString rate = QString::fromStdString(formatRate(s.tokens_per_second));
    const double slowdown = s.slowdown;
    if (slowdown < 0.995)
        return QObject::tr("%1% faster\n%2 tok/s").arg(qRound((1.0 - slowdown) * 100)).arg(rate);
    if (slowdown <= 1.005)
        return QObject::tr("same speed\n%1 tok/s").arg(rate);
    if (slowdown >= 1.95)
        return QObject::tr("%1× slower\n%2 tok/s").arg(slowdown, 0, 'f', 1).arg(rate);
    return QObject::tr("%1% slower\n%2 tok/s").arg(qRound((slowdown - 1.0) * 100)).arg(rate);
}

// Below this width of the list, the Headroom column gives its room to the changes (the Per GPU
// cell's hover text says it).
constexpr int kHeadroomColumnMinListWidth = 600;
// Rows as tall as their changes are when wrapped to the column's width (QTreeView asks the delegate
// for a height without giving it the width, so wrapped text would be cut short).
class WrappingDelegate : public QStyledItemDelegate
{
public:
    WrappingDelegate(QTreeView *view)
        : QStyledItemDelegate(view)
        , m_view(view)
    {}

    QSize sizeHint(const QStyleOptionViewItem &option, const QModelIndex &index) const override
    {
        QSize size = QStyledItemDelegate::sizeHint(option, index);
        if (index.column() != ColChanges)
            return size;
        QStyleOptionViewItem opt = option;
        initStyleOption(&opt, index);
        const QStyle *style = m_view->style();
        const int margin = style->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, m_view) + 1;
        const int width = m_view->header()->sectionSize(ColChanges) - 2 * margin
                          - (index.parent().isValid() ? 0 : m_view->indentation() * 0);
        const QRect text
            = QFontMetrics(opt.font).boundingRect(QRect(0, 0, std::max(width, 20), 1 << 20),
                                                  Qt::TextWordWrap,
                                                  opt.text);
        size.setHeight(std::max(size.height(), text.height() + 4));
        return size;
    }

private:
    QTreeView *m_view;
};

} // namespace

FitPanel::FitPanel(ScenarioDocument *document, QWidget *parent)
    : QWidget(parent)
    , m_doc(document)
    , m_gpuCombo(new QComboBox)
    , m_message(new QLabel)
    , m_list(new QTreeWidget)
    , m_timer(new QTimer(this))
{
    m_gpuCombo->setObjectName(QStringLiteral("fitGpu"));
    m_gpuCombo->setToolTip(tr("The GPU to make the scenario fit"));
    m_list->setObjectName(QStringLiteral("fitList"));
    m_list->setRootIsDecorated(false);
    m_list->setAlternatingRowColors(true);
    m_list->setUniformRowHeights(false);
    m_list->setWordWrap(true); // a narrow panel or a large font wraps the changes, never cuts them
    m_list->setItemDelegate(new WrappingDelegate(m_list));
    m_list->installEventFilter(this); // its width decides whether Headroom is shown
    // Wrapped rows are as tall as their text at the column's width: measured again when it changes.
    connect(m_list->header(), &QHeaderView::sectionResized, this, [this](int column) {
        if (column == ColChanges)
            m_list->doItemsLayout();
    });
    m_list->setHeaderLabels({tr("Changes"), tr("Speed"), tr("Per GPU"), tr("Headroom"), QString()});
    m_list->headerItem()->setToolTip(ColSpeed,
                                     tr("Modelled on the GPU: how much slower or faster than the "
                                        "scenario as it is, and tokens per second"));
    m_list->header()->setStretchLastSection(false);
    m_list->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_list->header()->setSectionResizeMode(ColChanges, QHeaderView::Stretch);
    m_list->setToolTip(
        tr("Technique combinations that fit: first those that only trade speed, fastest first by "
           "the modelled time per token on this GPU; then those that change what is trained. "
           "Double-click or press Apply."));
    m_message->setWordWrap(true);
    m_message->setObjectName(QStringLiteral("fitMessage"));

    auto *top = new QHBoxLayout;
    auto *label = new QLabel(tr("Make it fit on:"));
    label->setBuddy(m_gpuCombo);
    top->addWidget(label);
    top->addWidget(m_gpuCombo, 1);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 4, 6, 6);
    layout->addLayout(top);
    layout->addWidget(m_message);
    layout->addWidget(m_list, 1);

    m_timer->setSingleShot(true);
    m_timer->setInterval(120);
    connect(m_timer, &QTimer::timeout, this, &FitPanel::recomputeInBackground);
    connect(m_doc, &ScenarioDocument::changed, this, &FitPanel::scheduleRecompute);
    connect(m_gpuCombo, &QComboBox::currentIndexChanged, this, &FitPanel::scheduleRecompute);
    connect(m_list, &QTreeWidget::itemActivated, this, [this](QTreeWidgetItem *item) {
        apply(item->data(ColChanges, Qt::UserRole).toInt());
    });
    recomputeInBackground();
}

bool FitPanel::eventFilter(QObject *watched, QEvent *event)
{
    if (watched == m_list && event->type() == QEvent::Resize)
        m_list->setColumnHidden(ColHeadroom, m_list->width() < kHeadroomColumnMinListWidth);
    return QWidget::eventFilter(watched, event);
}

void FitPanel::changeEvent(QEvent *event)
{
    QWidget::changeEvent(event);
    // A theme switch recolours the rows at once; a font change lays them out again.
    const QEvent::Type type = event->type();
    if (type == QEvent::PaletteChange || type == QEvent::ApplicationPaletteChange
        || type == QEvent::FontChange || type == QEvent::ApplicationFontChange)
        scheduleRecompute();
}

void FitPanel::setUnit(ByteUnit unit)
{
    m_unit = unit;
    recomputeInBackground();
}

void FitPanel::scheduleRecompute()
{
    dropSearch(); // what is on its way answers for the scenario before this change
    m_timer->start();
}

void FitPanel::dropSearch()
{
    ++m_generation;
    if (m_cancel)
        m_cancel->store(true); // stops its threads between two combinations
    m_cancel.reset();
}

bool FitPanel::busy() const
{
    return m_timer->isActive() || m_cancel != nullptr;
}

void FitPanel::updateGpuCombo()
{
    const QString previous = m_gpuCombo->currentData().toString();
    const QSignalBlocker block(m_gpuCombo);
    m_gpuCombo->clear();
    int firstOver = -1;
    int keep = -1;
    for (const GpuSpec &gpu : m_doc->selectedGpus()) {
        // "Fits" as the verdict says (gpu_verdict.h): a tight GPU gets suggestions. Fits is the
        // band's high end within the capacity, which needs no replay.
        const bool fits = m_doc->valid()
                          && memoryBand(m_doc->input(), m_doc->estimate()).high <= gpu.memory_bytes;
        const QString id = QString::fromStdString(gpu.id);
        m_gpuCombo->addItem(QStringLiteral("%1 (%2)%3")
                                .arg(QString::fromStdString(gpu.name),
                                     QString::fromStdString(
                                         formatCapacity(gpu.memory_bytes, m_unit)),
                                     fits ? tr(" — fits already") : QString()),
                            id);
        if (!fits && firstOver < 0)
            firstOver = m_gpuCombo->count() - 1;
        if (id == previous)
            keep = m_gpuCombo->count() - 1;
    }
    m_gpuCombo->setCurrentIndex(keep >= 0 ? keep : (firstOver >= 0 ? firstOver : 0));
}

bool FitPanel::prepare()
{
    m_timer->stop();
    dropSearch();
    updateGpuCombo();
    m_list->clear();
    m_suggestions.clear();
    const GpuSpec *gpu = m_doc->catalog().findGpu(
        m_gpuCombo->currentData().toString().toStdString());
    if (!m_doc->valid()) {
        m_message->setText(tr("Fix the scenario first: %1").arg(m_doc->error()));
        return false;
    }
    if (!gpu) {
        m_message->setText(tr("Select a GPU in the controls to get suggestions."));
        return false;
    }
    const MemoryEstimate &est = m_doc->estimate();
    const GpuVerdict verdict = gpuVerdict(m_doc->stepModel(), est, gpu->memory_bytes, m_unit);
    if (verdict.verdict == FitVerdict::Fits) {
        m_message->setText(
            tr("Fits on %1 as it is; suggestions appear when a scenario is tight or does not fit.")
                .arg(QString::fromStdString(gpu->name)));
        return false;
    }
    m_pendingGpu = *gpu;
    m_pendingVerdict = verdict;
    return true;
}

void FitPanel::recompute()
{
    if (prepare())
        showSuggestions(suggestFits(m_doc->input(), m_pendingGpu, 10));
}

// Every technique combination is checked (a few thousand, each possibly a replay of the step:
// up to a second or two for a large model on two cores), so after a change the search runs on a
// worker thread; the list says so meanwhile, and only the newest search's answer is shown.
void FitPanel::recomputeInBackground()
{
    // During a drag, the search waits for the estimate to settle (its replay): the document says
    // changed() then, which schedules this again.
    if (m_doc->isProvisional())
        return;
    if (!prepare())
        return;
    m_message->setText(tr("Looking for combinations that fit on %1…")
                           .arg(QString::fromStdString(m_pendingGpu.name)));
    const quint64 generation = m_generation;
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    auto *watcher = new QFutureWatcher<std::vector<FitSuggestion>>(this);
    connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher, generation] {
        watcher->deleteLater();
        if (generation != m_generation)
            return;
        m_cancel.reset();
        showSuggestions(watcher->result());
    });
    watcher->setFuture(
        QtConcurrent::run([input = m_doc->input(), gpu = m_pendingGpu, cancel = m_cancel] {
            // One hardware thread stays with the GUI thread.
            const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
            return suggestFits(input, gpu, 10, {cancel.get(), std::max(1u, cores - 1)});
        }));
}

void FitPanel::showSuggestions(std::vector<FitSuggestion> suggestions)
{
    const ChartColors colors = chartColors(palette());
    const GpuSpec *gpu = &m_pendingGpu;
    const GpuVerdict &verdict = m_pendingVerdict;
    const MemoryEstimate &est = m_doc->estimate();
    m_suggestions = std::move(suggestions);
    if (m_suggestions.empty()) {
        m_message->setText(
            tr("No combination of techniques makes this fit on %1; try more GPUs with sharding, "
               "or a larger GPU.")
                .arg(QString::fromStdString(gpu->name)));
        return;
    }
    const QString gpuName = QString::fromStdString(gpu->name);
    const QString reason = QString::fromStdString(verdict.reason);
    QString state;
    if (verdict.verdict == FitVerdict::Tight)
        state = tr("Tight on %1: %2.").arg(gpuName, reason);
    else if (est.device_total > gpu->memory_bytes)
        state = tr("Over by %1 on %2.")
                    .arg(QString::fromStdString(
                             formatBytes(est.device_total - gpu->memory_bytes, m_unit)),
                         gpuName);
    else
        state = tr("Does not fit on %1: %2.").arg(gpuName, reason);
    m_message->setText(state
                       + tr(" These fit and keep the effective batch; fastest first (modelled "
                            "time per token):"));
    // The rows are filled before they join the list, then added at once: with ResizeToContents
    // columns, every cell set on a row already in the list re-measures the whole list (a 15 ms
    // stall after each pause in a slider drag, when this runs). Those that change what is trained
    // come last, under a heading of their own.
    QList<QTreeWidgetItem *> items;
    QList<int> rows; // suggestion index per item, -1 for the heading
    bool headed = false;
    for (int i = 0; i < static_cast<int>(m_suggestions.size()); ++i) {
        const FitSuggestion &s = m_suggestions[static_cast<std::size_t>(i)];
        if (s.changesResult() && !headed) {
            auto *heading = new QTreeWidgetItem;
            heading->setText(ColChanges, tr("These change what is trained, not only how fast:"));
            heading->setFlags(Qt::ItemIsEnabled);
            heading->setFirstColumnSpanned(true);
            QFont bold = heading->font(ColChanges);
            bold.setBold(true);
            heading->setFont(ColChanges, bold);
            heading->setForeground(ColChanges, colors.warning);
            heading->setData(ColChanges, Qt::UserRole, -1);
            items << heading;
            rows << -1;
            headed = true;
        }
        auto *item = new QTreeWidgetItem;
        QStringList changes;
        for (const std::string &c : s.changes) {
            const bool result = std::find(s.result_changes.begin(), s.result_changes.end(), c)
                                != s.result_changes.end();
            changes << QString::fromStdString(c)
                           + (result ? tr(" ⚠ changes the result") : QString());
        }
        if (s.verdict == FitVerdict::Tight)
            changes << tr("⚠ tight: the run goes through, with little room left");
        if (s.cpu_offload_bytes > 0)
            changes << tr("needs %1 of CPU RAM for what is offloaded")
                           .arg(QString::fromStdString(formatBytes(s.cpu_offload_bytes, m_unit)));
        item->setText(ColChanges, changes.join(QLatin1Char('\n')));
        item->setToolTip(ColChanges, changes.join(QLatin1Char('\n')));
        item->setData(ColChanges, Qt::UserRole, i);
        if (s.changesResult())
            item->setForeground(ColChanges, colors.warning);
        item->setText(ColSpeed, speedText(s));
        item->setToolTip(ColSpeed,
                         tr("Modelled on %1: one optimizer step %2, %3 tokens/s; time per token "
                            "%4× the scenario's as it is")
                             .arg(QString::fromStdString(gpu->name),
                                  QString::fromStdString(formatDuration(s.step_seconds)),
                                  QString::fromStdString(formatRate(s.tokens_per_second)))
                             .arg(s.slowdown, 0, 'f', 2));
        item->setForeground(ColSpeed,
                            s.slowdown > 1.5 ? colors.danger
                                             : (s.slowdown > 1.1 ? colors.warning : colors.ok));
        item->setText(ColPeak, QString::fromStdString(formatBytes(s.device_total, m_unit)));
        item->setText(ColHeadroom, QString::fromStdString(formatBytes(s.headroom, m_unit)));
        item->setToolTip(ColPeak,
                         tr("%1 per GPU at the peak; %2 to spare on %3")
                             .arg(item->text(ColPeak),
                                  item->text(ColHeadroom),
                                  QString::fromStdString(gpu->name)));
        for (int c : {ColSpeed, ColPeak, ColHeadroom})
            item->setTextAlignment(c, Qt::AlignRight | Qt::AlignVCenter);
        items << item;
        rows << i;
    }
    m_list->addTopLevelItems(items);
    for (int k = 0; k < items.size(); ++k) {
        const int i = rows[k];
        if (i < 0)
            continue;
        auto *button = new QPushButton(tr("Apply"));
        button->setObjectName(QStringLiteral("applyFit%1").arg(i));
        button->setToolTip(tr("Apply these changes to the scenario (undoable)"));
        button->setAutoDefault(false);
        connect(button, &QPushButton::clicked, this, [this, i] { apply(i); });
        // Centred in its row, at its own height: a row of wrapped changes is tall.
        auto *cell = new QWidget;
        auto *cellLayout = new QVBoxLayout(cell);
        cellLayout->setContentsMargins(2, 0, 2, 0);
        cellLayout->addWidget(button, 0, Qt::AlignVCenter);
        m_list->setItemWidget(items[k], ColApply, cell);
    }
}

void FitPanel::apply(int index)
{
    if (index < 0 || index >= static_cast<int>(m_suggestions.size()))
        return;
    const FitSuggestion s = m_suggestions[static_cast<std::size_t>(index)];
    QStringList changes;
    for (const std::string &c : s.changes)
        changes << QString::fromStdString(c);
    m_doc->edit(tr("Make it fit: %1").arg(changes.join(QStringLiteral(", "))),
                [&](Scenario &scenario) {
                    scenario.training = s.input.training;
                    scenario.parallelism = s.input.parallelism;
                    scenario.overheads = s.input.overheads;
                });
}

} // namespace membudget
