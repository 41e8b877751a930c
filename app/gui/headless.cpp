// SPDX-License-Identifier: GPL-3.0-or-later
#include "headless.h"

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

namespace membudget {

namespace {

void printErr(const QString &text)
{
    std::fputs(qPrintable(text + QLatin1Char('\n')), stderr);
}

void printOut(const QString &text)
{
    const QByteArray utf8 = text.toUtf8();
    std::fwrite(utf8.constData(), 1, static_cast<std::size_t>(utf8.size()), stdout);
    std::fflush(stdout);
}

bool positiveInt(const QCommandLineParser &parser, const QString &name, int min, int max, int &out)
{
    if (!parser.isSet(name))
        return true;
    bool ok = false;
    const int v = parser.value(name).toInt(&ok);
    if (!ok || v < min || v > max) {
        printErr(
            QStringLiteral("membudget-gui: --%1 must be a whole number from %2 to %3, not '%4'")
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

int runExport(const QCommandLineParser &parser)
{
    const QString input = parser.value(QStringLiteral("export"));
    const QString output = parser.value(QStringLiteral("output"));
    if (input.isEmpty()) {
        printErr(QStringLiteral("membudget-gui: --export needs a scenario file"));
        return kExitUsage;
    }
    if (output.isEmpty()) {
        printErr(QStringLiteral("membudget-gui: --export needs -o OUT.png|svg|pdf"));
        return kExitUsage;
    }
    if (!exportFormatForPath(output)) {
        printErr(
            QStringLiteral("membudget-gui: cannot tell the format of '%1'; use .png, .svg or .pdf")
                .arg(output));
        return kExitUsage;
    }
    ExportOptions options;
    if (!positiveInt(parser, QStringLiteral("width"), 16, 20000, options.width)
        || !positiveInt(parser, QStringLiteral("height"), 16, 20000, options.height))
        return kExitUsage;
    if (parser.isSet(QStringLiteral("scale"))) {
        bool ok = false;
        options.scale = parser.value(QStringLiteral("scale")).toDouble(&ok);
        if (!ok || !(options.scale > 0) || options.scale > 16) {
            printErr(QStringLiteral(
                         "membudget-gui: --scale must be a number above 0 and at most 16, not '%1'")
                         .arg(parser.value(QStringLiteral("scale"))));
            return kExitUsage;
        }
    }
    const QStringList extra = parser.positionalArguments();
    if (!extra.isEmpty()) {
        printErr(QStringLiteral("membudget-gui: unexpected argument '%1' with --export")
                     .arg(extra.front()));
        return kExitUsage;
    }

    std::vector<LoadError> problems;
    const PresetCatalog catalog = ScenarioDocument::loadCatalog(&problems);
    for (const LoadError &p : problems)
        printErr(QStringLiteral("warning: %1").arg(QString::fromStdString(p.toString())));
    // A file, or the id of a bundled scenario (membudget presets scenarios) when no such file exists.
    LoadError error;
    std::optional<Scenario> scenario;
    const ScenarioPreset *preset = catalog.findScenario(input.toStdString());
    if (preset && !QFileInfo::exists(input))
        scenario = preset->scenario;
    else
        scenario = loadScenarioFile(input.toStdString(), error, &catalog);
    if (!scenario) {
        printErr(QString::fromStdString(error.toString()));
        return kExitBadInput;
    }
    std::string problem;
    if (!resolveScenario(*scenario, catalog, problem)) {
        LoadError e;
        e.file = input.toStdString();
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
    if (!exportPlot(chart.get(), output, options, &message)) {
        printErr(QStringLiteral("%1: %2").arg(output, message));
        return kExitBadInput;
    }
    return kExitOk;
}

int runWithoutDisplay()
{
    std::vector<LoadError> problems;
    const PresetCatalog catalog = ScenarioDocument::loadCatalog(&problems);
    for (const LoadError &p : problems)
        printErr(QStringLiteral("warning: %1").arg(QString::fromStdString(p.toString())));
    const Scenario scenario = defaultScenario();
    std::string problem;
    const auto input = resolveScenario(scenario, catalog, problem);
    if (!input) {
        printErr(QStringLiteral("membudget-gui: the default scenario cannot be estimated: %1")
                     .arg(QString::fromStdString(problem)));
        return kExitBadInput;
    }
    const MemoryEstimate estimate = estimateMemory(*input);
    std::vector<GpuSpec> gpus;
    for (const std::string &id : scenario.gpus)
        if (const GpuSpec *gpu = catalog.findGpu(id))
            gpus.push_back(*gpu);
    printErr(QStringLiteral(
        "membudget-gui: no display found (neither DISPLAY nor WAYLAND_DISPLAY is set); "
        "showing the default scenario instead of the window."));
    printOut(breakdownText(scenario, catalog, estimate, gpus, ByteUnit::GiB));

    const QString path = QDir::current().absoluteFilePath(QStringLiteral("membudget-chart.png"));
    auto chart = chartFor(scenario, catalog, ByteUnit::GiB);
    ExportOptions options;
    options.title = QString::fromStdString(scenario.name);
    options.caption = scenarioCaption(scenario, catalog, estimate);
    QString message;
    if (!exportPlot(chart.get(), path, options, &message)) {
        printErr(QStringLiteral("%1: %2").arg(path, message));
        return kExitBadInput;
    }
    printOut(QStringLiteral("\nChart written to %1\n").arg(QDir::toNativeSeparators(path)));
    return kExitOk;
}

} // namespace membudget
