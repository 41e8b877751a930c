// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Reading and writing the architecture keys shared by scenario files (`model:`) and model presets.

#include "io/yaml_reader.h"
#include "model/scenario.h"

#include <string>

namespace membudget {

// The architecture keys, in the order they are written.
inline constexpr const char *kArchitectureKeys[] = {"family",
                                                    "parameters",
                                                    "layers",
                                                    "hidden_size",
                                                    "intermediate_size",
                                                    "attention_heads",
                                                    "kv_heads",
                                                    "head_dim",
                                                    "vocab_size",
                                                    "max_position_embeddings",
                                                    "tied_embeddings",
                                                    "mlp",
                                                    "norm",
                                                    "positions",
                                                    "qkv_bias",
                                                    "o_bias",
                                                    "mlp_bias",
                                                    "qk_norm",
                                                    "norms_per_layer",
                                                    "parallel_attention",
                                                    "experts",
                                                    "experts_per_token",
                                                    "attention_dropout",
                                                    "hidden_dropout"};

// Reads every architecture key present in `map` (the caller checks for unknown keys).
bool readArchitectureKeys(YamlReader &reader, const YAML::Node &map, ModelSpec &spec);

// Appends "  key: value\n" lines (with `indent` spaces) for each architecture key that is set.
void writeArchitectureKeys(const ModelSpec &spec, const std::string &indent, std::string &out);

// Shortest text that reads back as the same double ("7e+09" -> "7000000000" for whole numbers).
std::string formatYamlNumber(double value);
// A YAML scalar for any string: plain when safe, double-quoted with escapes otherwise. Any string
// (any Unicode text) reads back equal: parseScenario(scenarioToYaml(s)) == s.
std::string yamlString(const std::string &text);
// Always double-quoted, every character the reader would refuse or change written as an escape.
std::string yamlDoubleQuoted(const std::string &text);

} // namespace membudget
