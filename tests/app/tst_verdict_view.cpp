// SPDX-License-Identifier: GPL-3.0-or-later
// Issue #11 in the app: the three-way verdict in colour and words with its reason, the band as a
// whisker on each bar, and the exact Max batch / Max seq. worked out off the GUI thread without a
// stale answer ever overwriting a newer one.
#include "advice/fit_solver.h"
#include "advice/gpu_verdict.h"
#include "charts/budget_chart.h"
#include "charts/chart_theme.h"
#include "document/scenario_document.h"
#include "model/pipeline_parallel.h"
#include "model/step_model.h"
#include "panels/verdict_panel.h"
#include "workers/fit_limits_worker.h"

#include <QTest>
#include <QTextEdit>
#include <QTreeWidget>
#include <cmath>

using namespace membudget;

namespace {
enum Column { ColGpu, ColMemory, ColVerdict, ColRun, ColSpeed, ColMaxBatch, ColMaxSequence };

// The bundled long-context LoRA: tight on the 80 GB cards, fits an H200.
void openTightScenario(ScenarioDocument &doc)
{
    doc.reset(doc.catalog().findScenario("lora-qwen2.5-7b-32k")->scenario);
    QVERIFY(doc.valid());
}
} // namespace

class TestVerdictView : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void threeStatesInColourAndWords();
    void reasonUnderTheTable();
    void textsAreAsTallAsTheirText();
    void exactLimitsReplaceTheEstimate();
    void staleAnswersAreDropped();
    void chartDrawsTheBand();
    void pipelineStagesListed();
};

void TestVerdictView::threeStatesInColourAndWords()
{
    ScenarioDocument doc(PresetCatalog::bundled());
    openTightScenario(doc);
    doc.edit(QStringLiteral("gpus"), [](Scenario &s) {
        s.gpus = {"a100-80gb", "h200", "rtx-4090"};
    });
    VerdictPanel panel;
    panel.update(doc, ByteUnit::GiB);
    // At once, what the band says (the A100's band straddles its capacity: not settled yet).
    QVERIFY(!panel.verdictsExact());
    QCOMPARE(panel.verdicts().size(), std::size_t(3));
    QCOMPARE(panel.verdicts()[1].verdict, FitVerdict::Fits); // above the band: exact already
    panel.limitsWorker()->waitForNewest();
    QVERIFY(panel.verdictsExact());
    const ChartColors colors = chartColors(panel.palette());
    QTreeWidget *table = panel.table();
    QCOMPARE(table->topLevelItemCount(), 3);
    const StepModel model(doc.input());
    const auto gpus = doc.selectedGpus();
    const std::vector<FitVerdict> expected = {FitVerdict::Tight,
                                              FitVerdict::Fits,
                                              FitVerdict::DoesNotFit};
    const QStringList words = {QStringLiteral("⚠ tight"),
                               QStringLiteral("✓ fits"),
                               QStringLiteral("✗ does not fit")};
    const std::vector<QColor> colours = {colors.warning, colors.ok, colors.danger};
    for (int r = 0; r < 3; ++r) {
        const auto i = static_cast<std::size_t>(r);
        QCOMPARE(gpuVerdict(model, doc.estimate(), gpus[i].memory_bytes).verdict, expected[i]);
        QCOMPARE(panel.verdicts()[i].verdict, expected[i]);
        const QTreeWidgetItem *item = table->topLevelItem(r);
        QVERIFY2(item->text(ColVerdict).startsWith(words[r]), qPrintable(item->text(ColVerdict)));
        QCOMPARE(item->foreground(ColVerdict).color(), colours[i]);
        // The band in the hover text, with the reason where there is one.
        const QString tip = item->toolTip(ColVerdict);
        const MemoryBand band = panel.verdicts()[i].band;
        QVERIFY(band.low < band.expected && band.expected < band.high);
        QVERIFY2(tip.contains(QString::fromStdString(formatBytes(band.high, ByteUnit::GiB))),
                 qPrintable(tip));
        if (expected[i] != FitVerdict::Fits)
            QVERIFY(tip.contains(
                QString::fromStdString(panel.verdicts()[i].reason).toHtmlEscaped().left(30)));
    }
}

