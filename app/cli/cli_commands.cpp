// SPDX-License-Identifier: GPL-3.0-or-later
#include "cli_commands.h"

#include "advice/fit_advisor.h"
#include "advice/technique_ladder.h"
#include "base/byte_format.h"
#include "base/time_format.h"
#include "estimate_table.h"
#include "io/estimate_json.h"
#include "io/hf_config_import.h"
#include "io/input_file.h"
#include "io/scenario_yaml.h"
#include "model/memory_estimator.h"
#include "model/parameter_layout.h"
#include "snapshot/snapshot_file.h"
#include "snapshot/snapshot_json.h"
#include "snapshot_report.h"
#include "throughput/throughput_model.h"
#include "user_presets.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <sys/wait.h>
#include <unistd.h>

namespace membudget::cli {

namespace {

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
        std::cerr << file << ": " << problem << "\n";
        return false;
    }
    scenario = *loaded;
    input = *resolved;
    return true;
}

bool collectGpus(const PresetCatalog &catalog,
                 const std::vector<std::string> &ids,
                 std::vector<GpuSpec> &out)
{
    for (const std::string &id : ids) {
        const GpuSpec *g = catalog.findGpu(id);
        if (!g) {
            std::cerr << "unknown GPU '" << id << "'";
            const auto near = catalog.suggestGpus(id);
            if (!near.empty())
                std::cerr << "; did you mean " << near.front() << "?";
            std::cerr << " (membudget presets gpus lists them)\n";
            return false;
        }
        out.push_back(*g);
    }
    return true;
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
    if (!collectGpus(catalog, o.gpus.empty() ? scenario.gpus : o.gpus, gpus))
        return kExitBadInput;
    const MemoryEstimate est = estimateMemory(input);
    if (o.json)
        std::cout << estimateToJson(scenario, input, est, gpus, o.timeline).dump(2) << "\n";
    else
        std::cout << estimateTable(scenario, input, est, gpus, o.unit);
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
    if (!collectGpus(catalog, o.gpus.empty() ? scenario.gpus : o.gpus, gpus))
        return kExitBadInput;
    if (gpus.empty()) {
        std::cerr << "fit needs a GPU: --gpu ID, or gpus: [...] in the scenario\n";
        return kExitUsage;
    }
    const MemoryEstimate est = estimateMemory(input);
    const ByteUnit unit = o.unit;
    const auto bytes = [unit](Bytes b) { return formatBytes(b, unit); };
    nlohmann::json all = nlohmann::json::array();
    bool someGpuWithoutFit = false;
    for (const GpuSpec &g : gpus) {
        const bool fits = est.device_total <= g.memory_bytes;
        const auto suggestions = fits ? std::vector<FitSuggestion>{}
                                      : suggestFits(input, g, o.limit);
        someGpuWithoutFit = someGpuWithoutFit || (!fits && suggestions.empty());
        if (o.json) {
            nlohmann::json j;
            j["gpu"] = g.id;
            j["capacity"] = g.memory_bytes;
            j["device_total"] = est.device_total;
            j["fits"] = fits;
            nlohmann::json list = nlohmann::json::array();
            for (const FitSuggestion &s : suggestions)
                list.push_back({{"changes", s.changes},
                                {"changes_result", s.result_changes},
                                {"slowdown", s.slowdown},
                                {"step_seconds", s.step_seconds},
                                {"tokens_per_second", s.tokens_per_second},
                                {"device_total", s.device_total},
                                {"headroom", s.headroom},
                                {"cpu_offload_bytes", s.cpu_offload_bytes}});
            j["suggestions"] = list;
            all.push_back(j);
            continue;
        }
        std::cout << g.id << " (" << formatCapacity(g.memory_bytes, unit) << "): ";
        if (fits) {
            std::cout << "fits already, " << bytes(g.memory_bytes - est.device_total)
                      << " to spare.\n";
            continue;
        }
        std::cout << "needs " << bytes(est.device_total) << ", "
                  << bytes(est.device_total - g.memory_bytes) << " too much.\n";
        if (suggestions.empty()) {
            std::cout << "  No combination of techniques makes it fit: use more GPUs, a smaller "
                         "model or shorter sequences.\n";
            continue;
        }
        int i = 1;
        bool resultHeading = false;
        for (const FitSuggestion &s : suggestions) {
            if (s.changesResult() && !resultHeading) {
                std::cout << "  These change what is trained, not only how fast:\n";
                resultHeading = true;
            }
            char line[96];
            std::snprintf(line, sizeof line, "  %d. %.2fx time per token, ", i++, s.slowdown);
            std::cout << line << formatRate(s.tokens_per_second) << " tokens/s, "
                      << bytes(s.device_total) << " (" << bytes(s.headroom) << " spare)";
            if (s.cpu_offload_bytes > 0)
                std::cout << ", " << bytes(s.cpu_offload_bytes) << " of CPU RAM";
            std::cout << ":\n";
            for (const std::string &c : s.changes) {
                const bool changesResult = std::find(s.result_changes.begin(),
                                                     s.result_changes.end(),
                                                     c)
                                           != s.result_changes.end();
                std::cout << "       - " << c << (changesResult ? " [changes the result]" : "")
                          << "\n";
            }
        }
    }
    if (o.json)
        std::cout << all.dump(2) << "\n";
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
    if (!id.empty() && !collectGpus(catalog, {id}, gpus))
        return kExitBadInput;
    const GpuSpec *gpu = gpus.empty() ? nullptr : &gpus.front();
    const auto steps = techniqueLadder(input);
    nlohmann::json list = nlohmann::json::array();
    Bytes previous = 0;
    double previousRate = 0;
    char line[320];
    if (!json) {
        if (gpu)
            std::cout << "Time per token on " << gpu->name << " (modelled).\n";
        std::snprintf(line,
                      sizeof line,
                      "%-20s %14s %14s  %-15s %12s %8s  %s\n",
                      "Step",
                      "Device total",
                      "Change",
                      "Peak phase",
                      "Tokens/s",
                      "Time/tok",
                      "What changed");
        std::cout << line;
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
                                           : (e.device_total <= previous ? "-" : "+")
                                                 + formatBytes(e.device_total <= previous
                                                                   ? previous - e.device_total
                                                                   : e.device_total - previous,
                                                               unit);
            // Time per token against the step before: +25% is a quarter slower.
            char time[32] = "";
            if (t.valid && previousRate > 0)
                std::snprintf(time,
                              sizeof time,
                              "%+.0f%%",
                              100 * (previousRate / t.tokens_per_second - 1));
            std::snprintf(line,
                          sizeof line,
                          "%-20s %14s %14s  %-15s %12s %8s  %s\n",
                          s.label.c_str(),
                          formatBytes(e.device_total, unit).c_str(),
                          change.c_str(),
                          phaseLabel(e.peak_phase),
                          t.valid ? formatRate(t.tokens_per_second).c_str() : "",
                          time,
                          s.detail.c_str());
            std::cout << line;
        }
        previous = e.device_total;
        previousRate = t.valid ? t.tokens_per_second : 0;
    }
    if (json)
        std::cout << list.dump(2) << "\n";
    return kExitOk;
}

