// SPDX-License-Identifier: GPL-3.0-or-later
// libFuzzer target: the Hugging Face config.json importer. An imported model must estimate cleanly
// and survive a save and reload as part of a scenario. See tests/fuzz/README.md.
#include "fuzz_check.h"

#include "io/hf_config_import.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    using namespace membudget;
    const std::string text(reinterpret_cast<const char *>(data), size);
    LoadError error;
    const auto spec = importHfConfig(text, "config.json", error);
    if (!spec) {
        fuzz::checkError(error);
        return 0;
    }
    Scenario s = defaultScenario();
    s.model = *spec;
    fuzz::checkEstimate(s, PresetCatalog::bundled());
    fuzz::checkRoundTrip(s, &PresetCatalog::bundled());
    return 0;
}