void TestVerdictView::reasonUnderTheTable()
{
    ScenarioDocument doc(PresetCatalog::bundled());
    openTightScenario(doc);
    VerdictPanel panel;
    panel.update(doc, ByteUnit::GiB);
    panel.limitsWorker()->waitForNewest();
    // a100-80gb and h100-80gb are tight: the first one's reason, the other one named by count.
    const QString reason = panel.reasonText();
    QVERIFY2(reason.contains(QStringLiteral("A100")), qPrintable(reason));
    QVERIFY(reason.contains(QStringLiteral("tight")));
    QVERIFY(reason.contains(QStringLiteral("expandable_segments")));
    QVERIFY(reason.contains(QStringLiteral("1 other GPU")));
    QVERIFY(panel.findChild<QWidget *>(QStringLiteral("verdictReason"))->isVisibleTo(&panel));
    QVERIFY2(reason.contains(QStringLiteral("iB")), qPrintable(reason));
    // In decimal units the replayed reason's sizes are decimal too, not only the band's.
    panel.update(doc, ByteUnit::GB);
    panel.limitsWorker()->waitForNewest();
    QVERIFY2(!panel.reasonText().contains(QStringLiteral("iB")), qPrintable(panel.reasonText()));
    QVERIFY2(panel.reasonText().contains(QStringLiteral(" GB")), qPrintable(panel.reasonText()));
    // Where everything fits, no line.
    doc.edit(QStringLiteral("gpus"), [](Scenario &s) { s.gpus = {"h200"}; });
    panel.update(doc, ByteUnit::GiB);
    panel.limitsWorker()->waitForNewest();
    QVERIFY(panel.reasonText().isEmpty());
    QVERIFY(!panel.findChild<QWidget *>(QStringLiteral("verdictReason"))->isVisibleTo(&panel));
}

// The summary above the table is as tall as its text, also when a longer text is followed by a
// shorter one (the text layout reports a new size only against the empty document of setHtml).
void TestVerdictView::textsAreAsTallAsTheirText()
{
    ScenarioDocument doc(PresetCatalog::bundled());
    openTightScenario(doc);
    VerdictPanel panel;
    panel.resize(420, 600);
    panel.show();
    QVERIFY(QTest::qWaitForWindowExposed(&panel));
    panel.update(doc, ByteUnit::GiB);
    panel.limitsWorker()->waitForNewest();
    auto *summary = panel.findChild<QTextEdit *>(QStringLiteral("verdictSummary"));
    QVERIFY(summary);
    const auto textHeight = [summary] {
        return static_cast<int>(std::ceil(summary->document()->size().height()));
    };
    QTRY_COMPARE(summary->height(), textHeight());
    const int several = summary->height();
    QVERIFY(several > summary->fontMetrics().height() * 3 / 2); // more than one line
    doc.edit(QStringLiteral("model"), [](Scenario &s) { s.model.preset = "no-such-model"; });
    QVERIFY(!doc.valid());
    panel.update(doc, ByteUnit::GiB);
    QTRY_COMPARE(summary->height(), textHeight());
    QVERIFY(summary->height() < several);
}

