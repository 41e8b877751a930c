// SPDX-License-Identifier: GPL-3.0-or-later
// The Timeline tab (issue 12): it follows an edit of the scenario, draws a long step at the plot's
// resolution, a snapshot opened from the menu or dropped on the window is drawn over the step with
// the comparison beside it, a file that is not a snapshot is refused with one message, and
// Calibrate is one undo step.
#include "charts/budget_chart.h"
#include "charts/timeline_chart.h"
#include "document/scenario_document.h"
#include "layout_requests.h"
#include "main_window.h"
#include "panels/controls_panel.h"
#include "panels/timeline_view.h"
#include "panels/verdict_panel.h"
#include "test_main_window.h"
#include "workers/fit_limits_worker.h"

#include <QMimeData>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>
#include <QUrl>

using namespace membudget;
using test::LayoutRequests;

namespace {

class FakePrompts : public UserPrompts
{
public:
    QStringList errors;
    SaveChoice askSaveChanges(QWidget *, const QString &) override { return SaveChoice::Discard; }
    void showError(QWidget *, const QString &, const QString &text) override { errors << text; }
};

QString snapshotFile(const char *name)
{
    return QStringLiteral(MEMBUDGET_SOURCE_DIR "/tests/data/snapshots/") + QLatin1String(name);
}

const char *kBcrafton = "bcrafton__assignment2-systems__memory_snapshot.pickle";

} // namespace

class TestTimelineView : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void init();
    void cleanup();
    void tabFollowsAnEdit();
    void zoomDrawsTheStretchInDetail();
    void openingASnapshotOverlaysIt();
    void droppingASnapshotOpensIt();
    void badFilesAreRefused();
    void calibrateIsOneUndoStep();
    void stackedAreasFollowTheSteps();
    void hiddenComparisonChartReplotsWhenShown();
    void dragDrawsReservedWhenSettled();
    void dragLaysNothingOutNorReplays();

private:
    TimelineChart *chart() const { return m_window->timelineView()->chart(); }

    QTemporaryDir *m_dir = nullptr;
    MainWindow *m_window = nullptr;
    FakePrompts *m_prompts = nullptr;
};

void TestTimelineView::init()
{
    m_dir = new QTemporaryDir;
    m_window = test::newTestMainWindow(*m_dir, m_prompts);
    m_window->resize(1400, 900);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window));
    QVERIFY(m_window->openFile(
        QStringLiteral(MEMBUDGET_SOURCE_DIR "/presets/scenarios/full-gpt2-amp-16gb.yaml")));
}

void TestTimelineView::cleanup()
{
    m_window->document()->undoStack()->setClean();
    delete m_window;
    delete m_dir;
}

// Zooming (the wheel ends in the axis range, as here) draws the stretch at the detail its width
// allows, stays within the step, survives an edit that keeps the step as long, and a double-click
// shows the whole step again.
void TestTimelineView::zoomDrawsTheStretchInDetail()
{
    m_window->views()->setCurrentIndex(MainWindow::TimelineViewIndex);
    TimelineChart *c = chart();
    QVERIFY(c->contents());
    const double end = static_cast<double>(c->contents()->series.positions() - 1);
    QVERIFY(!c->zoomed());
    QCOMPARE(c->xAxis->range().upper, end);
    const double from = std::floor(end * 0.40), to = std::floor(end * 0.42);
    c->xAxis->setRange(from, to);
    QTRY_VERIFY(c->zoomed());
    QTRY_COMPARE(c->xAxis->range().lower, from);
    QCOMPARE(c->xAxis->range().upper, to);
    // Every event of the stretch is drawn when there are no more than two per pixel column.
    const QCPGraph *allocated = c->graph(0);
    QVERIFY(allocated->dataCount() >= static_cast<int>(to - from));
    QVERIFY(allocated->data()->at(0)->key <= from);
    QVERIFY(allocated->data()->at(allocated->dataCount() - 1)->key >= to);
    // Panning past the end stops at the end.
    c->xAxis->setRange(end - 10, end + 200);
    QTRY_COMPARE(c->xAxis->range().upper, end);
    QCOMPARE(c->xAxis->range().size(), 210.0);
    // An edit of the micro-batch keeps the step's length and the stretch.
    const QCPRange kept = c->xAxis->range();
    const std::int64_t batch = c->contents()->series.micro_batch;
    m_window->document()->edit(QStringLiteral("batch"),
                               [](Scenario &s) { s.training.micro_batch_size += 1; });
    QTRY_COMPARE(c->contents()->series.micro_batch, batch + 1);
    QCOMPARE(static_cast<double>(c->contents()->series.positions() - 1), end);
    QCOMPARE(c->xAxis->range(), kept);
    QTest::mouseDClick(c, Qt::LeftButton, {}, c->axisRect()->rect().center());
    QTRY_VERIFY(!c->zoomed());
    QCOMPARE(c->xAxis->range().lower, 0.0);
    QCOMPARE(c->xAxis->range().upper, end);
}

