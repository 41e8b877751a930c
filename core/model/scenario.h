// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/dataset_config.h"
#include "model/model_architecture.h"
#include "model/training_options.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace membudget {

inline constexpr const char *kScenarioFormat = "membudget/1";

// The model section of a scenario as written: a preset, a bare parameter count (quick mode), or an
// architecture, with any explicit key overriding the preset. Unset fields are std::nullopt so that
// saving writes back exactly what the user chose.
struct ModelSpec
{
    std::string preset;
    // Where the architecture came from, for people and exports: the Hugging Face model id
    // ("meta-llama/Llama-3.1-70B", "@revision" when not main) when imported from the Hub.
    std::string source;
    std::optional<double> parameters;
    std::optional<ModelFamily> family;
    std::optional<MlpKind> mlp;
    std::optional<NormKind> norm;
    std::optional<PositionKind> positions;
    std::optional<std::int64_t> layers, hidden_size, intermediate_size, attention_heads, kv_heads,
        head_dim, vocab_size, max_position_embeddings, norms_per_layer, experts, experts_per_token;
    std::optional<bool> tied_embeddings, qkv_bias, o_bias, mlp_bias, qk_norm, parallel_attention;
    std::optional<double> attention_dropout, hidden_dropout;
    // RoPE scaling (linear, YaRN, dynamic NTK...) stretches the context to max_position_embeddings
    // x this factor, as Hugging Face's rope_scaling.factor; only the context length changes.
    std::optional<double> rope_scaling_factor;

    bool operator==(const ModelSpec &) const = default;
};

struct Scenario
{
    std::string name;
    std::string description;
    ModelSpec model;
    TrainingConfig training;
    ParallelismConfig parallelism;
    OverheadConfig overheads;
    std::vector<std::string> gpus;        // GPU preset ids to compare against
    std::optional<DatasetConfig> dataset; // what a run goes through, for its time and cost
    std::map<std::string, double> prices; // USD per GPU-hour by GPU id, over the presets' prices
    // What the description claims, machine-checkable (scenario key `expected`): the GPU ids the
    // scenario fits on, those where it is tight (the band straddles the capacity) and those it does
    // not fit on. Bundled scenarios are tested against it.
    std::vector<std::string> expected_fits;
    std::vector<std::string> expected_tight;
    std::vector<std::string> expected_not_fits;
};

// The price per GPU-hour of `gpuId`: the scenario's own, else `presetPrice` (0: none known).
double gpuHourPrice(const Scenario &scenario, const std::string &gpuId, double presetPrice);

bool operator==(const LoraConfig &, const LoraConfig &);
bool operator==(const OffloadConfig &, const OffloadConfig &);
bool operator==(const TrainingConfig &, const TrainingConfig &);
bool operator==(const ParallelismConfig &, const ParallelismConfig &);
bool operator==(const OverheadConfig &, const OverheadConfig &);
bool operator==(const Scenario &, const Scenario &);

// The scenario shown when nothing else is asked for: Llama-3.1-8B LoRA in bf16 with flash attention.
Scenario defaultScenario();

} // namespace membudget
