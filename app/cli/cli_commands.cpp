// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli_commands.h"

#include "advice/fit_advisor.h"
#include "advice/gpu_verdict.h"
#include "advice/technique_ladder.h"
#include "base/byte_format.h"
#include "base/terminal_text.h"
#include "base/time_format.h"
#include "base/utf8.h"
#include "estimate_table.h"
#include "export/training_export.h"
#include "hub/hub_model_ref.h"
#include "hub_config_fetch.h"
#include "io/atomic_file.h"
#include "io/estimate_json.h"
#include "io/hf_config_import.h"
#include "io/input_file.h"
#include "io/scenario_yaml.h"
#include "model/memory_estimator.h"
#include "model/parameter_layout.h"
#include "model/step_model.h"
#include "model/timeline_series.h"
#include "snapshot/comparison_json.h"
#include "snapshot/snapshot_file.h"
#include "snapshot/snapshot_json.h"
#include "snapshot_report.h"
#include "throughput/throughput_model.h"
#include "user_presets.h"

#include <QCoreApplication>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <sys/wait.h>
#include <unistd.h>

namespace membudget::cli {

namespace {

// Every text the command line prints may hold names, ids and descriptions from files: it reaches
// the terminal only through escapeForTerminal.
void print(std::ostream &out, const std::string &text)
{
    out << escapeForTerminal(text);
}

// JSON output is ASCII: every other character a \u escape, so no control, bidi or invisible
// character from a file reaches a terminal even when the JSON is read there (JSON parsers decode
// the escapes).
std::string jsonText(const nlohmann::json &j)
{
    return j.dump(2, ' ', true, nlohmann::json::error_handler_t::replace) + "\n";
}

void printProblems(const std::vector<LoadError> &problems)
{
    for (const LoadError &e : problems)
        std::cerr << "warning: " << e.toString() << " (user preset skipped)\n";
}

// Loads and resolves a scenario file, or the bundled (or user) scenario of that id when no such
// file exists (`membudget presets scenarios` lists the ids); prints `file:line:col: message` and
// returns false on any problem.
bool loadResolved(const std::string &file,
                  const PresetCatalog &catalog,
                  Scenario &scenario,
                  EstimateInput &input)
{
    LoadError error;
    std::optional<Scenario> loaded;
    std::error_code ec;
    const ScenarioPreset *preset = catalog.findScenario(file);
    if (preset && !std::filesystem::exists(file, ec))
        loaded = preset->scenario;
    else
        loaded = loadScenarioFile(file, error, &catalog);
    if (!loaded) {
        std::cerr << error.toString() << "\n";
        return false;
    }
    std::string problem;
    auto resolved = resolveScenario(*loaded, catalog, problem);
    if (!resolved) {
        error.message = problem;
        std::cerr << error.toString() << "\n";
        return false;
    }
    scenario = *loaded;
    input = *resolved;
    return true;
}

// The GPUs of --gpu (or of the scenario): kExitOk, or the exit code after printing why not.
int collectGpus(const PresetCatalog &catalog,
                const std::vector<std::string> &ids,
                std::vector<GpuSpec> &out)
{
    if (ids.size() > kMaxScenarioGpus) {
        print(std::cerr,
              "membudget: at most " + std::to_string(kMaxScenarioGpus) + " GPUs (--gpu given "
                  + std::to_string(ids.size()) + " times)\n");
        return kExitUsage;
    }
    std::set<std::string> seen;
    for (const std::string &id : ids) {
        if (!seen.insert(id).second) {
            print(std::cerr, "membudget: --gpu " + id + " is given twice\n");
            return kExitUsage;
        }
        const GpuSpec *g = catalog.findGpu(id);
        if (!g) {
            std::string message = "unknown GPU '" + id + "'";
            const auto near = catalog.suggestGpus(id);
            if (!near.empty())
                message += "; did you mean " + near.front() + "?";
            print(std::cerr, message + " (membudget presets gpus lists them)\n");
            return kExitBadInput;
        }
        out.push_back(*g);
    }
    return kExitOk;
}

// PyTorch memory snapshots are pickles: .pickle, .pkl (what _dump_snapshot's users name them).
bool isSnapshotFileName(const std::string &file)
{
    const std::string ext = std::filesystem::path(file).extension().string();
    return ext == ".pickle" || ext == ".pkl" || ext == ".PICKLE" || ext == ".PKL";
}

// Reads and analyses a snapshot as `membudget snapshot` would; false with `error` on any problem.
bool checkSnapshotFile(const std::string &file, LoadError &error)
{
    const auto snap = snapshot::loadMemorySnapshotFile(file, error);
    if (!snap)
        return false;
    snapshot::SnapshotAnalysis analysis;
    if (!snapshot::analyzeSnapshot(*snap, -1, 1, analysis, error.message))
        return false;
    return true;
}

// --stage N (1-based) picks the pipeline stage the estimate shows: kExitOk, or kExitUsage after
// printing why the scenario has no such stage.
int choosePipelineStage(int stage, EstimateInput &input)
{
    if (stage <= 0)
        return kExitOk;
    const std::int64_t stages = input.parallelism.pipeline_parallel;
    if (stages <= 1) {
        print(std::cerr,
              "membudget: --stage " + std::to_string(stage)
                  + ": the scenario runs no pipeline (parallelism.pipeline_parallel is 1)\n");
        return kExitUsage;
    }
    if (stage > stages) {
        print(std::cerr,
              "membudget: --stage " + std::to_string(stage) + ": the pipeline has stages 1 to "
                  + std::to_string(stages) + "\n");
        return kExitUsage;
    }
    input.pipeline_stage = stage - 1;
    return kExitOk;
}

} // namespace

int runEstimate(const EstimateOptions &o)
{
    std::vector<LoadError> problems;
    const PresetCatalog catalog = loadCatalog(problems);
    printProblems(problems);
    Scenario scenario;
    EstimateInput input;
    if (!loadResolved(o.file, catalog, scenario, input))
        return kExitBadInput;
    std::vector<GpuSpec> gpus;
    if (const int rc = collectGpus(catalog, o.gpus.empty() ? scenario.gpus : o.gpus, gpus))
        return rc;
    if (const int rc = choosePipelineStage(o.stage, input))
        return rc;
    const MemoryEstimate est = estimateMemory(input);
    if (o.json)
        std::cout << jsonText(estimateToJson(scenario, input, est, gpus, o.timeline));
    else
        print(std::cout, estimateTable(scenario, input, est, gpus, o.unit));
    return kExitOk;
}

int runFit(const FitOptions &o)
{
    std::vector<LoadError> problems;
    const PresetCatalog catalog = loadCatalog(problems);
    printProblems(problems);
    Scenario scenario;
    EstimateInput input;
    if (!loadResolved(o.file, catalog, scenario, input))
        return kExitBadInput;
    std::vector<GpuSpec> gpus;
    if (const int rc = collectGpus(catalog, o.gpus.empty() ? scenario.gpus : o.gpus, gpus))
        return rc;
    if (gpus.empty()) {
        std::cerr << "fit needs a GPU: --gpu ID, or gpus: [...] in the scenario\n";
        return kExitUsage;
    }
    const MemoryEstimate est = estimateMemory(input);
    const ByteUnit unit = o.unit;
    const auto bytes = [unit](Bytes b) { return formatBytes(b, unit); };
    nlohmann::json all = nlohmann::json::array();
    std::string text;
    bool someGpuWithoutFit = false;
    for (const GpuSpec &g : gpus) {
        // "Fits" is the three-way verdict's (gpu_verdict.h): a tight run gets suggestions too.
        const GpuVerdict verdict = gpuVerdict(input, g.memory_bytes, unit);
        const bool fits = verdict.verdict == FitVerdict::Fits;
        const auto suggestions = fits ? std::vector<FitSuggestion>{}
                                      : suggestFits(input, g, o.limit);
        someGpuWithoutFit = someGpuWithoutFit || (!fits && suggestions.empty());
        if (o.json) {
            nlohmann::json j;
            j["gpu"] = g.id;
            j["capacity"] = g.memory_bytes;
            j["device_total"] = est.device_total;
            j["fits"] = fits;
            j["verdict"] = verdictKey(verdict.verdict);
            nlohmann::json list = nlohmann::json::array();
            for (const FitSuggestion &s : suggestions)
                list.push_back({{"changes", s.changes},
                                {"changes_result", s.result_changes},
                                {"slowdown", s.slowdown},
                                {"step_seconds", s.step_seconds},
                                {"tokens_per_second", s.tokens_per_second},
                                {"verdict", verdictKey(s.verdict)},
                                {"device_total", s.device_total},
                                {"headroom", s.headroom},
                                {"cpu_offload_bytes", s.cpu_offload_bytes}});
            j["suggestions"] = list;
            all.push_back(j);
            continue;
        }
        text += g.id + " (" + formatCapacity(g.memory_bytes, unit) + "): ";
        if (fits) {
            text += "fits already, " + bytes(g.memory_bytes - est.device_total) + " to spare.\n";
            continue;
        }
        if (isSaturated(est.device_total))
            text += "needs more than can be represented (over 4 EiB).\n";
        else if (est.device_total <= g.memory_bytes)
            text += "tight, needs " + bytes(est.device_total) + ": " + verdict.reason + ".\n";
        else
            text += "needs " + bytes(est.device_total) + ", "
                    + bytes(est.device_total - g.memory_bytes) + " too much.\n";
        if (suggestions.empty()) {
            text += "  No combination of techniques makes it fit: use more GPUs, a smaller model "
                    "or shorter sequences.\n";
            continue;
        }
        int i = 1;
        bool resultHeading = false;
        for (const FitSuggestion &s : suggestions) {
            if (s.changesResult() && !resultHeading) {
                text += "  These change what is trained, not only how fast:\n";
                resultHeading = true;
            }
            text += "  " + std::to_string(i++) + ". " + formatFixed(s.slowdown, 2)
                    + "x time per token, " + formatRate(s.tokens_per_second) + " tokens/s, "
                    + bytes(s.device_total) + " (" + bytes(s.headroom) + " spare)";
            if (s.cpu_offload_bytes > 0)
                text += ", " + bytes(s.cpu_offload_bytes) + " of CPU RAM";
            if (s.verdict == FitVerdict::Tight)
                text += ", tight (runs, with little room)";
            text += ":\n";
            for (const std::string &c : s.changes) {
                const bool changesResult = std::find(s.result_changes.begin(),
                                                     s.result_changes.end(),
                                                     c)
                                           != s.result_changes.end();
                text += "       - " + c + (changesResult ? " [changes the result]" : "") + "\n";
            }
        }
    }
    if (o.json)
        std::cout << jsonText(all);
    else
        print(std::cout, text);
    return someGpuWithoutFit ? kExitNoFit : kExitOk;
}

int runLadder(const std::string &file, bool json, ByteUnit unit, const std::string &gpuId)
{
    std::vector<LoadError> problems;
    const PresetCatalog catalog = loadCatalog(problems);
    printProblems(problems);
    Scenario scenario;
    EstimateInput input;
    if (!loadResolved(file, catalog, scenario, input))
        return kExitBadInput;
    // Step times on the GPU asked for, else the scenario's first; none without a GPU.
    std::vector<GpuSpec> gpus;
    const std::string id = gpuId.empty() && !scenario.gpus.empty() ? scenario.gpus.front() : gpuId;
    if (!id.empty())
        if (const int rc = collectGpus(catalog, {id}, gpus))
            return rc;
    const GpuSpec *gpu = gpus.empty() ? nullptr : &gpus.front();
    const auto steps = techniqueLadder(input);
    nlohmann::json list = nlohmann::json::array();
    Bytes previous = 0;
    double previousRate = 0;
    if (!json) {
        std::string header;
        if (gpu)
            header += "Time per token on " + gpu->name + " (modelled).\n";
        header += padded("Step", 20) + " " + padded("Device total", 14, true) + " "
                  + padded("Change", 14, true) + "  " + padded("Peak phase", 15) + " "
                  + padded("Tokens/s", 12, true) + " " + padded("Time/tok", 8, true)
                  + "  What changed\n";
        print(std::cout, header);
    }
    for (const LadderStep &s : steps) {
        const MemoryEstimate e = estimateMemory(s.input);
        ThroughputEstimate t;
        if (gpu)
            t = estimateThroughput(s.input, gpu->performance);
        if (json) {
            nlohmann::json step = {{"step", s.label},
                                   {"detail", s.detail},
                                   {"peak_allocated", e.peak_allocated},
                                   {"device_total", e.device_total},
                                   {"peak_phase", phaseKey(e.peak_phase)}};
            if (t.valid) {
                step["step_seconds"] = t.step_seconds;
                step["tokens_per_second"] = t.tokens_per_second;
            }
            list.push_back(step);
        } else {
            const std::string change = previous == 0
                                           ? std::string()
                                           : formatByteChange(previous, e.device_total, unit);
            // Time per token against the step before: +25% is a quarter slower.
            std::string time;
            if (t.valid && previousRate > 0) {
                const double percent = 100 * (previousRate / t.tokens_per_second - 1);
                const std::string rounded = formatFixed(percent, 0); // "-12", "0", never "-0"
                time = (percent > 0 && rounded != "0" ? "+" : "") + rounded + "%";
            }
            print(std::cout,
                  padded(s.label, 20) + " " + padded(formatBytes(e.device_total, unit), 14, true)
                      + " " + padded(change, 14, true) + "  " + padded(phaseLabel(e.peak_phase), 15)
                      + " " + padded(t.valid ? formatRate(t.tokens_per_second) : "", 12, true) + " "
                      + padded(time, 8, true) + "  " + s.detail + "\n");
        }
        previous = e.device_total;
        previousRate = t.valid ? t.tokens_per_second : 0;
    }
    if (json)
        std::cout << jsonText(list);
    return kExitOk;
}

namespace {

// The estimate of `o.scenario` held against the analysed snapshot (and, with --calibrate, the
// scenario's overheads calibrated from it).
struct Beside
{
    Scenario scenario;
    EstimateInput input;
    EstimateBeside shown;
};

bool estimateBeside(const SnapshotOptions &o,
                    const snapshot::MemorySnapshot &snap,
                    const snapshot::SnapshotAnalysis &analysis,
                    Beside &b)
{
    std::vector<LoadError> problems;
    const PresetCatalog catalog = loadCatalog(problems);
    printProblems(problems);
    if (!loadResolved(o.scenario, catalog, b.scenario, b.input))
        return false;
    const StepModel model(b.input);
    const MemoryEstimate est = model.estimate();
    const TimelineSeries series = timelineSeries(model,
                                                 b.input.training.micro_batch_size,
                                                 b.input.training.sequence_length);
    const snapshot::TracePhases phases = snapshot::traceStages(snap, analysis.device);
    b.shown = EstimateBeside{o.scenario,
                             b.scenario.name,
                             est,
                             snapshot::compareWithEstimate(analysis, phases, series, est),
                             {}};
    b.shown.findings = snapshot::comparisonFindings(b.shown.comparison, est, o.unit);
    return true;
}

// Writes the calibrated scenario to `o.output` (standard output for "" or "-").
bool writeCalibrated(const SnapshotOptions &o, const Scenario &scenario)
{
    if (o.output.empty() || o.output == "-") {
        print(std::cout, scenarioToYaml(scenario));
        return true;
    }
    std::string problem;
    if (!saveScenarioFile(scenario, o.output, problem)) {
        print(std::cerr, "membudget: " + escapeForTerminal(problem, LineBreaks::Escape) + "\n");
        return false;
    }
    return true;
}

} // namespace

int runSnapshot(const SnapshotOptions &o)
{
    LoadError error;
    const auto snap = snapshot::loadMemorySnapshotFile(o.file, error);
    if (!snap) {
        std::cerr << error.toString() << "\n";
        return kExitBadInput;
    }
    snapshot::SnapshotAnalysis analysis;
    std::string problem;
    if (!snapshot::analyzeSnapshot(*snap,
                                   o.device,
                                   static_cast<std::size_t>(o.top),
                                   analysis,
                                   problem)) {
        error.message = problem;
        std::cerr << error.toString() << "\n";
        return kExitBadInput;
    }
    // The recorded requests through MemBudget's caching-allocator model (core/allocator).
    std::optional<snapshot::SnapshotReplay> replay;
    if (analysis.replay)
        replay = snapshot::replaySnapshot(*snap,
                                          *analysis.replay,
                                          o.capacity,
                                          /*attemptOoms=*/o.capacity != kBytesMax);
    const ByteUnit unit = o.unit;
    std::optional<Beside> beside;
    if (!o.scenario.empty()) {
        beside.emplace();
        if (!estimateBeside(o, *snap, analysis, *beside))
            return kExitBadInput;
    }
    std::optional<snapshot::SnapshotCalibration> calibration;
    if (o.calibrate && beside) {
        calibration
            = snapshot::calibrateOverheads(beside->input, *snap, beside->shown.comparison, unit);
        Scenario calibrated = beside->scenario;
        calibrated.overheads = calibration->overheads;
        if (!writeCalibrated(o, calibrated))
            return kExitBadInput;
    }
    // With the calibrated scenario on standard output, the report goes to standard error.
    const bool yamlOnStdout = calibration && (o.output.empty() || o.output == "-");
    std::ostream &report = yamlOnStdout ? std::cerr : std::cout;
    if (!o.json) {
        std::string text = snapshotReport(o.file,
                                          *snap,
                                          analysis,
                                          replay,
                                          beside ? std::optional<EstimateBeside>(beside->shown)
                                                 : std::nullopt,
                                          unit);
        if (calibration)
            text += calibrationReport(*calibration, yamlOnStdout ? "" : o.output);
        print(report, text);
        return kExitOk;
    }
    nlohmann::json j = snapshot::snapshotToJson(o.file, *snap, analysis);
    snapshot::addReplayJson(j, analysis, replay);
    if (beside) {
        j["estimate"] = estimateToJson(beside->scenario, beside->input, beside->shown.estimate, {});
        j["comparison"] = snapshot::comparisonToJson(beside->shown.comparison,
                                                     beside->shown.estimate,
                                                     beside->shown.findings);
    }
    if (calibration) {
        j["calibration"] = snapshot::calibrationToJson(*calibration);
        j["calibration"]["written"] = yamlOnStdout ? nlohmann::json(nullptr)
                                                   : nlohmann::json(o.output);
    }
    report << jsonText(j);
    return kExitOk;
}

int runPresets(const std::string &what, bool json, ByteUnit unit)
{
    std::vector<LoadError> problems;
    const PresetCatalog catalog = loadCatalog(problems);
    printProblems(problems);
    const bool models = what.empty() || what == "models";
    const bool gpus = what.empty() || what == "gpus";
    const bool scenarios = what.empty() || what == "scenarios";
    if (!models && !gpus && !scenarios) {
        print(std::cerr, "unknown preset kind '" + what + "'; expected models, gpus or scenarios\n");
        return kExitUsage;
    }
    if (json) {
        nlohmann::json j;
        if (models) {
            j["models"] = nlohmann::json::array();
            for (const ModelPreset &m : catalog.models())
                j["models"].push_back({{"id", m.id},
                                       {"name", m.name},
                                       {"parameters", toCount(parameterLayout(m.arch).total)},
                                       {"source", m.source}});
        }
        if (gpus) {
            j["gpus"] = nlohmann::json::array();
            for (const GpuSpec &g : catalog.gpus())
                j["gpus"].push_back(
                    {{"id", g.id},
                     {"name", g.name},
                     {"vendor", g.vendor},
                     {"memory_bytes", g.memory_bytes},
                     {"driver_total_bytes",
                      g.cudaTotalKnown() ? g.driver_total_bytes : g.memory_bytes},
                     {"cuda_total_known", g.cudaTotalKnown()},
                     {"architecture", gpuArchitectureName(g.performance.architecture)},
                     {"compute_capability",
                      g.performance.compute_capability.known()
                          ? nlohmann::json(computeCapabilityName(g.performance.compute_capability))
                          : nlohmann::json(nullptr)}});
        }
        if (scenarios) {
            j["scenarios"] = nlohmann::json::array();
            for (const ScenarioPreset &s : catalog.scenarios())
                j["scenarios"].push_back({{"id", s.id}, {"name", s.scenario.name}});
        }
        std::cout << jsonText(j);
        return kExitOk;
    }
    std::string text;
    if (models) {
        text += "Models (" + std::to_string(catalog.models().size()) + "):\n";
        for (const ModelPreset &m : catalog.models())
            text += "  " + padded(m.id, 32) + " "
                    + padded(formatFixed(parameterLayout(m.arch).total / 1e9, 2), 9, true) + "B  "
                    + m.name + "\n";
    }
    if (gpus) {
        text += std::string(models ? "\n" : "") + "GPUs (" + std::to_string(catalog.gpus().size())
                + "):\n";
        for (const GpuSpec &g : catalog.gpus())
            text += "  " + padded(g.id, 22) + " "
                    + padded(formatCapacity(g.memory_bytes, unit), 10, true)
                    + (g.cudaTotalKnown() ? " usable  " : "         ") + g.name + "\n";
        text += "(usable: the total CUDA reports, at or below the driver's; the others show the "
                "driver's total)\n";
    }
    if (scenarios) {
        text += std::string((models || gpus) ? "\n" : "") + "Scenarios ("
                + std::to_string(catalog.scenarios().size()) + "):\n";
        for (const ScenarioPreset &s : catalog.scenarios())
            text += "  " + padded(s.id, 36) + " " + s.scenario.name + "\n";
    }
    print(std::cout, text);
    return kExitOk;
}

int runValidate(const std::vector<std::string> &files)
{
    std::vector<LoadError> problems;
    const PresetCatalog catalog = loadCatalog(problems);
    printProblems(problems);
    int rc = kExitOk;
    for (const std::string &f : files) {
        LoadError error;
        if (isSnapshotFileName(f)) {
            if (checkSnapshotFile(f, error)) {
                print(std::cout,
                      escapeForTerminal(f, LineBreaks::Escape) + ": ok (memory snapshot)\n");
            } else {
                std::cerr << error.toString() << "\n";
                rc = kExitBadInput;
            }
            continue;
        }
        InputFileKind kind = InputFileKind::Scenario;
        if (checkInputFile(f, catalog, error, &kind)) {
            print(std::cout,
                  escapeForTerminal(f, LineBreaks::Escape) + ": ok (" + inputFileKindName(kind)
                      + ")\n");
        } else {
            std::cerr << error.toString() << "\n";
            rc = kExitBadInput;
        }
    }
    return rc;
}

namespace {

// Where import-config reads from: "hf:" and web addresses always mean the Hub; an existing file or
// folder is read from disk; otherwise an owner/name id means the Hub.
bool isHubSource(const std::string &source)
{
    const std::string lower = [&] {
        std::string l = source;
        for (char &c : l)
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return l;
    }();
    if (lower.rfind("hf:", 0) == 0 || lower.rfind("http://", 0) == 0
        || lower.rfind("https://", 0) == 0)
        return true;
    std::error_code ec;
    if (std::filesystem::exists(source, ec))
        return false;
    return looksLikeHubReference(source);
}

int writeImported(const Scenario &s, const std::string &output)
{
    if (output.empty() || output == "-") {
        print(std::cout, scenarioToYaml(s));
        return kExitOk;
    }
    std::string problem;
    if (!saveScenarioFile(s, output, problem)) {
        print(std::cerr, "membudget: " + escapeForTerminal(problem, LineBreaks::Escape) + "\n");
        return kExitBadInput;
    }
    print(std::cout, "wrote " + escapeForTerminal(output, LineBreaks::Escape) + "\n");
    return kExitOk;
}

int importFromHub(const ImportOptions &o)
{
    // Qt Network needs an application object and an event loop (the command line has none).
    static int argc = 1;
    static char name[] = "membudget";
    static char *argv[] = {name, nullptr};
    std::unique_ptr<QCoreApplication> app;
    if (!QCoreApplication::instance())
        app = std::make_unique<QCoreApplication>(argc, argv);
    HubSettings settings;
    QString problem;
    if (!hubSettingsFromEnvironment(settings, problem)) {
        std::cerr << problem.toStdString() << "\n";
        return kExitBadInput;
    }
    for (const QString &w : std::as_const(settings.warnings))
        std::cerr << "warning: " << w.toStdString() << "\n";
    std::string why;
    const auto ref = parseHubModelRef(o.source, settings.extraHosts(), why);
    if (!ref) {
        std::cerr << why << "\n";
        return kExitBadInput;
    }
    settings.offline = settings.offline || o.offline;
    settings.timeoutMs = static_cast<int>(o.timeoutSeconds * 1000);
    const HubFetchResult result = fetchHubConfig(settings, *ref);
    std::cerr << result.message.toStdString() << "\n";
    if (!result.ok())
        return kExitBadInput;
    Scenario s = defaultScenario();
    s.model = *result.spec;
    s.model.source = ref->toString();
    s.name = ref->repoId;
    return writeImported(s, o.output);
}

} // namespace

int runImportConfig(const ImportOptions &o)
{
    if (isHubSource(o.source))
        return importFromHub(o);
    std::string path = o.source;
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) // a downloaded model folder
        path = (std::filesystem::path(path) / "config.json").string();
    LoadError error;
    auto spec = importHfConfigFile(path, error);
    if (!spec) {
        std::cerr << error.toString() << "\n";
        return kExitBadInput;
    }
    Scenario s = defaultScenario();
    s.model = *spec;
    // The name comes from the folder (a model's name, as Hugging Face downloads lay them out),
    // whose bytes may be in any encoding: made valid UTF-8 first.
    s.name = validUtf8(std::filesystem::path(path).parent_path().filename().string());
    if (s.name.empty())
        s.name = "Imported model";
    return writeImported(s, o.output);
}

