// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string_view>
#include <vector>

namespace membudget {

struct EmbeddedFile
{
    std::string_view path; // relative to presets/, e.g. "models/llama.yaml"
    std::string_view text;
};

// The preset files compiled into the binary (generated from presets/ at build time).
const std::vector<EmbeddedFile> &bundledPresetFiles();

} // namespace membudget
