// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: the scenario loader (parseScenario against the bundled presets). Anything it
// accepts must estimate cleanly and save -> load -> save byte-identically. See tests/fuzz/README.md.
#include "fuzz_check.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    using namespace membudget;
    const std::string text(reinterpret_cast<const char *>(data), size);
    const PresetCatalog &catalog = PresetCatalog::bundled();
    LoadError error;
    const auto scenario = parseScenario(text, "fuzz.yaml", error, &catalog);
    if (!scenario) {
        fuzz::checkError(error);
        return 0;
    }
    fuzz::checkEstimate(*scenario, catalog);
    fuzz::checkRoundTrip(*scenario, &catalog);
    return 0;
}
