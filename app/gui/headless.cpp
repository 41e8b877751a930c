// SPDX-License-Identifier: GPL-3.0-or-later
#include "headless.h"

#include "base/terminal_text.h"
#include "charts/budget_chart.h"
#include "charts/chart_export.h"
#include "document/scenario_document.h"
#include "document/scenario_name.h"
#include "io/scenario_yaml.h"
#include "panels/breakdown_table.h"

#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace membudget {

namespace {

// Texts from files reach the terminal only through escapeForTerminal (core/base/terminal_text.h).
void printErr(const QString &text)
{
    const std::string line = escapeForTerminal(text.toStdString(), LineBreaks::Escape) + "\n";
    std::fwrite(line.data(), 1, line.size(), stderr);
}

void printOut(const QString &text)
{
    const std::string out = escapeForTerminal(text.toStdString());
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
}

// Export errors name the command a user typed (membudget export runs this program).
const QString kExportPrefix = QStringLiteral("membudget export: ");

bool positiveInt(const QCommandLineParser &parser, const QString &name, int min, int max, int &out)
{
    if (!parser.isSet(name))
        return true;
    bool ok = false;
    const int v = parser.value(name).toInt(&ok);
    if (!ok || v < min || v > max) {
        printErr(
            QStringLiteral("membudget export: --%1 must be a whole number from %2 to %3, not '%4'")
                .arg(name)
                .arg(min)
                .arg(max)
                .arg(parser.value(name)));
        return false;
    }
    out = v;
    return true;
}

std::unique_ptr<BudgetChart> chartFor(const Scenario &scenario,
                                      const PresetCatalog &catalog,
                                      ByteUnit unit)
{
    auto chart = std::make_unique<BudgetChart>();
    useExportPalette(chart.get());
    chart->setUnit(unit);
    std::vector<GpuSpec> gpus;
    for (const std::string &id : scenario.gpus)
        if (const GpuSpec *gpu = catalog.findGpu(id))
            gpus.push_back(*gpu);
    chart->setContents({chartBarFor(QObject::tr("Current"),
                                    shortSummary(scenario),
                                    scenario,
                                    catalog)},
                       gpus);
    return chart;
}

} // namespace

bool argvRequestsExport(int argc, char **argv)
{
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--") == 0)
            break;
        if (std::strcmp(argv[i], "--export") == 0 || std::strncmp(argv[i], "--export=", 9) == 0)
            return true;
    }
    return false;
}

bool displayAvailable(int argc, char **argv)
{
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "-platform") == 0 || std::strcmp(argv[i], "--platform") == 0
            || std::strncmp(argv[i], "-platform=", 10) == 0)
            return true;
    auto set = [](const char *name) {
        const char *v = std::getenv(name);
        return v && *v;
    };
    return set("QT_QPA_PLATFORM") || set("DISPLAY") || set("WAYLAND_DISPLAY");
}

