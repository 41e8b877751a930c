// SPDX-License-Identifier: GPL-3.0-or-later
// membudget-gui: the MemBudget desktop application (and its display-less export mode).
#include "headless.h"
#include "main_window.h"
#include "scenario_document.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QIcon>
#include <QTimer>

#include <cstdio>

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

} // namespace

int main(int argc, char **argv)
{
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

    QCommandLineParser parser;
    addCommandLineOptions(parser);
    if (!parser.parse(QApplication::arguments())) {
        std::fprintf(stderr, "membudget-gui: %s\n", qPrintable(parser.errorText()));
        return kExitUsage;
    }
    if (parser.isSet(QStringLiteral("help")))
        parser.showHelp(kExitOk);
    if (parser.isSet(QStringLiteral("version")))
        parser.showVersion();

    if (parser.isSet(QStringLiteral("export")))
        return runExport(parser);
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
    window.show();
    const QStringList files = parser.positionalArguments();
    if (!files.isEmpty())
        QTimer::singleShot(0, &window, [&window, file = files.front()] { window.openFile(file); });
    return QApplication::exec();
}
