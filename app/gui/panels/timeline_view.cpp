// SPDX-License-Identifier: GPL-3.0-or-later
#include "panels/timeline_view.h"

#include "charts/timeline_chart.h"
#include "document/file_writer.h"
#include "document/scenario_document.h"
#include "model/step_model.h"
#include "snapshot/estimate_comparison.h"
#include "snapshot/snapshot_file.h"
#include "snapshot/trace_alignment.h"
#include "widgets/steady_label.h"

#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

namespace membudget {

struct TimelineView::Loaded
{
    snapshot::MemorySnapshot snapshot;
    snapshot::SnapshotAnalysis analysis;
    snapshot::TracePhases phases;
    QString name;
    // Of the last update: the comparison with the document's estimate.
    std::optional<snapshot::EstimateComparison> comparison;
    std::vector<std::string> findings;
};

namespace {

std::shared_ptr<TimelineChartMeasured> measuredCurves(const snapshot::MeasuredTimeline &t)
{
    auto m = std::make_shared<TimelineChartMeasured>();
    m->allocated.reserve(t.allocated.size() + 1);
    m->allocated.push_back(t.allocated_at_start);
    m->allocated.insert(m->allocated.end(), t.allocated.begin(), t.allocated.end());
    m->reserved.reserve(t.reserved.size() + 1);
    m->reserved.push_back(t.reserved_at_start);
    m->reserved.insert(m->reserved.end(), t.reserved.begin(), t.reserved.end());
    return m;
}

} // namespace

TimelineView::TimelineView(ScenarioDocument *document, QWidget *parent)
    : QWidget(parent)
    , m_doc(document)
    , m_chart(new TimelineChart)
    , m_summary(new QLabel)
    , m_comparison(new QLabel)
    , m_open(new QPushButton(tr("Open Snapshot…")))
    , m_calibrate(new QPushButton(tr("Calibrate")))
    , m_close(new QPushButton(tr("Close Snapshot")))
{
    m_chart->setObjectName(QStringLiteral("timelineChart"));
    m_summary->setObjectName(QStringLiteral("timelineSummary"));
    m_summary->setTextFormat(Qt::PlainText);
    m_summary->setWordWrap(true);
    m_comparison->setObjectName(QStringLiteral("timelineComparison"));
    m_comparison->setTextFormat(Qt::PlainText);
    m_comparison->setWordWrap(true);
    m_comparison->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_open->setToolTip(tr("Read a PyTorch memory snapshot (torch.cuda.memory._dump_snapshot) and "
                          "draw what the run allocated over the estimated step"));
    m_calibrate->setObjectName(QStringLiteral("calibrateButton"));
    m_calibrate->setToolTip(tr("Take from the snapshot what the estimate cannot know (the run's "
                               "allocator settings, buffers kept beyond the modelled states, its "
                               "reserved-to-allocated ratio) into the scenario's overheads "
                               "(undoable). The CUDA context is not in a snapshot."));
    m_calibrate->setEnabled(false);
    m_close->setEnabled(false);
    connect(m_open, &QPushButton::clicked, this, &TimelineView::openSnapshotRequested);
    connect(m_calibrate, &QPushButton::clicked, this, &TimelineView::calibrate);
    connect(m_close, &QPushButton::clicked, this, &TimelineView::closeSnapshot);

    auto *buttons = new QHBoxLayout;
    buttons->addWidget(new SteadyLabel(m_summary), 1); // new text at every value
    buttons->addWidget(m_open);
    buttons->addWidget(m_calibrate);
    buttons->addWidget(m_close);
    auto *layout = new QVBoxLayout(this);
    layout->addLayout(buttons);
    layout->addWidget(m_chart, 1);
    layout->addWidget(m_comparison);
}

TimelineView::~TimelineView() = default;

void TimelineView::update(ByteUnit unit)
{
    m_unit = unit;
    if (!m_doc->valid()) {
        m_summary->setText(tr("Cannot estimate: %1").arg(m_doc->error()));
        m_chart->setContents(nullptr);
        if (m_snapshot)
            m_snapshot->comparison.reset();
        updateComparison();
        return;
    }
    const EstimateInput &in = m_doc->input();
    const StepModel &model = m_doc->stepModel();
    const MemoryEstimate &est = m_doc->estimate();
    auto contents = std::make_shared<TimelineChartContents>();
    contents->timeline = model.timeline();
    // During a slider drag the step model skips the allocator replay, and so does the series
    // (its reserved line returns when the value settles); a loaded snapshot's comparison needs it.
    contents->series = timelineSeries(model,
                                      in.training.micro_batch_size,
                                      in.training.sequence_length,
                                      m_snapshot ? ReservedSeries::Replay
                                                 : ReservedSeries::WhenReplayed);
    contents->peak_phase = est.peak_phase;
    contents->gpus = m_doc->selectedGpus();
    const Breakdown &atPeak = est.phase(est.peak_phase);
    contents->outside_allocator = atPeak[Component::CudaContext] + atPeak[Component::Communicator];
    m_summary->setText(
        tr("One step at micro-batch %1 × %2 tokens: %n allocations and frees, peak %3 allocated",
           "",
           static_cast<int>(contents->series.events.size()))
            .arg(in.training.micro_batch_size)
            .arg(in.training.sequence_length)
            .arg(QString::fromStdString(
                formatBytes(contents->series.allocated[contents->series.peak], unit))));
    m_chart->setUnit(unit);
    std::shared_ptr<TimelineChartMeasured> measured;
    if (m_snapshot) {
        Loaded &l = *m_snapshot;
        l.comparison = snapshot::compareWithEstimate(l.analysis, l.phases, contents->series, est);
        l.findings = snapshot::comparisonFindings(*l.comparison, est, unit);
        measured = measuredCurves(l.analysis.timeline);
        measured->alignment = snapshot::alignTrace(snapshot::AlignMethod::Phases,
                                                   l.phases,
                                                   l.analysis.timeline,
                                                   contents->series);
        measured->name = l.name;
    }
    m_chart->setContents(std::move(contents), std::move(measured));
    updateComparison();
}

bool TimelineView::openSnapshot(const std::string &nativePath, QString &error)
{
    LoadError problem;
    auto snap = snapshot::loadMemorySnapshotFile(nativePath, problem);
    if (!snap) {
        error = QString::fromStdString(problem.toString());
        return false;
    }
    auto loaded = std::make_unique<Loaded>();
    std::string why;
    if (!snapshot::analyzeSnapshot(*snap, -1, 10, loaded->analysis, why)) {
        error = displayPath(nativePath) + QStringLiteral(": ") + QString::fromStdString(why);
        return false;
    }
    if (!loaded->analysis.timeline.has_history) {
        error = tr("%1 holds no allocation history: record one with "
                   "torch.cuda.memory._record_memory_history() before the step")
                    .arg(displayPath(nativePath));
        return false;
    }
    loaded->phases = snapshot::traceStages(*snap, loaded->analysis.device);
    loaded->snapshot = std::move(*snap);
    loaded->name = QFileInfo(displayPath(nativePath)).fileName();
    m_snapshot = std::move(loaded);
    update(m_unit);
    return true;
}

void TimelineView::closeSnapshot()
{
    m_snapshot.reset();
    update(m_unit);
}

std::optional<snapshot::SnapshotCalibration> TimelineView::calibration() const
{
    if (!m_snapshot || !m_snapshot->comparison || !m_doc->valid())
        return std::nullopt;
    return snapshot::calibrateOverheads(m_doc->input(),
                                        m_snapshot->snapshot,
                                        *m_snapshot->comparison,
                                        m_unit);
}

bool TimelineView::calibrate()
{
    const auto cal = calibration();
    if (!cal || !cal->changesAnything())
        return false;
    const OverheadConfig overheads = cal->overheads;
    m_doc->edit(tr("Calibrate from %1").arg(m_snapshot->name),
                [overheads](Scenario &s) { s.overheads = overheads; });
    return true;
}

QString TimelineView::comparisonText() const
{
    return m_comparison->text();
}

void TimelineView::updateComparison()
{
    const bool loaded = m_snapshot && m_snapshot->comparison;
    m_close->setEnabled(m_snapshot != nullptr);
    if (!loaded) {
        m_calibrate->setEnabled(false);
        m_comparison->setText(
            m_snapshot ? QString()
                       : tr("Open a PyTorch memory snapshot (File › Open Snapshot…, or drop a "
                            ".pickle file here) to draw the measured run over this step. Turn "
                            "the mouse wheel over the plot to zoom into the step, drag to pan, "
                            "double-click for the whole step."));
        return;
    }
    QStringList lines;
    lines << tr("Measured: %1").arg(m_snapshot->name);
    for (const std::string &f : m_snapshot->findings)
        lines << QStringLiteral("• ") + QString::fromStdString(f);
    const auto cal = calibration();
    m_calibrate->setEnabled(cal && cal->changesAnything());
    if (cal) {
        QStringList taken;
        for (const snapshot::CalibrationItem &i : cal->items)
            if (i.taken)
                taken << QString::fromStdString("overheads." + i.key + " → " + i.after);
        lines << (taken.isEmpty() ? tr("Calibrate: nothing to take (the CUDA context is not in a "
                                       "snapshot; measure it with nvidia-smi).")
                                  : tr("Calibrate would set %1 (the CUDA context is not in a "
                                       "snapshot).")
                                        .arg(taken.join(QStringLiteral(", "))));
    }
    m_comparison->setText(lines.join(QLatin1Char('\n')));
}

} // namespace membudget