namespace {

nlohmann::json comparisonJson(const snapshot::MeasuredTimeline &t, const MemoryEstimate &e)
{
    const auto pair = [&](Bytes measured, Bytes estimated) {
        nlohmann::json j = {{"estimated", estimated}};
        if (!t.has_history) {
            j["measured"] = nullptr;
            return j;
        }
        j["measured"] = measured;
        j["difference"] = estimated - measured;
        j["ratio"] = measured > 0 ? nlohmann::json(static_cast<double>(estimated)
                                                   / static_cast<double>(measured))
                                  : nlohmann::json(nullptr);
        return j;
    };
    return {{"peak_allocated", pair(t.peak_allocated, e.peak_allocated)},
            {"peak_reserved", pair(t.peak_reserved, e.peak_reserved)}};
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
        replay = snapshot::replaySnapshot(*snap, *analysis.replay, o.capacity);
    std::optional<EstimateBeside> beside;
    Scenario scenario;
    EstimateInput input;
    if (!o.scenario.empty()) {
        std::vector<LoadError> problems;
        const PresetCatalog catalog = loadCatalog(problems);
        printProblems(problems);
        if (!loadResolved(o.scenario, catalog, scenario, input))
            return kExitBadInput;
        beside = EstimateBeside{o.scenario, scenario.name, estimateMemory(input)};
    }
    if (!o.json) {
        std::cout << snapshotReport(o.file, *snap, analysis, replay, beside, o.unit);
        return kExitOk;
    }
    nlohmann::json j = snapshot::snapshotToJson(o.file, *snap, analysis);
    snapshot::addReplayJson(j, analysis, replay);
    if (beside) {
        j["estimate"] = estimateToJson(scenario, input, beside->estimate, {});
        j["comparison"] = comparisonJson(analysis.timeline, beside->estimate);
    }
    std::cout << j.dump(2) << "\n";
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
        std::cerr << "unknown preset kind '" << what << "'; expected models, gpus or scenarios\n";
        return kExitUsage;
    }
    if (json) {
        nlohmann::json j;
        if (models) {
            j["models"] = nlohmann::json::array();
            for (const ModelPreset &m : catalog.models())
                j["models"].push_back(
                    {{"id", m.id},
                     {"name", m.name},
                     {"parameters", static_cast<std::int64_t>(parameterLayout(m.arch).total)},
                     {"source", m.source}});
        }
        if (gpus) {
            j["gpus"] = nlohmann::json::array();
            for (const GpuSpec &g : catalog.gpus())
                j["gpus"].push_back({{"id", g.id},
                                     {"name", g.name},
                                     {"vendor", g.vendor},
                                     {"memory_bytes", g.memory_bytes}});
        }
        if (scenarios) {
            j["scenarios"] = nlohmann::json::array();
            for (const ScenarioPreset &s : catalog.scenarios())
                j["scenarios"].push_back({{"id", s.id}, {"name", s.scenario.name}});
        }
        std::cout << j.dump(2) << "\n";
        return kExitOk;
    }
    char line[256];
    if (models) {
        std::cout << "Models (" << catalog.models().size() << "):\n";
        for (const ModelPreset &m : catalog.models()) {
            const ParameterLayout layout = parameterLayout(m.arch);
            std::snprintf(line,
                          sizeof line,
                          "  %-32s %9.2fB  %s\n",
                          m.id.c_str(),
                          layout.total / 1e9,
                          m.name.c_str());
            std::cout << line;
        }
    }
    if (gpus) {
        std::cout << (models ? "\n" : "") << "GPUs (" << catalog.gpus().size() << "):\n";
        for (const GpuSpec &g : catalog.gpus()) {
            std::snprintf(line,
                          sizeof line,
                          "  %-22s %10s  %s\n",
                          g.id.c_str(),
                          formatCapacity(g.memory_bytes, unit).c_str(),
                          g.name.c_str());
            std::cout << line;
        }
    }
    if (scenarios) {
        std::cout << ((models || gpus) ? "\n" : "") << "Scenarios (" << catalog.scenarios().size()
                  << "):\n";
        for (const ScenarioPreset &s : catalog.scenarios()) {
            std::snprintf(line, sizeof line, "  %-36s %s\n", s.id.c_str(), s.scenario.name.c_str());
            std::cout << line;
        }
    }
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
                std::cout << f << ": ok (memory snapshot)\n";
            } else {
                std::cerr << error.toString() << "\n";
                rc = kExitBadInput;
            }
            continue;
        }
        InputFileKind kind = InputFileKind::Scenario;
        if (checkInputFile(f, catalog, error, &kind)) {
            std::cout << f << ": ok (" << inputFileKindName(kind) << ")\n";
        } else {
            std::cerr << error.toString() << "\n";
            rc = kExitBadInput;
        }
    }
    return rc;
}

int runImportConfig(const std::string &configFile, const std::string &output)
{
    LoadError error;
    auto spec = importHfConfigFile(configFile, error);
    if (!spec) {
        std::cerr << error.toString() << "\n";
        return kExitBadInput;
    }
    Scenario s = defaultScenario();
    s.model = *spec;
    s.name = std::filesystem::path(configFile).parent_path().filename().string();
    if (s.name.empty())
        s.name = "Imported model";
    if (output.empty() || output == "-") {
        std::cout << scenarioToYaml(s);
        return kExitOk;
    }
    std::string problem;
    if (!saveScenarioFile(s, output, problem)) {
        std::cerr << problem << "\n";
        return kExitBadInput;
    }
    std::cout << "wrote " << output << "\n";
    return kExitOk;
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
        std::cerr << "membudget-gui was not found beside " << exe.string()
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
    std::cerr << "cannot start " << gui.string() << ": " << std::strerror(errno) << "\n";
    return kExitUsage;
}

} // namespace membudget::cli
