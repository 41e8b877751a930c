// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "io/load_error.h"
#include "model/scenario.h"

#include <optional>
#include <string>

namespace membudget {

// Reads a Hugging Face config.json (Llama, Mistral, Mixtral, Qwen2/3, Gemma 1-3, Phi-3, GPT-2,
// GPT-BigCode, Falcon, OLMo...) into a model section with every architecture key set. Unknown
// model types are an error naming the supported ones; missing or mistyped fields report the line
// and column in the JSON file.
std::optional<ModelSpec> importHfConfig(const std::string &text,
                                        const std::string &fileName,
                                        LoadError &error);

std::optional<ModelSpec> importHfConfigFile(const std::string &path, LoadError &error);

} // namespace membudget