void TestVerdictView::exactLimitsReplaceTheEstimate()
{
    ScenarioDocument doc(PresetCatalog::bundled());
    openTightScenario(doc);
    VerdictPanel panel;
    panel.update(doc, ByteUnit::GiB);
    // At once: the estimate's answer, marked; the exact one cannot have been delivered yet (it
    // comes through the event loop).
    QVERIFY(!panel.limitsExact());
    for (int r = 0; r < panel.table()->topLevelItemCount(); ++r)
        QVERIFY(panel.table()->topLevelItem(r)->text(ColMaxBatch).startsWith(QStringLiteral("≈")));
    panel.limitsWorker()->waitForNewest();
    QVERIFY(panel.limitsExact());
    const StepModel model(doc.input());
    const auto gpus = doc.selectedGpus();
    for (int r = 0; r < panel.table()->topLevelItemCount(); ++r) {
        const Bytes capacity = gpus[static_cast<std::size_t>(r)].memory_bytes;
        const std::int64_t batch = maxMicroBatch(model, capacity);
        const std::int64_t seq = maxSequenceLength(model, capacity);
        const QTreeWidgetItem *item = panel.table()->topLevelItem(r);
        QCOMPARE(item->text(ColMaxBatch),
                 batch > 0 ? QLocale().toString(static_cast<qlonglong>(batch))
                           : QStringLiteral("none"));
        QVERIFY2(item->text(ColMaxSequence)
                     .startsWith(seq > 0 ? QLocale().toString(static_cast<qlonglong>(seq))
                                         : QStringLiteral("none")),
                 qPrintable(item->text(ColMaxSequence)));
    }
    // A recolour keeps the exact values (nothing asked again).
    const quint64 generation = panel.limitsWorker()->generation();
    panel.update(doc, ByteUnit::GiB);
    QCOMPARE(panel.limitsWorker()->generation(), generation);
    QVERIFY(panel.limitsExact());
}

void TestVerdictView::staleAnswersAreDropped()
{
    ScenarioDocument doc(PresetCatalog::bundled());
    openTightScenario(doc);
    const EstimateInput first = doc.input();
    doc.edit(QStringLiteral("shorter"), [](Scenario &s) { s.training.sequence_length = 4096; });
    const EstimateInput second = doc.input();
    const std::vector<FitLimitQuery> queries
        = {{FitLimitQuery::Kind::MicroBatch, 80LL << 30, 1 << 20},
           {FitLimitQuery::Kind::SequenceLength, 80LL << 30, 1 << 24}};
    FitLimitsWorker worker;
    std::vector<std::pair<quint64, std::vector<std::int64_t>>> delivered;
    connect(&worker,
            &FitLimitsWorker::finished,
            this,
            [&](quint64 generation, const std::vector<std::int64_t> &limits) {
                delivered.emplace_back(generation, limits);
            });
    // The first runs, the second waits, the third replaces the second: only the third's answer
    // is delivered, and it is the third input's.
    const quint64 a = worker.request(first, {80LL << 30}, queries);
    const quint64 b = worker.request(first, {80LL << 30}, queries);
    const quint64 c = worker.request(second, {80LL << 30}, queries);
    QVERIFY(a < b && b < c);
    QVERIFY(worker.busy());
    worker.waitForNewest();
    QTRY_VERIFY(!worker.busy());
    QCOMPARE(delivered.size(), std::size_t(1));
    QCOMPARE(delivered.front().first, c);
    const std::vector<std::int64_t> limits = delivered.front().second;
    QCOMPARE(limits, exactFitLimits(second, queries));
    QVERIFY(limits != exactFitLimits(first, queries));
}