int runExportConfig(const ExportConfigOptions &o)
{
    TrainingFormat format = TrainingFormat::Trainer;
    if (!parseTrainingFormat(o.format, format)) {
        std::cerr << "unknown format '" << o.format
                  << "'; expected trainer, sft, accelerate or deepspeed\n";
        return kExitUsage;
    }
    std::vector<LoadError> problems;
    const PresetCatalog catalog = loadCatalog(problems);
    printProblems(problems);
    Scenario scenario;
    EstimateInput input;
    if (!loadResolved(o.file, catalog, scenario, input))
        return kExitBadInput;
    std::string problem;
    const auto exported = exportTrainingConfig(scenario, catalog, format, problem);
    if (!exported) {
        print(std::cerr, escapeForTerminal(o.file, LineBreaks::Escape) + ": " + problem + "\n");
        return kExitBadInput;
    }
    // JSON has no comments: what the file cannot say is printed here, as the other formats'
    // headers say it.
    for (const std::string &note : exported->notes)
        print(std::cerr, "note: " + escapeForTerminal(note, LineBreaks::Keep) + "\n");
    if (o.output.empty() || o.output == "-") {
        print(std::cout, exported->text);
        return kExitOk;
    }
    std::string why;
    if (!writeFileAtomically(o.output, exported->text, why)) {
        print(std::cerr, "membudget: " + escapeForTerminal(why, LineBreaks::Escape) + "\n");
        return kExitBadInput;
    }
    print(std::cout, "wrote " + escapeForTerminal(o.output, LineBreaks::Escape) + "\n");
    return kExitOk;
}

