// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Shared checks of the fuzz targets: anything a loader accepts must estimate without undefined
// behaviour, give finite non-negative figures, and survive a save and reload unchanged.

#include "io/estimate_json.h"
#include "io/preset_catalog.h"
#include "io/scenario_yaml.h"
#include "model/memory_estimator.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

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

inline void checkEstimate(const Scenario &scenario, const PresetCatalog &catalog)
{
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
    (void) estimateToJson(scenario, *input, e, catalog.gpus()).dump();
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
