// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Shared checks of the fuzz targets: anything a loader accepts must estimate without undefined
// behaviour, give finite non-negative figures, and survive a save and reload unchanged.

#include "io/estimate_json.h"
#include "io/preset_catalog.h"
#include "io/scenario_yaml.h"
#include "model/memory_estimator.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace membudget::fuzz {

// A failed invariant is a bug: print what and abort so libFuzzer keeps the input.
[[noreturn]] inline void broken(const char *what, const std::string &detail)
{
    std::fprintf(stderr, "fuzz invariant broken: %s\n%s\n", what, detail.c_str());
    std::abort();
}

inline void checkError(const LoadError &error)
{
    const std::string line = error.toString();
    if (line.find('\n') != std::string::npos)
        broken("an error message spans more than one line", line);
    if (error.message.empty())
        broken("an error without a message", line);
}

// The GPUs an estimate is checked against: the scenario's own (as `membudget estimate` takes
// them), those the fuzzed file defines (odd sizes are the point) and the smallest and largest of
// the catalog. Not every GPU: each costs the verdict's and the solvers' replays, tens of
// milliseconds per model in the sanitizer build.
inline std::vector<GpuSpec> gpusToCheck(const Scenario &scenario,
                                        const PresetCatalog &catalog,
                                        std::vector<GpuSpec> gpus = {})
{
    for (const std::string &id : scenario.gpus)
        if (const GpuSpec *g = catalog.findGpu(id))
            gpus.push_back(*g);
    const std::vector<GpuSpec> &all = catalog.gpus();
    const auto bySize = [](const GpuSpec &a, const GpuSpec &b) {
        return a.memory_bytes < b.memory_bytes;
    };
    if (const auto [small, large] = std::minmax_element(all.begin(), all.end(), bySize);
        small != all.end()) {
        gpus.push_back(*small);
        gpus.push_back(*large);
    }
    return gpus;
}

inline void checkEstimate(const Scenario &scenario,
                          const PresetCatalog &catalog,
                          const std::vector<GpuSpec> &extraGpus = {})
{
    const std::vector<GpuSpec> gpus = gpusToCheck(scenario, catalog, extraGpus);
    std::string problem;
    const auto input = resolveScenario(scenario, catalog, problem);
    if (!input)
        return;
    const MemoryEstimate e = estimateMemory(*input);
    if (e.device_total < 0 || e.peak_allocated < 0 || e.peak_reserved < e.peak_allocated)
        broken("negative or inconsistent peak", scenarioToYaml(scenario));
    for (const Breakdown &b : e.phases)
        if (b.total() < 0)
            broken("negative phase total", scenarioToYaml(scenario));
    (void) estimateToJson(scenario, *input, e, gpus).dump();
}

inline void checkRoundTrip(const Scenario &scenario, const PresetCatalog *catalog)
{
    const std::string yaml = scenarioToYaml(scenario);
    LoadError error;
    const auto again = parseScenario(yaml, "round-trip.yaml", error, catalog);
    if (!again)
        broken("a saved scenario does not load back", error.toString() + "\n" + yaml);
    if (!(*again == scenario))
        broken("a saved scenario loads back different", yaml);
    if (scenarioToYaml(*again) != yaml)
        broken("save -> load -> save is not byte-identical", yaml);
}

} // namespace membudget::fuzz
