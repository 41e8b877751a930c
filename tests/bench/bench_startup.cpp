// SPDX-License-Identifier: GPL-3.0-or-later
// Start-up (issue #6): launches the real membudget-gui N times under QT_QPA_PLATFORM=offscreen with
// MEMBUDGET_REPORT_FIRST_PAINT=quit and times process start (just before fork/exec here) to the
// window's first painted chart (the steady_clock stamp the app prints); then the resident memory
// of the app with a bundled scenario open, read from /proc/<pid>/status.
// Run: build/tests/bench/bench_startup [--runs 20] [--memory-runs 5]
#include "bench_common.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QThread>

#include <chrono>
#include <cstdio>

using namespace membudget::bench;

namespace {

qint64 steadyNs()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// Fresh settings (the first-start path), no user presets, offscreen.
QProcessEnvironment environment(const QString &dir, const char *report)
{
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    env.insert(QStringLiteral("XDG_CONFIG_HOME"), dir + QStringLiteral("/config"));
    env.insert(QStringLiteral("MEMBUDGET_PRESETS"), dir + QStringLiteral("/no-user-presets"));
    env.insert(QStringLiteral("MEMBUDGET_REPORT_FIRST_PAINT"), QString::fromLatin1(report));
    return env;
}

struct FirstPaint
{
    bool ok = false;
    double sinceLaunchMs = 0; // process start -> first paint
    double sinceMainMs = 0;   // main() -> first paint
    double rssMb = 0;
};

FirstPaint parseReport(const QByteArray &stderrText, qint64 launchNs)
{
    static const QRegularExpression re(QStringLiteral(
        "first paint ([0-9.]+) ms after main\\(\\), steady_clock ([0-9]+) ns, VmRSS ([0-9]+) kB"));
    const auto m = re.match(QString::fromUtf8(stderrText));
    FirstPaint r;
    if (!m.hasMatch())
        return r;
    r.ok = true;
    r.sinceMainMs = m.captured(1).toDouble();
    r.sinceLaunchMs = static_cast<double>(m.captured(2).toLongLong() - launchNs) / 1e6;
    r.rssMb = m.captured(3).toDouble() / 1024.0;
    return r;
}

FirstPaint launchOnce(const QString &dir)
{
    QProcess app;
    app.setProcessEnvironment(environment(dir, "quit"));
    app.setProcessChannelMode(QProcess::SeparateChannels);
    const qint64 launch = steadyNs();
    app.start(QStringLiteral(MEMBUDGET_GUI_EXE), {});
    if (!app.waitForFinished(20000)) {
        app.kill();
        app.waitForFinished();
        return {};
    }
    const QByteArray err = app.readAllStandardError();
    FirstPaint r = parseReport(err, launch);
    if (!r.ok)
        std::fprintf(stderr, "no first-paint report; stderr:\n%s\n", err.constData());
    return r;
}

// The app left running with a scenario open: its VmRSS and VmHWM once it has settled.
std::pair<double, double> residentWithScenario(const QString &dir)
{
    QProcess app;
    app.setProcessEnvironment(environment(dir, "1"));
    app.setReadChannel(QProcess::StandardError); // where the report goes
    app.start(QStringLiteral(MEMBUDGET_GUI_EXE),
              {QStringLiteral(MEMBUDGET_SOURCE_DIR
                              "/presets/scenarios/lora-mistral-7b-a100-80gb.yaml")});
    QByteArray err;
    while (!err.contains("first paint") && app.waitForReadyRead(20000))
        err += app.readAllStandardError();
    QThread::msleep(1500); // the scenario opens after the first paint; queued work settles
    QCoreApplication::processEvents();
    const QString status = QStringLiteral("/proc/%1/status").arg(app.processId());
    const double rss = static_cast<double>(statusKb(status, "VmRSS")) / 1024.0;
    const double hwm = static_cast<double>(statusKb(status, "VmHWM")) / 1024.0;
    app.terminate();
    if (!app.waitForFinished(5000)) {
        app.kill();
        app.waitForFinished();
    }
    return {rss, hwm};
}

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    QCommandLineParser parser;
    parser.setApplicationDescription(
        QStringLiteral("membudget-gui start-up and memory (issue #6)"));
    parser.addHelpOption();
    parser.addOptions({
        {QStringLiteral("runs"),
         QStringLiteral("Timed launches (20), after one untimed."),
         QStringLiteral("N")},
        {QStringLiteral("memory-runs"),
         QStringLiteral("Launches for the memory figure (5)."),
         QStringLiteral("N")},
    });
    parser.process(app);
    const int runs = parser.isSet(QStringLiteral("runs"))
                         ? std::max(1, parser.value(QStringLiteral("runs")).toInt())
                         : 20;
    const int memoryRuns = parser.isSet(QStringLiteral("memory-runs"))
                               ? std::max(0, parser.value(QStringLiteral("memory-runs")).toInt())
                               : 5;

    QTemporaryDir dir;
    std::printf("membudget-gui start-up: %s\n", MEMBUDGET_GUI_EXE);
    std::vector<double> sinceLaunch, sinceMain, rssAtPaint;
    for (int i = 0; i <= runs; ++i) {
        QTemporaryDir runDir(dir.filePath(QStringLiteral("run-XXXXXX"))); // fresh settings each time
        const FirstPaint r = launchOnce(runDir.path());
        if (!r.ok)
            return 1;
        if (i == 0) { // page cache, font cache
            std::printf("untimed first launch: %.1f ms\n", r.sinceLaunchMs);
            continue;
        }
        sinceLaunch.push_back(r.sinceLaunchMs);
        sinceMain.push_back(r.sinceMainMs);
        rssAtPaint.push_back(r.rssMb);
    }
    printSummary("process start -> first paint", summarize(sinceLaunch), "ms", 400);
    printSummary("  of which main() -> first paint", summarize(sinceMain), "ms");
    printSummary("VmRSS at first paint", summarize(rssAtPaint), "MB");

    if (memoryRuns > 0) {
        std::vector<double> rss, hwm;
        for (int i = 0; i < memoryRuns; ++i) {
            QTemporaryDir runDir(dir.filePath(QStringLiteral("mem-XXXXXX")));
            const auto [r, h] = residentWithScenario(runDir.path());
            rss.push_back(r);
            hwm.push_back(h);
        }
        printSummary("VmRSS, scenario open (app)", summarize(rss), "MB", 120);
        printSummary("VmHWM, scenario open (app)", summarize(hwm), "MB");
    }
    return 0;
}
