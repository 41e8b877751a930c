// SPDX-License-Identifier: GPL-3.0-or-later
// GUI speed (issue #6), on the real MainWindow of the membudget_gui library:
//   - slider to pixels: a micro-batch slider drag by synthesized mouse moves (the platform's input
//     path: QWindow -> QWidgetWindow -> QSlider), each timed until the comparison chart has been
//     replotted *and painted* (8 pinned scenarios, 6 capacity lines, verdict panel);
//   - event-loop stalls: a 1 ms heartbeat timer while the slider is dragged at 125 Hz for 5 s;
//   - chart export at 1920x1080 (PNG, SVG, PDF) through MainWindow::exportCurrentView;
//   - resident memory with the scenario open (/proc/self/status).
// Run: QT_QPA_PLATFORM=offscreen build/tests/bench/bench_gui [--changes 400] [--drag-seconds 5]
//      [--export-runs 15] [--only latency,stall,export,memory]
#include "bench_common.h"

#include "charts/timeline_chart.h"
#include "document/scenario_document.h"
#include "main_window.h"
#include "panels/controls_panel.h"
#include "panels/fit_panel.h"
#include "panels/timeline_view.h"
#include "widgets/log_slider.h"

#include <QAction>
#include <QApplication>
#include <QCommandLineParser>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QFileInfo>
#include <QListWidget>
#include <QScrollArea>
#include <QSlider>
#include <QSpinBox>
#include <QStyleOptionSlider>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QWindow>

#include <cstdio>
#include <memory>

using namespace membudget;
using namespace membudget::bench;

namespace {

constexpr const char *kScenario = MEMBUDGET_SOURCE_DIR
    "/presets/scenarios/lora-mistral-7b-a100-80gb.yaml";
const char *const kGpus[] = {"rtx-3060-12gb", "rtx-4090", "v100-32gb", "l40s", "a100-80gb", "h200"};

double msSince(const QElapsedTimer &t, qint64 startNs)
{
    return static_cast<double>(t.nsecsElapsed() - startNs) / 1e6;
}

// Never shows a dialog.
class SilentPrompts : public UserPrompts
{
public:
    SaveChoice askSaveChanges(QWidget *, const QString &) override { return SaveChoice::Discard; }
    void showError(QWidget *, const QString &title, const QString &text) override
    {
        std::fprintf(stderr, "%s: %s\n", qPrintable(title), qPrintable(text));
    }
};

// Tells when the chart has been painted after a replot started (the paint that shows the new data;
// QCustomPlot repaints at once at the end of replot() by default, phImmediateRefresh).
class PaintProbe : public QObject
{
public:
    explicit PaintProbe(QCustomPlot *chart)
        : m_chart(chart)
    {
        m_clock.start();
        chart->installEventFilter(this);
        connect(chart, &QCustomPlot::beforeReplot, this, [this] {
            m_replotted = true;
            ++replots;
            replotStartNs = m_clock.nsecsElapsed();
        });
    }
    void arm() { m_replotted = m_painted = false; }
    bool painted() const { return m_painted; }
    int paints = 0;
    int replots = 0;
    qint64 replotStartNs = 0; // on clock()
    const QElapsedTimer &clock() const { return m_clock; }

protected:
    bool eventFilter(QObject *watched, QEvent *event) override
    {
        if (watched == m_chart && event->type() == QEvent::Paint) {
            ++paints;
            m_painted = m_painted || m_replotted;
        }
        return false;
    }

private:
    QCustomPlot *m_chart;
    QElapsedTimer m_clock;
    bool m_replotted = false;
    bool m_painted = false;
};

// Drives a slider with mouse events as the platform plugin would deliver them (synchronously,
// through QGuiApplication and the top-level QWidgetWindow).
class SliderDriver
{
public:
    explicit SliderDriver(QSlider *slider)
        : m_slider(slider)
        , m_window(slider->window()->windowHandle())
    {}

