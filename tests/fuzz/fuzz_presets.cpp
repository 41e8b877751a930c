// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: the preset-file loader (what a user drops into the preset folder). Every model
// it accepts must estimate cleanly in the default scenario. See tests/fuzz/README.md.
#include "fuzz_check.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    using namespace membudget;
    const std::string text(reinterpret_cast<const char *>(data), size);
    PresetCatalog own; // the file's presets alone, to know which are new
    LoadError error;
    if (!own.addFile("fuzz.yaml", text, error)) {
        fuzz::checkError(error);
        return 0;
    }
    PresetCatalog catalog = PresetCatalog::bundled(); // as the app sees them: over the bundled ones
    if (!catalog.addFile("fuzz.yaml", text, error))
        fuzz::broken("a preset file loads alone but not over the bundled presets", error.toString());
    for (const ModelPreset &m : own.models()) {
        Scenario s = defaultScenario();
        s.model = ModelSpec{};
        s.model.preset = m.id;
        fuzz::checkEstimate(s, catalog, own.gpus());
    }
    for (const ScenarioPreset &p : own.scenarios())
        fuzz::checkRoundTrip(p.scenario, nullptr);
    return 0;
}
