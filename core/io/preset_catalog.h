// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "io/load_error.h"
#include "model/gpu_spec.h"
#include "model/model_architecture.h"
#include "model/scenario.h"

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace membudget {

// The format line of a preset file (models and GPUs); scenarios say kScenarioFormat.
inline constexpr const char *kPresetFormat = "membudget-presets/1";

struct ModelPreset
{
    std::string id;                        // "llama-3.1-8b"
    std::string name;                      // "Llama 3.1 8B"
    std::string source;                    // where the architecture comes from (a config.json)
    std::int64_t published_parameters = 0; // 0 when the source states none
    ModelArchitecture arch;
};

struct ScenarioPreset
{
    std::string id;   // file name without extension
    std::string file; // "scenarios/qlora-7b-24gb.yaml"
    Scenario scenario;
};

// Model, GPU and scenario presets: the bundled ones (presets/ compiled in) plus any folder of user
// files, which override bundled entries with the same id. Lookups are by id.
class PresetCatalog
{
public:
    // The bundled presets, parsed once on first use. Thread-safe.
    static const PresetCatalog &bundled();

    // Adds the presets of one YAML file (text already read). Returns false and fills `error` at the
    // first problem; entries read before the problem are kept.
    bool addFile(const std::string &fileName, const std::string &text, LoadError &error);
    // Adds every *.yaml file below `folder` (models and GPUs from preset files, scenarios from
    // scenario files). Problems are collected, good files still load.
    std::vector<LoadError> addFolder(const std::string &folder);

    const std::vector<ModelPreset> &models() const { return m_models; }
    const std::vector<GpuSpec> &gpus() const { return m_gpus; }
    const std::vector<ScenarioPreset> &scenarios() const { return m_scenarios; }

    const ModelPreset *findModel(const std::string &id) const;
    const GpuSpec *findGpu(const std::string &id) const;
    const ScenarioPreset *findScenario(const std::string &id) const;

    // Closest ids for "did you mean" messages (edit distance), best first.
    std::vector<std::string> suggestModels(const std::string &id, int count = 3) const;
    std::vector<std::string> suggestGpus(const std::string &id, int count = 3) const;

    // The architecture a model section describes: preset, then quick mode, then explicit keys.
    // Returns std::nullopt with a message (and in `key` the scenario key it is about, such as
    // "model.preset") for an unknown preset or a head_dim it would have to round.
    std::optional<ModelArchitecture> resolveModel(const ModelSpec &spec,
                                                  std::string &error,
                                                  std::string *key = nullptr) const;

private:
    void putModel(ModelPreset preset);
    void putGpu(GpuSpec gpu);
    void putScenario(ScenarioPreset scenario);

    std::vector<ModelPreset> m_models;
    std::vector<GpuSpec> m_gpus;
    std::vector<ScenarioPreset> m_scenarios;
    // Position of each id in the vectors above.
    std::unordered_map<std::string, std::size_t> m_modelIndex, m_gpuIndex, m_scenarioIndex;
};

// Applies a model section's explicit keys on top of `base` (family first, then each key).
ModelArchitecture applyModelSpec(const ModelSpec &spec, ModelArchitecture base, bool baseIsPreset);

// Why `arch` (applyModelSpec(spec, ...)) had to derive a head_dim by rounding: hidden_size not a
// multiple of attention_heads while the spec changed the shape without giving head_dim. Empty when
// it did not; `key` gets "model.attention_heads" or "model.hidden_size".
std::string derivedHeadDimProblem(const ModelSpec &spec,
                                  const ModelArchitecture &arch,
                                  std::string *key = nullptr);

} // namespace membudget

#include "model/memory_estimator.h"

namespace membudget {

// Why no scenario could use `arch` (heads, KV heads, experts that do not fit together), from
// validateInput; empty when it is usable. `key` gets the scenario key, such as "model.kv_heads".
std::string architectureProblem(const ModelArchitecture &arch, std::string *key = nullptr);

// Turns a scenario into the estimator's input (preset resolved, architecture complete) and checks it
// with validateInput(). Returns std::nullopt with a message when that fails.
std::optional<EstimateInput> resolveScenario(const Scenario &scenario,
                                             const PresetCatalog &catalog,
                                             std::string &error,
                                             std::string *key = nullptr);

} // namespace membudget