    QRect handleRect() const
    {
        QStyleOptionSlider opt;
        opt.initFrom(m_slider);
        opt.orientation = m_slider->orientation();
        opt.minimum = m_slider->minimum();
        opt.maximum = m_slider->maximum();
        opt.sliderPosition = m_slider->sliderPosition();
        opt.sliderValue = m_slider->value();
        opt.singleStep = m_slider->singleStep();
        opt.pageStep = m_slider->pageStep();
        opt.upsideDown = m_slider->invertedAppearance() != (opt.direction == Qt::RightToLeft);
        opt.state |= QStyle::State_Horizontal;
        return m_slider->style()->subControlRect(QStyle::CC_Slider,
                                                 &opt,
                                                 QStyle::SC_SliderHandle,
                                                 m_slider);
    }

    // Presses on the handle; later moves go from there.
    void press()
    {
        const QRect handle = handleRect();
        m_y = handle.center().y();
        m_x = handle.center().x();
        m_lo = handle.width() / 2;
        m_hi = m_slider->width() - handle.width() / 2 - 1;
        send(QEvent::MouseButtonPress, Qt::LeftButton, Qt::LeftButton);
    }
    // Moves `dx` pixels, turning round at either end of the groove.
    void move(int dx)
    {
        if (m_x + m_dir * dx > m_hi || m_x + m_dir * dx < m_lo)
            m_dir = -m_dir;
        m_x += m_dir * dx;
        send(QEvent::MouseMove, Qt::LeftButton, Qt::NoButton);
    }
    void release() { send(QEvent::MouseButtonRelease, Qt::NoButton, Qt::LeftButton); }

private:
    void send(QEvent::Type type, Qt::MouseButtons state, Qt::MouseButton button)
    {
        const QPoint local = m_slider->mapTo(m_slider->window(), QPoint(m_x, m_y));
        qt_handleMouseEvent(m_window,
                            local,
                            m_window->mapToGlobal(local),
                            state,
                            button,
                            type,
                            Qt::NoModifier,
                            ++m_timestamp);
    }

    QSlider *m_slider;
    QWindow *m_window;
    int m_x = 0, m_y = 0, m_lo = 0, m_hi = 0, m_dir = 1, m_timestamp = 1000;
};

struct Options
{
    QString scenario = QString::fromUtf8(kScenario);
    int changes = 400;
    double dragSeconds = 5;
    int exportRuns = 15;
    QStringList only;
    QString screenshot;
    QString snapshot; // drawn on the Timeline tab (--snapshot)
    int view = MainWindow::ComparisonView;
    bool callgrind = false;
    bool wants(const char *part) const
    {
        return only.isEmpty() || only.contains(QLatin1String(part));
    }
};

class GuiBench
{
public:
    explicit GuiBench(const Options &o)
        : m_options(o)
    {}

