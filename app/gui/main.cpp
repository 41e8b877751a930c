// SPDX-License-Identifier: GPL-3.0-or-later
// membudget-gui: the MemBudget desktop application (and its display-less export mode).
#include "document/scenario_document.h"
#include "headless.h"
#include "main_window.h"
#include "number_format.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QFile>
#include <QFileInfo>
#include <QIcon>
#include <QTabWidget>
#include <QTimer>

#include <chrono>
#include <cstdio>
#include <filesystem>

using namespace membudget;

namespace {

QtMessageHandler previousHandler = nullptr;

// Headless runs print their results on stdout/stderr; Qt's notes about the offscreen platform
// ("XDG_RUNTIME_DIR not set", size hints) are noise there.
void quietHandler(QtMsgType type, const QMessageLogContext &context, const QString &message)
{
    if (type < QtCriticalMsg
        && (message.startsWith(QLatin1String("QStandardPaths:"))
            || message.startsWith(QLatin1String("This plugin does not support"))))
        return;
    if (previousHandler)
        previousHandler(type, context, message);
}

// MEMBUDGET_REPORT_FIRST_PAINT=1 prints on stderr when the window first shows its chart (the
// chart's first paint once a replot has drawn the data): milliseconds since main(), a steady_clock
// stamp (CLOCK_MONOTONIC, ns) that tests/bench/bench_startup compares with its launch time, and the
// resident memory. MEMBUDGET_REPORT_FIRST_PAINT=quit also quits then. See docs/performance.md.
class FirstPaintReport : public QObject
{
public:
    FirstPaintReport(QCustomPlot *chart, std::chrono::steady_clock::time_point start, bool quit)
        : QObject(chart)
        , m_start(start)
        , m_quit(quit)
    {
        chart->installEventFilter(this);
        connect(chart, &QCustomPlot::beforeReplot, this, [this] { m_replotted = true; });
    }

protected:
    bool eventFilter(QObject *watched, QEvent *event) override
    {
        if (event->type() != QEvent::Paint || !m_replotted)
            return false;
        watched->removeEventFilter(this);
        watched->event(event); // paint first, then take the time
        const auto now = std::chrono::steady_clock::now();
        std::fprintf(
            stderr,
            "membudget-gui: first paint %.1f ms after main(), steady_clock %lld ns, VmRSS %ld kB\n",
            std::chrono::duration<double, std::milli>(now - m_start).count(),
            static_cast<long long>(
                std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count()),
            residentKb());
        std::fflush(stderr);
        if (m_quit)
            QTimer::singleShot(0, qApp, &QCoreApplication::quit);
        return true;
    }

private:
    static long residentKb()
    {
        QFile status(QStringLiteral("/proc/self/status"));
        if (status.open(QIODevice::ReadOnly | QIODevice::Text))
            for (const QByteArray &line : status.readAll().split('\n'))
                if (line.startsWith("VmRSS:"))
                    return line.mid(6).trimmed().split(' ').value(0).toLong();
        return 0;
    }

    std::chrono::steady_clock::time_point m_start;
    bool m_quit;
    bool m_replotted = false;
};

} // namespace

int main(int argc, char **argv)
{
    const auto start = std::chrono::steady_clock::now();
    // Decide the platform before QApplication exists: exports and display-less machines render
    // offscreen instead of failing to connect to a display.
    const bool exportMode = argvRequestsExport(argc, argv);
    const bool headless = !displayAvailable(argc, argv);
    if (exportMode || headless) {
        qputenv("QT_QPA_PLATFORM", "offscreen");
        previousHandler = qInstallMessageHandler(quietHandler);
    }

    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("MemBudget"));
    QApplication::setApplicationName(QStringLiteral("membudget"));
    QApplication::setApplicationDisplayName(QStringLiteral("MemBudget"));
    QApplication::setApplicationVersion(QStringLiteral(MEMBUDGET_VERSION));
    QApplication::setDesktopFileName(QStringLiteral("membudget"));
    initGuiResources();
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/membudget/membudget.svg")));

    useOneNumberFormat();
    const NativeArguments native(argc, argv); // argv without the options QApplication took

    QCommandLineParser parser;
    addCommandLineOptions(parser);
    if (!parser.parse(QApplication::arguments())) {
        std::fprintf(stderr,
                     "%s: %s\n",
                     exportMode ? "membudget export" : "membudget-gui",
                     qPrintable(parser.errorText()));
        return kExitUsage;
    }
    if (parser.isSet(QStringLiteral("help")))
        parser.showHelp(kExitOk);
    if (parser.isSet(QStringLiteral("version")))
        parser.showVersion();

    if (parser.isSet(QStringLiteral("export")))
        return runExport(parser, native);
    for (const char *exportOnly : {"output", "width", "height", "scale", "title", "caption"}) {
        if (parser.isSet(QLatin1String(exportOnly))) {
            std::fprintf(stderr, "membudget-gui: --%s only goes with --export\n", exportOnly);
            return kExitUsage;
        }
    }
    if (headless)
        return runWithoutDisplay();

    std::vector<LoadError> problems;
    MainWindow window(ScenarioDocument::loadCatalog(&problems));
    const QByteArray reportFirstPaint = qgetenv("MEMBUDGET_REPORT_FIRST_PAINT");
    if (!reportFirstPaint.isEmpty() && reportFirstPaint != "0") {
        QWidget *view = window.views()->currentWidget();
        auto *chart = qobject_cast<QCustomPlot *>(view);
        if (!chart)
            chart = view->findChild<QCustomPlot *>();
        if (chart)
            new FirstPaintReport(chart, start, reportFirstPaint == "quit");
    }
    window.show();
    // A scenario (a file, or the id of a bundled scenario when no such file exists) and PyTorch
    // memory snapshots (.pickle, .pkl) for the Timeline tab, in any order.
    const QStringList files = parser.positionalArguments();
    QTimer::singleShot(0, &window, [&window, &native, files] {
        for (const QString &arg : files) {
            const std::string file = native.path(arg);
            const QString suffix = QFileInfo(arg).suffix().toLower();
            std::error_code ec;
            if (suffix == QLatin1String("pickle") || suffix == QLatin1String("pkl"))
                window.openSnapshot(arg);
            else if (!std::filesystem::exists(file, ec)
                     && window.document()->catalog().findScenario(file))
                window.loadPresetScenario(QString::fromStdString(file));
            else
                window.openNativeFile(file);
        }
    });
    return QApplication::exec();
}