// While a slider is dragged the tab draws the allocated step without the allocator replay (no
// reserved line; the hover says when it comes), and draws reserved again once the drag ends.
void TestTimelineView::dragDrawsReservedWhenSettled()
{
    m_window->views()->setCurrentIndex(MainWindow::TimelineViewIndex);
    ScenarioDocument *doc = m_window->document();
    const auto reservedLines = [&] {
        int n = 0;
        for (int i = 0; i < chart()->graphCount(); ++i)
            n += chart()->graph(i)->name() == QStringLiteral("Reserved (allocator model)");
        return n;
    };
    QCOMPARE(reservedLines(), 1);
    doc->setDragging(true);
    doc->edit(QStringLiteral("micro-batch"), [](Scenario &s) { s.training.micro_batch_size = 3; });
    QVERIFY(doc->isProvisional());
    QTRY_COMPARE(chart()->contents()->series.micro_batch, 3);
    QVERIFY(chart()->contents()->series.reserved.empty());
    QTRY_COMPARE(reservedLines(), 0);
    const std::size_t peak = chart()->contents()->series.peak;
    QVERIFY(chart()->describePosition(peak).contains(
        QStringLiteral("reserved once the value settles")));
    doc->setDragging(false);
    QTRY_VERIFY(!doc->isProvisional());
    QTRY_VERIFY(!chart()->contents()->series.reserved.empty());
    QTRY_COMPARE(reservedLines(), 1);
    QVERIFY(!chart()->describePosition(peak).contains(QStringLiteral("settles")));
}

void TestTimelineView::tabFollowsAnEdit()
{
    m_window->views()->setCurrentIndex(MainWindow::TimelineViewIndex);
    QVERIFY(chart()->contents());
    const TimelineSeries &before = chart()->contents()->series;
    QCOMPARE(before.micro_batch, 4);
    QVERIFY(before.positions() > 100);
    // Drawn at the plot's resolution: at most two points per pixel column and the ends.
    QVERIFY(chart()->drawnPoints() > 0);
    QVERIFY(chart()->drawnPoints() <= 2 * chart()->width() + 2);
    const Bytes peakBefore = before.allocated[before.peak];
    // The estimate's step: its peak, but for the rounding of each tensor to whole bytes.
    QVERIFY(std::llabs(peakBefore - m_window->document()->estimate().peak_allocated) <= 4096);

    m_window->document()->edit(QStringLiteral("micro-batch"),
                               [](Scenario &s) { s.training.micro_batch_size = 2; });
    const TimelineSeries &after = chart()->contents()->series;
    QCOMPARE(after.micro_batch, 2);
    QVERIFY(after.allocated[after.peak] < peakBefore);
    QVERIFY(std::llabs(after.allocated[after.peak] - m_window->document()->estimate().peak_allocated)
            <= 4096);
    // Hovering names the allocation.
    const QString hover = chart()->describePosition(after.peak);
    QVERIFY(hover.startsWith(QStringLiteral("Allocates ")) || hover.startsWith("Frees "));
    QVERIFY(hover.contains(QStringLiteral("Estimate: ")));
}

void TestTimelineView::openingASnapshotOverlaysIt()
{
    QVERIFY(!chart()->hasMeasured());
    QVERIFY(m_window->openSnapshot(snapshotFile(kBcrafton)));
    QCOMPARE(m_window->views()->currentIndex(), int(MainWindow::TimelineViewIndex));
    QVERIFY(m_prompts->errors.isEmpty());
    QVERIFY(chart()->hasMeasured());
    const QString text = m_window->timelineView()->comparisonText();
    QVERIFY(text.contains(QStringLiteral("Measured: ") + QLatin1String(kBcrafton)));
    QVERIFY(text.contains(QStringLiteral("Peak allocated: ")));
    QVERIFY(text.contains(QStringLiteral("Calibrate would set overheads.extra_resident")));
    // The measured curves under the cursor too, within the trace's span.
    const TimelineSeries &s = chart()->contents()->series;
    QVERIFY(chart()->describePosition(s.positions() / 2).contains(QStringLiteral("Measured: ")));
    // An edit keeps the snapshot over the new step.
    m_window->document()->edit(QStringLiteral("micro-batch"),
                               [](Scenario &sc) { sc.training.micro_batch_size = 1; });
    QVERIFY(chart()->hasMeasured());
    m_window->timelineView()->closeSnapshot();
    QVERIFY(!chart()->hasMeasured());
}