void addCommandLineOptions(QCommandLineParser &parser)
{
    parser.setApplicationDescription(QObject::tr(
        "MemBudget: GPU memory budgets for training and fine-tuning large language models.\n"
        "Without options, opens the desktop application (with FILE, opens that scenario)."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("file"),
                                 QObject::tr("Scenario to open (.yaml)"),
                                 QStringLiteral("[FILE]"));
    parser.addOptions({
        {QStringLiteral("export"),
         QObject::tr("Render SCENARIO's chart to a file without a display."),
         QStringLiteral("SCENARIO")},
        {{QStringLiteral("o"), QStringLiteral("output")},
         QObject::tr("The file to write: .png, .svg or .pdf."),
         QStringLiteral("OUT")},
        {QStringLiteral("width"),
         QObject::tr("Width in pixels (default 1200)."),
         QStringLiteral("W")},
        {QStringLiteral("height"),
         QObject::tr("Height in pixels (default 700)."),
         QStringLiteral("H")},
        {QStringLiteral("scale"),
         QObject::tr("PNG pixel scale for high-DPI (default 1)."),
         QStringLiteral("S")},
        {QStringLiteral("title"),
         QObject::tr("Title above the chart (default: the scenario's name)."),
         QStringLiteral("T")},
        {QStringLiteral("caption"),
         QObject::tr("Caption below the chart (default: a sentence stating the scenario)."),
         QStringLiteral("C")},
        {QStringLiteral("gib"), QObject::tr("Binary units, GiB (the default).")},
        {QStringLiteral("gb"), QObject::tr("Decimal units, GB, instead of GiB.")},
    });
}

int runExport(const QCommandLineParser &parser, const NativeArguments &native)
{
    const QString input = parser.value(QStringLiteral("export"));
    const QString output = parser.value(QStringLiteral("output"));
    if (input.isEmpty()) {
        printErr(kExportPrefix + QStringLiteral("needs a scenario file"));
        return kExitUsage;
    }
    if (output.isEmpty()) {
        printErr(kExportPrefix + QStringLiteral("needs -o OUT.png|svg|pdf"));
        return kExitUsage;
    }
    const auto format = exportFormatForPath(output);
    if (!format) {
        printErr(
            kExportPrefix
            + QStringLiteral("cannot tell the format of '%1'; use .png, .svg or .pdf").arg(output));
        return kExitUsage;
    }
    ExportOptions options;
    if (!positiveInt(parser, QStringLiteral("width"), kMinExportSide, kMaxExportSide, options.width)
        || !positiveInt(parser,
                        QStringLiteral("height"),
                        kMinExportSide,
                        kMaxExportSide,
                        options.height))
        return kExitUsage;
    if (parser.isSet(QStringLiteral("scale"))) {
        bool ok = false;
        options.scale = parser.value(QStringLiteral("scale")).toDouble(&ok);
        if (!ok || !(options.scale >= kMinExportScale && options.scale <= kMaxExportScale)) {
            printErr(kExportPrefix
                     + QStringLiteral("--scale must be a number from %1 to %2, not '%3'")
                           .arg(kMinExportScale)
                           .arg(kMaxExportScale)
                           .arg(parser.value(QStringLiteral("scale"))));
            return kExitUsage;
        }
    }
    if (const QString problem = exportSizeProblem(options, *format); !problem.isEmpty()) {
        printErr(kExportPrefix + problem);
        return kExitUsage;
    }
    const QStringList extra = parser.positionalArguments();
    if (!extra.isEmpty()) {
        printErr(kExportPrefix + QStringLiteral("unexpected argument '%1'").arg(extra.front()));
        return kExitUsage;
    }

    std::vector<LoadError> problems;
    const PresetCatalog catalog = ScenarioDocument::loadCatalog(&problems);
    for (const LoadError &p : problems)
        printErr(QStringLiteral("warning: %1 (user preset skipped)")
                     .arg(QString::fromStdString(p.toString())));
    // A file, or the id of a bundled scenario (membudget presets scenarios) when no such file exists.
    LoadError error;
    const std::string inputPath = native.path(input);
    std::optional<Scenario> scenario;
    std::error_code ec;
    if (!std::filesystem::exists(inputPath, ec) && catalog.findScenario(inputPath))
        scenario = catalog.findScenario(inputPath)->scenario;
    else
        scenario = loadScenarioFile(inputPath, error, &catalog);
    if (!scenario) {
        printErr(QString::fromStdString(error.toString()));
        return kExitBadInput;
    }
    std::string problem;
    if (!resolveScenario(*scenario, catalog, problem)) {
        LoadError e;
        e.file = inputPath;
        e.message = problem;
        printErr(QString::fromStdString(e.toString()));
        return kExitBadInput;
    }
    if (parser.isSet(QStringLiteral("gib")) && parser.isSet(QStringLiteral("gb"))) {
        printErr(QStringLiteral("membudget-gui: --gib and --gb exclude each other"));
        return kExitUsage;
    }
    const ByteUnit unit = parser.isSet(QStringLiteral("gb")) ? ByteUnit::GB : ByteUnit::GiB;
    auto chart = chartFor(*scenario, catalog, unit);
    // Unnamed: named after its settings, as the app names it.
    options.title = parser.isSet(QStringLiteral("title"))
                        ? parser.value(QStringLiteral("title"))
                        : (scenario->name.empty() ? derivedScenarioName(*scenario, catalog)
                                                  : QString::fromStdString(scenario->name));
    options.caption = parser.isSet(QStringLiteral("caption"))
                          ? parser.value(QStringLiteral("caption"))
                          : scenarioCaption(*scenario, catalog, chart->bars().front().estimate);
    QString message;
    if (!exportPlot(chart.get(), native.path(output), options, &message)) {
        printErr(kExportPrefix + message);
        return kExitBadInput;
    }
    return kExitOk;
}

int runWithoutDisplay()
{
    std::vector<LoadError> problems;
    const PresetCatalog catalog = ScenarioDocument::loadCatalog(&problems);
    for (const LoadError &p : problems)
        printErr(QStringLiteral("warning: %1 (user preset skipped)")
                     .arg(QString::fromStdString(p.toString())));
    const Scenario scenario = defaultScenario();
    std::string problem;
    const auto input = resolveScenario(scenario, catalog, problem);
    if (!input) {
        printErr(QStringLiteral("membudget-gui: the default scenario cannot be estimated: %1")
                     .arg(QString::fromStdString(problem)));
        return kExitBadInput;
    }
    const StepModel model(*input);
    const MemoryEstimate estimate = model.estimate();
    std::vector<GpuSpec> gpus;
    for (const std::string &id : scenario.gpus)
        if (const GpuSpec *gpu = catalog.findGpu(id))
            gpus.push_back(*gpu);
    printErr(QStringLiteral(
        "membudget-gui: no display found (neither DISPLAY nor WAYLAND_DISPLAY is set); "
        "showing the default scenario instead of the window."));
    printOut(breakdownText(scenario, catalog, model, estimate, gpus, ByteUnit::GiB));

    const QString path = QDir::current().absoluteFilePath(QStringLiteral("membudget-chart.png"));
    auto chart = chartFor(scenario, catalog, ByteUnit::GiB);
    ExportOptions options;
    options.title = QString::fromStdString(scenario.name);
    options.caption = scenarioCaption(scenario, catalog, estimate);
    QString message;
    if (!exportPlot(chart.get(), path, options, &message)) {
        printErr(QStringLiteral("membudget-gui: %1").arg(message));
        return kExitBadInput;
    }
    printOut(QStringLiteral("\nChart written to %1\n").arg(QDir::toNativeSeparators(path)));
    return kExitOk;
}

} // namespace membudget
