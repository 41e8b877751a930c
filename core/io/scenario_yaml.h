// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "io/load_error.h"
#include "model/scenario.h"

#include <optional>
#include <string>

namespace membudget {

class PresetCatalog;

// Reads a scenario (format membudget/1). Unknown keys, wrong types, out-of-range values, unknown
// enum names and (when `catalog` is given) unknown model or GPU presets are errors with the line
// and column of the offending node. Never throws.
std::optional<Scenario> parseScenario(const std::string &text,
                                      const std::string &fileName,
                                      LoadError &error,
                                      const PresetCatalog *catalog = nullptr);

// Reads a file from disk (at most 16 MiB) and parses it.
std::optional<Scenario> loadScenarioFile(const std::string &path,
                                         LoadError &error,
                                         const PresetCatalog *catalog = nullptr);

// Writes the scenario as YAML: keys in the documented order, only what differs from the defaults
// plus the essentials, numbers in their shortest round-trip form. parseScenario(toYaml(s)) == s.
std::string scenarioToYaml(const Scenario &scenario);

// Writes atomically: a temporary file beside `path`, flushed, then renamed over it.
bool saveScenarioFile(const Scenario &scenario, const std::string &path, std::string &error);

} // namespace membudget