    // Out of line so that callgrind --toggle-collect='*GuiBench::measure*' can find them.
    bool setUp();
    MainWindow *window() const { return m_window.get(); }
    Q_NEVER_INLINE void measureMemory(const char *when);
    Q_NEVER_INLINE void measureSliderLatency();
    Q_NEVER_INLINE void measureDragStalls();
    Q_NEVER_INLINE void measureExports();
    // Scrolls the controls so that the micro-batch slider is on screen, once the layout has
    // settled (under valgrind the window lays itself out again after set-up). Outside the measured
    // functions, so that callgrind does not count it.
    void revealSlider();

private:
    // The chart on the tab shown: the comparison chart, or the Timeline tab's.
    QCustomPlot *probedChart() const
    {
        if (m_options.view == MainWindow::TimelineViewIndex)
            return m_window->timelineView()->chart();
        return m_window->chart();
    }
    Options m_options;
    QTemporaryDir m_dir;
    std::unique_ptr<MainWindow> m_window;
    std::unique_ptr<PaintProbe> m_probe;
    int m_changes = 0; // ScenarioDocument::changed count
};

bool GuiBench::setUp()
{
    // No user presets and a throw-away settings file: the same window for everyone.
    qputenv("MEMBUDGET_PRESETS", m_dir.filePath(QStringLiteral("no-user-presets")).toUtf8());
    QElapsedTimer clock;
    clock.start();
    m_window = std::make_unique<MainWindow>(ScenarioDocument::loadCatalog(),
                                            std::make_unique<AppSettings>(
                                                m_dir.filePath(QStringLiteral("settings.ini"))));
    m_window->setPrompts(std::make_unique<SilentPrompts>());
    m_window->views()->setCurrentIndex(m_options.view);
    m_window->resize(1480, 920);
    m_window->show();
    if (!QTest::qWaitForWindowExposed(m_window.get()))
        return false;
    std::printf("window constructed and exposed in %.1f ms (in-process)\n", msSince(clock, 0));
    if (!m_window->openFile(m_options.scenario))
        return false;
    if (!m_options.snapshot.isEmpty() && !m_window->openSnapshot(m_options.snapshot))
        return false;

    // Six capacity lines, chosen in the GPU list as a user would.
    auto *list = m_window->findChild<QListWidget *>(QStringLiteral("gpuList"));
    for (int i = 0; list && i < list->count(); ++i) {
        QListWidgetItem *item = list->item(i);
        bool wanted = false;
        for (const char *id : kGpus)
            wanted = wanted || item->data(Qt::UserRole).toString() == QLatin1String(id);
        item->setCheckState(wanted ? Qt::Checked : Qt::Unchecked);
    }
    // Eight pinned scenarios at different sequence lengths, then back to 4096 tokens.
    auto *sequence = static_cast<QSpinBox *>(m_window->controls()->sequenceSlider()->spinBox());
    for (int length : {512, 1024, 2048, 3072, 6144, 8192, 12288, 16384}) {
        sequence->setValue(length);
        m_window->action(QStringLiteral("actionPin"))->trigger();
    }
    sequence->setValue(4096);
    QTest::qWait(300); // queued replots, debounced suggestions
    const auto &s = m_window->document()->scenario();
    std::printf("scenario %s: %zu GPUs selected, %d pinned, %d capacity lines, %zu bars\n",
                QFileInfo(m_options.scenario).fileName().toUtf8().constData(),
                s.gpus.size(),
                m_window->pinCount(),
                m_window->chart()->capacityLineCount(),
                m_window->chart()->bars().size());
    if (s.gpus.size() != 6 || m_window->pinCount() != 8)
        return false;

    revealSlider();
    m_probe = std::make_unique<PaintProbe>(probedChart());
    if (m_options.callgrind) { // see --callgrind
        for (QTimer *timer : m_window->fitPanel()->findChildren<QTimer *>())
            timer->blockSignals(true);
        for (QTimer *timer : m_window->document()->findChildren<QTimer *>())
            timer->blockSignals(true);
    }
    QObject::connect(m_window->document(), &ScenarioDocument::changed, m_window.get(), [this] {
        ++m_changes;
    });
    QTest::qWait(50);
    return true;
}

void GuiBench::revealSlider()
{
    QCoreApplication::processEvents();
    QSlider *slider = m_window->controls()->microBatchSlider()->slider();
    for (QWidget *w = slider; w; w = w->parentWidget())
        if (auto *scroll = qobject_cast<QScrollArea *>(w))
            scroll->ensureWidgetVisible(slider);
    QCoreApplication::processEvents();
}

void GuiBench::measureMemory(const char *when)
{
    const QString status = QStringLiteral("/proc/self/status");
    std::printf("memory %-28s VmRSS %.1f MB, VmHWM %.1f MB   target VmRSS <= 120 MB: %s\n",
                when,
                static_cast<double>(statusKb(status, "VmRSS")) / 1024.0,
                static_cast<double>(statusKb(status, "VmHWM")) / 1024.0,
                statusKb(status, "VmRSS") <= 120 * 1024 ? "ok" : "MISSED");
    std::fflush(stdout);
}

// Value change -> chart painted, one mouse move at a time, back to back.
void GuiBench::measureSliderLatency()
{
    SliderDriver drag(m_window->controls()->microBatchSlider()->slider());
    const QElapsedTimer &clock = m_probe->clock();
    std::vector<double> total, cpu, sync, queued, replot;
    drag.press();
    QCoreApplication::processEvents();
    int moves = 0;
    while (static_cast<int>(total.size()) < m_options.changes && moves < 100 * m_options.changes) {
        ++moves;
        m_probe->arm();
        const int before = m_changes;
        const qint64 t0 = clock.nsecsElapsed();
        const long long cpu0 = threadCpuNs();
        drag.move(2);
        const double syncMs = msSince(clock, t0);
        if (m_changes == before) { // same value at this pixel: nothing to redraw
            QCoreApplication::processEvents();
            continue;
        }
        while (!m_probe->painted() && msSince(clock, t0) < 2000)
            QCoreApplication::processEvents();
        total.push_back(msSince(clock, t0));
        cpu.push_back(static_cast<double>(threadCpuNs() - cpu0) / 1e6);
        sync.push_back(syncMs);
        queued.push_back(static_cast<double>(m_probe->replotStartNs - t0) / 1e6 - syncMs);
        replot.push_back(probedChart()->replotTime());
    }
    drag.release();
    QTest::qWait(200);
    std::printf("\nslider -> painted chart (%d mouse moves, %zu value changes)\n",
                moves,
                total.size());
    printSummary("  value change -> chart painted", summarize(total), "ms", 8, true);
    printSummary("  the same in GUI-thread CPU time", summarize(cpu), "ms");
    printSummary("  of which input -> model -> views", summarize(sync), "ms");
    printSummary("  then until the replot starts", summarize(queued), "ms");
    printSummary("  chart replot and repaint (QCP)", summarize(replot), "ms");
}

// A continuous drag at 125 Hz for a few seconds; the largest gap between 1 ms heartbeats is the
// longest the event loop was unavailable. The GUI thread's CPU time within each gap tells a busy
// loop from one that waited for a core (this machine's two are shared).
void GuiBench::measureDragStalls()
{
    SliderDriver drag(m_window->controls()->microBatchSlider()->slider());
    QElapsedTimer clock;
    clock.start();
    std::vector<double> gaps, busy;
    qint64 last = 0;
    long long lastCpu = 0;
    auto restart = [&] {
        gaps.clear();
        busy.clear();
        last = clock.nsecsElapsed();
        lastCpu = threadCpuNs();
    };
    QTimer heartbeat;
    heartbeat.setTimerType(Qt::PreciseTimer);
    heartbeat.setInterval(1);
    QObject::connect(&heartbeat, &QTimer::timeout, [&] {
        const qint64 now = clock.nsecsElapsed();
        const long long cpu = threadCpuNs();
        gaps.push_back(static_cast<double>(now - last) / 1e6);
        busy.push_back(static_cast<double>(cpu - lastCpu) / 1e6);
        last = now;
        lastCpu = cpu;
    });
    QTimer mouse;
    mouse.setTimerType(Qt::PreciseTimer);
    mouse.setInterval(8);
    QObject::connect(&mouse, &QTimer::timeout, [&] { drag.move(3); });

    const int changesBefore = m_changes;
    const int paintsBefore = m_probe->paints;
    drag.press();
    heartbeat.start();
    mouse.start();
    restart();
    QEventLoop loop;
    QTimer::singleShot(static_cast<int>(m_options.dragSeconds * 1000),
                       Qt::PreciseTimer,
                       &loop,
                       &QEventLoop::quit);
    loop.exec();
    mouse.stop();
    const Summary dragGaps = summarize(gaps);
    const Summary dragBusy = summarize(busy);
    const auto stalls = std::count_if(gaps.begin(), gaps.end(), [](double g) { return g > 16; });
    const int changes = m_changes - changesBefore;
    const int paints = m_probe->paints - paintsBefore;

    // The second after letting go: the axis settles, the fit suggestions are recomputed.
    restart();
    drag.release();
    QTimer::singleShot(1000, Qt::PreciseTimer, &loop, &QEventLoop::quit);
    loop.exec();
    heartbeat.stop();

    std::printf(
        "\ncontinuous drag for %.1f s at 125 Hz: %d value changes, %d chart paints (%.0f fps)\n",
        m_options.dragSeconds,
        changes,
        paints,
        paints / m_options.dragSeconds);
    printSummary("  heartbeat gap while dragging", dragGaps, "ms");
    printSummary("  GUI-thread CPU time per gap", dragBusy, "ms");
    std::printf("  max stall while dragging %.2f ms (%.2f ms of it on CPU), gaps > 16 ms: %ld   "
                "target max <= 16 ms: %s\n",
                dragGaps.max,
                dragBusy.max,
                static_cast<long>(stalls),
                dragGaps.max <= 16 ? "ok" : "MISSED");
    printSummary("  heartbeat gap 1 s after release", summarize(gaps), "ms");
    printSummary("  CPU time per gap after release", summarize(busy), "ms");

    // What runs 120 ms after the last change: the "make it fit" suggestions (core search and list).
    std::vector<double> fit;
    for (int i = 0; i < 20; ++i) {
        QElapsedTimer t;
        t.start();
        m_window->fitPanel()->recompute();
        QCoreApplication::processEvents(); // layout and paint of the list
        fit.push_back(msSince(t, 0));
    }
    printSummary("  fit suggestions recompute + paint", summarize(fit), "ms");
}

void GuiBench::measureExports()
{
    ExportOptions o;
    o.width = 1920;
    o.height = 1080;
    o.scale = 1;
    o.title = QString::fromStdString(m_window->document()->scenario().name);
    o.caption = m_window->defaultCaption();
    std::printf("\nexport 1920x1080 of the comparison view (9 bars, 6 capacity lines, title and "
                "caption)\n");
    struct Format
    {
        const char *name;
        const char *suffix;
        double target;
    };
    for (const Format &f :
         {Format{"  PNG", "png", 150}, Format{"  SVG", "svg", 300}, Format{"  PDF", "pdf", 300}}) {
        const QString path = m_dir.filePath(QStringLiteral("chart.") + QLatin1String(f.suffix));
        std::vector<double> times;
        QElapsedTimer clock;
        for (int i = 0; i <= m_options.exportRuns; ++i) {
            clock.start();
            QString error;
            if (!m_window->exportCurrentView(path, o, &error)) {
                std::printf("%s export failed: %s\n", f.name, qPrintable(error));
                return;
            }
            if (i > 0) // the first run warms caches (fonts, PDF engine)
                times.push_back(msSince(clock, 0));
            QCoreApplication::processEvents();
        }
        printSummary(f.name, summarize(times), "ms", f.target);
    }
}

} // namespace

