// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "io/load_error.h"
#include "model/scenario.h"

#include <cstddef>
#include <optional>
#include <string>

namespace membudget {

class PresetCatalog;

// A scenario compares against at most this many GPUs (`gpus:` in a file, --gpu on the command
// line), each listed once: more would only slow every command and crowd every chart (the bundled
// catalog has 32 GPUs).
inline constexpr std::size_t kMaxScenarioGpus = 64;

// Reads a scenario (format membudget/1). Unknown keys, wrong types, out-of-range values, unknown
// enum names and (when `catalog` is given) unknown model or GPU presets are errors with the line
// and column of the offending node. Never throws.
std::optional<Scenario> parseScenario(const std::string &text,
                                      const std::string &fileName,
                                      LoadError &error,
                                      const PresetCatalog *catalog = nullptr);

// Reads a file from disk (readInputFile: a regular file of at most 1 MiB) and parses it.
std::optional<Scenario> loadScenarioFile(const std::string &path,
                                         LoadError &error,
                                         const PresetCatalog *catalog = nullptr);

// Writes the scenario as YAML: keys in the documented order, only what differs from the defaults
// plus the essentials, numbers in their shortest round-trip form. parseScenario(toYaml(s)) == s.
std::string scenarioToYaml(const Scenario &scenario);

// Writes atomically (writeFileAtomically: the old file or the new one, never a mix).
bool saveScenarioFile(const Scenario &scenario, const std::string &path, std::string &error);

} // namespace membudget