int runExport(const std::string &self, const ExportOptions &o)
{
    // "--name=value" throughout: a value that starts with '-' (a title, a file name) stays a value.
    std::vector<std::string> args = {"--export=" + o.scenario, "--output=" + o.output};
    const std::pair<const char *, const std::optional<std::string> *> options[]
        = {{"--width=", &o.width},
           {"--height=", &o.height},
           {"--scale=", &o.scale},
           {"--title=", &o.title},
           {"--caption=", &o.caption}};
    for (const auto &[name, value] : options)
        if (*value)
            args.push_back(name + **value);
    if (o.gib)
        args.push_back("--gib");
    if (o.gb)
        args.push_back("--gb");
    return runGui(self, args);
}

int runGui(const std::string &self, const std::vector<std::string> &args)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::path exe = fs::canonical("/proc/self/exe", ec);
    if (ec)
        exe = fs::path(self);
    std::vector<fs::path> candidates = {exe.parent_path() / "membudget-gui",
                                        exe.parent_path().parent_path() / "gui" / "membudget-gui"};
    fs::path gui;
    for (const fs::path &c : candidates) {
        if (fs::exists(c, ec)) {
            gui = c;
            break;
        }
    }
    if (gui.empty()) {
        std::cerr << "membudget: membudget-gui was not found beside "
                  << escapeForTerminal(exe.string(), LineBreaks::Escape)
                  << "; build with -DMEMBUDGET_BUILD_GUI=ON for the desktop application and chart "
                     "export\n";
        return kExitUsage;
    }
    std::vector<std::string> storage = {gui.string()};
    storage.insert(storage.end(), args.begin(), args.end());
    std::vector<char *> argv;
    for (std::string &s : storage)
        argv.push_back(s.data());
    argv.push_back(nullptr);
    ::execv(gui.c_str(), argv.data());
    std::cerr << "membudget: cannot start " << escapeForTerminal(gui.string(), LineBreaks::Escape)
              << ": " << std::strerror(errno) << "\n";
    return kExitUsage;
}

} // namespace membudget::cli