int main(int argc, char **argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    // The window sizes itself to the screen: measured on a 1600 x 1000 one at 1480 x 920, as
    // always (the offscreen platform's own screen is 800 x 800).
    QTemporaryDir screenConfig;
    if (qgetenv("QT_QPA_PLATFORM") == "offscreen") {
        const QString json = screenConfig.filePath(QStringLiteral("screen.json"));
        QFile file(json);
        if (file.open(QIODevice::WriteOnly)) {
            file.write("{\"screens\": [{\"name\": \"bench\", \"x\": 0, \"y\": 0, \"width\": 1600, "
                       "\"height\": 1000, \"logicalDpi\": 96, \"dpr\": 1}]}");
            file.close();
            qputenv("QT_QPA_PLATFORM", ("offscreen:configfile=" + json).toUtf8());
        }
    }
    QApplication app(argc, argv);
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral("MemBudget GUI benchmarks (issue #6)"));
    parser.addHelpOption();
    parser.addOptions({
        {QStringLiteral("changes"),
         QStringLiteral("Value changes timed in the latency run (400)."),
         QStringLiteral("N")},
        {QStringLiteral("drag-seconds"),
         QStringLiteral("Length of the continuous drag (5)."),
         QStringLiteral("S")},
        {QStringLiteral("export-runs"),
         QStringLiteral("Timed exports per format (15)."),
         QStringLiteral("N")},
        {QStringLiteral("only"),
         QStringLiteral("Comma-separated parts: latency,stall,export,memory."),
         QStringLiteral("PARTS")},
        {QStringLiteral("screenshot"),
         QStringLiteral("Save the window as set up to FILE (PNG)."),
         QStringLiteral("FILE")},
        {QStringLiteral("view"),
         QStringLiteral("The tab shown while measuring: comparison (default) or timeline."),
         QStringLiteral("VIEW")},
        {QStringLiteral("snapshot"),
         QStringLiteral("A PyTorch memory snapshot drawn on the Timeline tab."),
         QStringLiteral("FILE")},
        {QStringLiteral("scenario"),
         QStringLiteral("The scenario measured (default: presets/scenarios/"
                        "lora-mistral-7b-a100-80gb.yaml)."),
         QStringLiteral("FILE")},
        {QStringLiteral("callgrind"),
         QStringLiteral(
             "Under valgrind every change takes longer than the 120 ms debounce of the fit "
             "suggestions and the 150 ms after which a drag's estimate settles, which would then "
             "run after every change; hold them as a real-time drag does.")},
    });
    parser.process(app);
    Options o;
    if (parser.isSet(QStringLiteral("changes")))
        o.changes = std::max(1, parser.value(QStringLiteral("changes")).toInt());
    if (parser.isSet(QStringLiteral("drag-seconds")))
        o.dragSeconds = std::max(0.1, parser.value(QStringLiteral("drag-seconds")).toDouble());
    if (parser.isSet(QStringLiteral("export-runs")))
        o.exportRuns = std::max(1, parser.value(QStringLiteral("export-runs")).toInt());
    o.callgrind = parser.isSet(QStringLiteral("callgrind"));
    o.screenshot = parser.value(QStringLiteral("screenshot"));
    o.snapshot = parser.value(QStringLiteral("snapshot"));
    if (parser.isSet(QStringLiteral("scenario")))
        o.scenario = parser.value(QStringLiteral("scenario"));
    if (parser.value(QStringLiteral("view")) == QLatin1String("timeline"))
        o.view = MainWindow::TimelineViewIndex;
    if (parser.isSet(QStringLiteral("only")))
        o.only = parser.value(QStringLiteral("only")).split(QLatin1Char(','), Qt::SkipEmptyParts);

    std::printf("MemBudget GUI benchmark, Qt %s, platform %s\n",
                qVersion(),
                qPrintable(QGuiApplication::platformName()));
    GuiBench bench(o);
    if (!bench.setUp()) {
        std::fprintf(stderr, "bench_gui: set-up failed\n");
        return 1;
    }
    if (!o.screenshot.isEmpty())
        bench.window()->grab().save(o.screenshot);
    if (o.wants("memory"))
        bench.measureMemory("with the scenario open");
    if (o.wants("latency")) {
        bench.revealSlider();
        bench.measureSliderLatency();
    }
    if (o.wants("stall")) {
        bench.revealSlider();
        bench.measureDragStalls();
    }
    if (o.wants("export"))
        bench.measureExports();
    if (o.wants("memory"))
        bench.measureMemory("at the end");
    return 0;
}