void TestTimelineView::droppingASnapshotOpensIt()
{
    auto *mime = new QMimeData;
    mime->setUrls({QUrl::fromLocalFile(snapshotFile(kBcrafton))});
    QDragEnterEvent enter(QPoint(10, 10), Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(m_window, &enter);
    QVERIFY(enter.isAccepted());
    QDropEvent drop(QPointF(10, 10), Qt::CopyAction, mime, Qt::LeftButton, Qt::NoModifier);
    QCoreApplication::sendEvent(m_window, &drop);
    QTRY_VERIFY(chart()->hasMeasured());
    QCOMPARE(m_window->views()->currentIndex(), int(MainWindow::TimelineViewIndex));
    delete mime;
}

void TestTimelineView::badFilesAreRefused()
{
    QVERIFY(!m_window->openSnapshot(
        QStringLiteral(MEMBUDGET_SOURCE_DIR "/presets/scenarios/full-gpt2-amp-16gb.yaml")));
    QCOMPARE(m_prompts->errors.size(), 1);
    QVERIFY(!m_window->timelineView()->hasSnapshot());
    // A snapshot without history has nothing to draw.
    QVERIFY(!m_window->openSnapshot(snapshotFile("LfieLike__SketchKV2__my_snapshot.pickle")));
    QCOMPARE(m_prompts->errors.size(), 2);
    QVERIFY(m_prompts->errors.back().contains(QStringLiteral("no allocation history")));
    QVERIFY(!m_window->timelineView()->hasSnapshot());
}

void TestTimelineView::calibrateIsOneUndoStep()
{
    ScenarioDocument *doc = m_window->document();
    const OverheadConfig before = doc->scenario().overheads;
    QVERIFY(m_window->openSnapshot(snapshotFile(kBcrafton)));
    const int steps = doc->undoStack()->count();
    QVERIFY(m_window->timelineView()->calibrate());
    QCOMPARE(doc->undoStack()->count(), steps + 1);
    const OverheadConfig calibrated = doc->scenario().overheads;
    QVERIFY(calibrated.extra_resident_bytes > 0);
    QVERIFY(!(calibrated == before));
    // The estimate now starts the step with what the trace shows: nothing more to take.
    const auto again = m_window->timelineView()->calibration();
    QVERIFY(again);
    for (const snapshot::CalibrationItem &i : again->items)
        QVERIFY2(!i.taken || i.key == "allocator_reserve", i.key.c_str());
    doc->undoStack()->undo();
    QVERIFY(doc->scenario().overheads == before);
    doc->undoStack()->redo();
    QVERIFY(doc->scenario().overheads == calibrated);
}

// The stacked areas are rasterised by StackedStepAreas: each value holds from its key to the next
// (as QCPGraph's lsStepLeft), bands stack in order, a band of zero height leaves the one below
// showing, and nothing is drawn past the last key.
void TestTimelineView::stackedAreasFollowTheSteps()
{
    QCustomPlot plot;
    plot.resize(400, 300);
    plot.xAxis->setRange(0, 40);
    plot.yAxis->setRange(0, 5);
    auto *areas = new StackedStepAreas(plot.xAxis, plot.yAxis);
    const QColor red(200, 0, 0), blue(0, 0, 200);
    areas->setData({0, 10, 20, 30},
                   {{red, red.darker(), {1, 3, 2, 2}}, {blue, blue.darker(), {2, 3, 4, 4}}});
    plot.replot();
    const QImage image = plot.toPixmap(400, 300).toImage();
    auto at = [&](double key, double value) {
        return QColor(image.pixel(qRound(plot.xAxis->coordToPixel(key)),
                                  qRound(plot.yAxis->coordToPixel(value))));
    };
    QCOMPARE(at(5, 0.5), red);
    QCOMPARE(at(5, 1.5), blue);
    QCOMPARE(at(5, 2.5), QColor(Qt::white));
    QCOMPARE(at(15, 2.5), red); // blue has no height here
    QCOMPARE(at(15, 3.5), QColor(Qt::white));
    QCOMPARE(at(25, 1.0), red);
    QCOMPARE(at(25, 3.0), blue);
    QCOMPARE(at(35, 1.3), QColor(Qt::white));
    // The Timeline tab draws its components this way, one band per component in the legend.
    m_window->views()->setCurrentIndex(MainWindow::TimelineViewIndex);
    QVERIFY(chart()->contents());
    const int graphs = chart()->graphCount();
    QVERIFY(graphs >= 2);
    QCOMPARE(chart()->graph(0)->lineStyle(), QCPGraph::lsNone);
}

// While the Timeline tab shows, an edit does not replot the hidden comparison chart (its replot
// drew every layer unseen); showing the chart again replots it with the edit.
void TestTimelineView::hiddenComparisonChartReplotsWhenShown()
{
    BudgetChart *comparison = m_window->chart();
    m_window->views()->setCurrentIndex(MainWindow::TimelineViewIndex);
    QTRY_VERIFY(!comparison->isVisible());
    QTest::qWait(50);
    QSignalSpy replots(comparison, &QCustomPlot::afterReplot);
    m_window->document()->edit(QStringLiteral("micro-batch"),
                               [](Scenario &s) { s.training.micro_batch_size += 1; });
    QTest::qWait(100);
    QCOMPARE(replots.count(), 0);
    m_window->views()->setCurrentIndex(MainWindow::ComparisonView);
    QTRY_VERIFY(replots.count() >= 1);
}

// A drag's values lay nothing out above the panels (the labels whose texts follow every value sit
// in SteadyLabel boxes, the verdict's text keeps its height, the forms' rows are left alone) and
// start no replays for the verdict table or the comparison chart's bars, which would take a core
// from the drag on a 2-core machine; letting go asks for them. The first pass may widen a label
// (one line keeps its width while texts keep coming); the same values again may not. An RTX 3060
// 12GB's capacity lies inside the bar's band at micro-batch 6, where the chart asks for a replay.
void TestTimelineView::dragLaysNothingOutNorReplays()
{
    ScenarioDocument *doc = m_window->document();
    doc->edit(QStringLiteral("gpus"), [](Scenario &s) { s.gpus.push_back("rtx-3060-12gb"); });
    VerdictPanel *verdicts = m_window->verdictPanel();
    auto *bars = m_window->findChild<BudgetChart *>(QStringLiteral("comparisonChart"));
    QVERIFY(bars);
    QSignalSpy barReplays(bars->verdictWorker(), &FitLimitsWorker::verdictsReady);
    LayoutRequests window, controls;
    m_window->installEventFilter(&window);
    m_window->controls()->installEventFilter(&controls); // inside a scroll area: apart
    for (int view : {int(MainWindow::ComparisonView), int(MainWindow::TimelineViewIndex)}) {
        m_window->views()->setCurrentIndex(view);
        verdicts->limitsWorker()->waitForNewest();
        QTRY_VERIFY(verdicts->limitsExact());
        bars->verdictWorker()->waitForNewest();
        Q_EMIT m_window->controls()->dragStateChanged(true); // what pressing a slider says
        barReplays.clear();
        for (int pass = 0; pass < 2; ++pass) {
            window.count = controls.count = 0;
            for (int batch : {3, 4, 5, 12, 6}) {
                doc->edit(QStringLiteral("micro-batch"),
                          [batch](Scenario &s) { s.training.micro_batch_size = batch; });
                QVERIFY(doc->isProvisional());
                QVERIFY(!verdicts->limitsWorker()->busy());
                QVERIFY(!bars->verdictWorker()->busy());
                QVERIFY(!verdicts->limitsExact()); // the fast estimates ("≈") meanwhile
                for (int i = 0; i < 5; ++i)
                    QCoreApplication::processEvents();
            }
        }
        QCOMPARE(window.count, 0);
        QCOMPARE(controls.count, 0);
        QCOMPARE(barReplays.count(), 0);
        Q_EMIT m_window->controls()->dragStateChanged(false);
        QTRY_VERIFY(!doc->isProvisional());
        QTRY_VERIFY(verdicts->limitsExact());
        QTRY_VERIFY(barReplays.count() > 0); // the band at micro-batch 6 holds a capacity
    }
}

QTEST_MAIN(TestTimelineView)
#include "tst_timeline_view.moc"