void TestVerdictView::chartDrawsTheBand()
{
    ScenarioDocument doc(PresetCatalog::bundled());
    openTightScenario(doc);
    doc.edit(QStringLiteral("gpus"), [](Scenario &s) { s.gpus = {"a100-80gb"}; });
    BudgetChart chart;
    chart.resize(1000, 600);
    ChartBar bar = chartBarFor(QStringLiteral("Current"), QString(), doc.scenario(), doc.catalog());
    chart.setContents({bar}, doc.selectedGpus());
    // The capacity is inside the band: the verdict comes from a replay on the worker.
    chart.verdictWorker()->waitForNewest();
    chart.replot(QCustomPlot::rpImmediateRefresh);
    const MemoryBand band = chart.band(0);
    QCOMPARE(band.expected, bar.estimate.device_total);
    QVERIFY(band.low < band.expected && band.expected < band.high);
    // The whisker: one error bar on the bar's total, from low to high.
    QCPErrorBars *whiskers = chart.bandBars();
    QCOMPARE(whiskers->dataCount(), 1);
    const double gib = static_cast<double>(kGiB);
    QCOMPARE(whiskers->data()->at(0).errorMinus,
             static_cast<double>(band.expected) / gib - static_cast<double>(band.low) / gib);
    QCOMPARE(whiskers->data()->at(0).errorPlus,
             static_cast<double>(band.high) / gib - static_cast<double>(band.expected) / gib);
    QVERIFY(chart.valueRange().upper >= static_cast<double>(band.high) / gib);
    // The total stands above the whisker and says tight (the capacity is inside the band).
    bool found = false;
    for (const PlacedLabel &label : chart.placedLabels()) {
        if (label.kind != PlacedLabel::Total)
            continue;
        found = true;
        QVERIFY2(label.text.contains(QStringLiteral("⚠")), qPrintable(label.text));
        QVERIFY(label.rect.bottom()
                <= chart.yAxis->coordToPixel(static_cast<double>(band.high) / gib) + 0.5);
    }
    QVERIFY(found);
    // The legend explains the whisker; the hover text gives the band.
    bool inLegend = false;
    for (int i = 0; i < chart.legend->itemCount(); ++i)
        if (auto *item = qobject_cast<QCPPlottableLegendItem *>(chart.legend->item(i)))
            inLegend = inLegend || item->plottable() == whiskers;
    QVERIFY(inLegend);
    QVERIFY(
        chart.segmentToolTip(0, Component::Activations).contains(QStringLiteral("On the device")));
}

// A pipeline's summary names its stage and lists every stage's allocated peak, as the command line
// does (pipelineStagePeaks, the document's); while a slider drags, the stages are not built again.
void TestVerdictView::pipelineStagesListed()
{
    ScenarioDocument doc(PresetCatalog::bundled());
    doc.reset(doc.catalog().findScenario("full-llama-3.1-8b-4x-rtx-4090-pipeline")->scenario);
    QVERIFY(doc.valid());
    VerdictPanel panel;
    panel.update(doc, ByteUnit::GiB);
    const QString text = panel.summaryText();
    QString expected = QStringLiteral("Allocated peak by stage: ");
    const std::vector<PipelineStagePeak> peaks = pipelineStagePeaks(doc.input());
    QCOMPARE(peaks.size(), std::size_t(4));
    for (const PipelineStagePeak &p : peaks)
        expected += QStringLiteral("%1: %2%3")
                        .arg(p.stage + 1)
                        .arg(QString::fromStdString(formatBytes(p.peak_allocated, ByteUnit::GiB)))
                        .arg(p.stage == 3 ? QStringLiteral(".") : QStringLiteral(", "));
    QVERIFY2(text.contains(expected), qPrintable(text));
    QVERIFY(text.contains(QStringLiteral("stage 4 of 4")));
    // The document finds the worst stage from these peaks; the estimate is the core's own.
    const MemoryEstimate core = estimateMemory(doc.input());
    QCOMPARE(doc.estimate().peak_allocated, core.peak_allocated);
    QCOMPARE(doc.estimate().peak_reserved, core.peak_reserved);
    QCOMPARE(doc.estimate().derivation.pipeline_stage, core.derivation.pipeline_stage);
    // A drag's provisional estimate of another scenario leaves the line out until it settles.
    doc.setDragging(true);
    doc.edit(QStringLiteral("training.sequence_length"),
             [](Scenario &s) { s.training.sequence_length = 2048; });
    panel.update(doc, ByteUnit::GiB);
    QVERIFY(doc.isProvisional());
    QVERIFY(!panel.summaryText().contains(QStringLiteral("Allocated peak by stage")));
    doc.setDragging(false);
    QTRY_VERIFY(!doc.isProvisional()); // replayed on a worker thread
    panel.update(doc, ByteUnit::GiB);
    QVERIFY(panel.summaryText().contains(QStringLiteral("Allocated peak by stage: 1: ")));
    QVERIFY(panel.summaryText() != text); // shorter sequences, smaller stages
    // Without a pipeline there is no such line.
    openTightScenario(doc);
    panel.update(doc, ByteUnit::GiB);
    QVERIFY(!panel.summaryText().contains(QStringLiteral("by stage")));
}

QTEST_MAIN(TestVerdictView)
#include "tst_verdict_view.moc"
