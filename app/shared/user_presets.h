// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "io/load_error.h"
#include "io/preset_catalog.h"

#include <string>
#include <vector>

namespace membudget {

// The user's preset folder, where people drop their own model, GPU and scenario YAML files
// (README "Your own presets", membudget(1), docs/examples/presets/): $MEMBUDGET_PRESETS when set,
// otherwise "membudget/presets" in Qt's writable generic data location ($XDG_DATA_HOME, usually
// ~/.local/share, on Linux): ~/.local/share/membudget/presets. That is QStandardPaths::AppDataLocation
// of an application named "membudget" with no organisation folder; it is spelled out here so that the
// command line (no QCoreApplication, so no application name) and the desktop application (whose
// organisation name "MemBudget" would add a folder) use the same place. Empty without a home folder.
std::string userPresetFolder();

// The bundled presets plus the user's folder (user files override bundled ids). Problems with user
// files are returned, not fatal.
PresetCatalog loadCatalog(std::vector<LoadError> &problems);

} // namespace membudget
