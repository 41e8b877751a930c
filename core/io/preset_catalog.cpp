// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/preset_catalog.h"

#include "io/input_file.h"

#include "io/bundled_presets.h"
#include "io/model_spec_yaml.h"
#include "io/scenario_yaml.h"
#include "io/yaml_reader.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace membudget {

namespace {

std::size_t editDistance(const std::string &a, const std::string &b)
{
    std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j)
        prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
        }
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

template<typename T>
std::vector<std::string> nearest(const std::vector<T> &items, const std::string &id, int count)
{
    std::vector<std::pair<std::size_t, std::string>> scored;
    for (const T &item : items) {
        std::size_t dist = editDistance(id, item.id);
        if (item.id.find(id) != std::string::npos || id.find(item.id) != std::string::npos)
            dist = dist / 2;
        scored.emplace_back(dist, item.id);
    }
    std::sort(scored.begin(), scored.end());
    std::vector<std::string> out;
    const std::size_t limit = std::max<std::size_t>(3, id.size() / 2);
    for (const auto &[dist, name] : scored) {
        if (static_cast<int>(out.size()) >= count || dist > limit)
            break;
        out.push_back(name);
    }
    return out;
}

bool readModelPreset(YamlReader &r, const YAML::Node &node, ModelPreset &out)
{
    if (!r.expectMap(node,
                     "a model preset",
                     {"id",
                      "name",
                      "source",
                      "published_parameters",
                      "family",
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
                      "hidden_dropout"}))
        return false;
    if (!node["id"].IsDefined())
        return r.fail(node, "a model preset needs an 'id'");
    ModelSpec spec;
    if (!r.getString(node, "id", out.id) || !r.getString(node, "name", out.name)
        || !r.getString(node, "source", out.source)
        || !r.getInt(node, "published_parameters", out.published_parameters, 0, 100'000'000'000'000LL)
        || !readArchitectureKeys(r, node, spec))
        return false;
    if (out.name.empty())
        out.name = out.id;
    out.arch = applyModelSpec(spec, ModelArchitecture{}, false);
    return true;
}

bool readGpuPerformance(YamlReader &r, const YAML::Node &node, GpuPerformance &p)
{
    std::int64_t gpusPerNode = p.gpus_per_node, pcie = p.pcie_generation, units = p.multiprocessors;
    if (!(r.getEnum(
              node, "architecture", p.architecture, parseGpuArchitecture, kGpuArchitectureNames, 9)
          && r.getDouble(node, "bf16_tflops", p.bf16_tflops, 0, 1e6)
          && r.getDouble(node, "fp16_tflops", p.fp16_tflops, 0, 1e6)
          && r.getDouble(node, "tf32_tflops", p.tf32_tflops, 0, 1e6)
          && r.getDouble(node, "fp32_tflops", p.fp32_tflops, 0, 1e6)
          && r.getDouble(node, "fp8_tflops", p.fp8_tflops, 0, 1e6)
          && r.getDouble(node, "memory_bandwidth_gbps", p.memory_bandwidth_gbps, 0, 1e7)
          && r.getInt(node, "multiprocessors", units, 0, 100000)
          && r.getDouble(node, "matmul_efficiency", p.matmul_efficiency, 0, 1)
          && r.getEnum(node, "interconnect", p.interconnect, parseInterconnect, kInterconnectNames, 3)
          && r.getDouble(node, "interconnect_gbps", p.interconnect_gbps, 0, 1e6)
          && r.getInt(node, "pcie_generation", pcie, 0, 10)
          && r.getInt(node, "gpus_per_node", gpusPerNode, 1, 1024)
          && r.getDouble(node, "network_gbps", p.network_gbps, 0, 1e6)
          && r.getDouble(node, "price_per_hour", p.price_per_hour, 0, 1e6)
          && r.getString(node, "price_source", p.price_source)
          && r.getString(node, "sources", p.sources)))
        return false;
    p.multiprocessors = static_cast<int>(units);
    p.pcie_generation = static_cast<int>(pcie);
    p.gpus_per_node = static_cast<int>(gpusPerNode);
    return true;
}

bool readGpu(YamlReader &r, const YAML::Node &node, GpuSpec &gpu)
{
    if (!r.expectMap(node,
                     "a GPU preset",
                     {"id",
                      "name",
                      "vendor",
                      "segment",
                      "memory_mib",
                      "memory_gib",
                      "memory_gb",
                      "architecture",
                      "bf16_tflops",
                      "fp16_tflops",
                      "tf32_tflops",
                      "fp32_tflops",
                      "fp8_tflops",
                      "memory_bandwidth_gbps",
                      "multiprocessors",
                      "matmul_efficiency",
                      "interconnect",
                      "interconnect_gbps",
                      "pcie_generation",
                      "gpus_per_node",
                      "network_gbps",
                      "price_per_hour",
                      "price_source",
                      "sources"}))
        return false;
    if (!node["id"].IsDefined())
        return r.fail(node, "a GPU preset needs an 'id'");
    double mib = 0, gib = 0, gb = 0;
    if (!r.getString(node, "id", gpu.id) || !r.getString(node, "name", gpu.name)
        || !r.getString(node, "vendor", gpu.vendor) || !r.getString(node, "segment", gpu.segment)
        || !r.getDouble(node, "memory_mib", mib, 1, 1e9)
        || !r.getDouble(node, "memory_gib", gib, 0.001, 1e6)
        || !r.getDouble(node, "memory_gb", gb, 0.001, 1e6)
        || !readGpuPerformance(r, node, gpu.performance))
        return false;
    if (!gpu.segment.empty() && gpu.segment != "consumer" && gpu.segment != "workstation"
        && gpu.segment != "datacenter")
        return r.fail(node["segment"],
                      "unknown segment '" + gpu.segment
                          + "'; expected consumer, workstation or datacenter");
    if (mib > 0)
        gpu.memory_bytes = toBytes(mib * static_cast<double>(kMiB));
    else if (gib > 0)
        gpu.memory_bytes = toBytes(gib * static_cast<double>(kGiB));
    else if (gb > 0)
        gpu.memory_bytes = toBytes(gb * 1e9);
    else
        return r.fail(node, "a GPU preset needs its memory: memory_mib, memory_gib or memory_gb");
    if (gpu.name.empty())
        gpu.name = gpu.id;
    gpu.performance.power_limited = gpu.segment != "consumer";
    return true;
}

std::string stemOf(const std::string &path)
{
    return std::filesystem::path(path).stem().string();
}

} // namespace

ModelArchitecture applyModelSpec(const ModelSpec &s, ModelArchitecture base, bool baseIsPreset)
{
    ModelArchitecture a = base;
    if (!baseIsPreset && s.parameters && !s.layers && !s.hidden_size)
        a = quickArchitecture(*s.parameters);
    if (s.family)
        applyFamilyDefaults(a, *s.family);
    if (s.layers)
        a.layers = *s.layers;
    if (s.hidden_size)
        a.hidden_size = *s.hidden_size;
    if (s.intermediate_size)
        a.intermediate_size = *s.intermediate_size;
    if (s.attention_heads)
        a.attention_heads = *s.attention_heads;
    if (s.vocab_size)
        a.vocab_size = *s.vocab_size;
    if (s.max_position_embeddings) {
        a.max_position_embeddings = *s.max_position_embeddings;
        a.context_length = *s.max_position_embeddings;
    }
    if (s.rope_scaling_factor && a.context_length > 0)
        a.context_length = static_cast<std::int64_t>(
            std::llround(static_cast<double>(a.context_length) * *s.rope_scaling_factor));
    if (s.tied_embeddings)
        a.tied_embeddings = *s.tied_embeddings;
    if (s.mlp)
        a.mlp = *s.mlp;
    if (s.norm)
        a.norm = *s.norm;
    if (s.positions)
        a.positions = *s.positions;
    if (s.qkv_bias)
        a.qkv_bias = *s.qkv_bias;
    if (s.o_bias)
        a.o_bias = *s.o_bias;
    if (s.mlp_bias)
        a.mlp_bias = *s.mlp_bias;
    if (s.qk_norm)
        a.qk_norm = *s.qk_norm;
    if (s.norms_per_layer)
        a.norms_per_layer = *s.norms_per_layer;
    if (s.parallel_attention)
        a.parallel_attention = *s.parallel_attention;
    if (s.experts)
        a.experts = *s.experts;
    if (s.experts_per_token)
        a.experts_per_token = *s.experts_per_token;
    if (s.attention_dropout)
        a.attention_dropout = *s.attention_dropout;
    if (s.hidden_dropout)
        a.hidden_dropout = *s.hidden_dropout;
    // Derived defaults: head_dim = hidden / heads, and KV heads follow the heads unless the family
    // is multi-query, whenever the shape changed and the file did not say.
    if (s.head_dim)
        a.head_dim = *s.head_dim;
    else if ((s.hidden_size || s.attention_heads) && a.attention_heads > 0)
        a.head_dim = std::max<std::int64_t>(1, a.hidden_size / a.attention_heads);
    if (s.kv_heads)
        a.kv_heads = *s.kv_heads;
    else if (s.attention_heads || s.family)
        a.kv_heads = (a.family == ModelFamily::BigCode || a.family == ModelFamily::Falcon)
                         ? 1
                         : a.attention_heads;
    if (a.experts_per_token > a.experts)
        a.experts_per_token = a.experts;
    return a;
}

const PresetCatalog &PresetCatalog::bundled()
{
    static const PresetCatalog catalog = [] {
        PresetCatalog c;
        for (const EmbeddedFile &f : bundledPresetFiles()) {
            LoadError error;
            c.addFile("presets/" + std::string(f.path), std::string(f.text), error);
        }
        return c;
    }();
    return catalog;
}

bool PresetCatalog::addFile(const std::string &fileName, const std::string &text, LoadError &error)
{
    YamlReader r(fileName, error);
    YAML::Node root;
    if (!r.parse(text, root))
        return false;
    try {
        if (!r.expectMap(root, "the preset file"))
            return false;
        std::string format;
        if (!root["format"].IsDefined())
            return r.failAt(root.Mark(),
                            std::string("missing 'format: ") + kPresetFormat
                                + "' (or membudget/1 for a scenario)");
        if (!r.getString(root, "format", format))
            return false;
        if (format == kScenarioFormat) {
            auto scenario = parseScenario(text, fileName, error, nullptr);
            if (!scenario)
                return false;
            putScenario(ScenarioPreset{stemOf(fileName), fileName, *scenario});
            return true;
        }
        if (format != kPresetFormat && format.rfind("membudget-presets/", 0) == 0)
            return r.fail(root["format"],
                          "format '" + format
                              + "' was written by a newer MemBudget; this version reads "
                              + kPresetFormat);
        if (format != kPresetFormat)
            return r.fail(root["format"],
                          "format '" + format + "' is not " + kPresetFormat + " or "
                              + kScenarioFormat);
        if (!r.expectMap(root, "the preset file", {"format", "models", "gpus"}))
            return false;
        if (!root["models"].IsDefined() && !root["gpus"].IsDefined())
            return r.fail(root, "the preset file has neither 'models' nor 'gpus'");
        if (const YAML::Node models = root["models"]; models.IsDefined()) {
            if (!models.IsSequence())
                return r.fail(models, "'models' must be a list");
            for (const YAML::Node &node : models) {
                ModelPreset preset;
                if (!readModelPreset(r, node, preset))
                    return false;
                putModel(std::move(preset));
            }
        }
        if (const YAML::Node gpus = root["gpus"]; gpus.IsDefined()) {
            if (!gpus.IsSequence())
                return r.fail(gpus, "'gpus' must be a list");
            for (const YAML::Node &node : gpus) {
                GpuSpec gpu;
                if (!readGpu(r, node, gpu))
                    return false;
                putGpu(std::move(gpu));
            }
        }
        return true;
    } catch (const std::exception &e) {
        return r.failAt(YAML::Mark::null_mark(),
                        std::string("cannot read the presets: ") + e.what());
    }
}

std::vector<LoadError> PresetCatalog::addFolder(const std::string &folder)
{
    std::vector<LoadError> errors;
    std::error_code ec;
    if (!std::filesystem::is_directory(folder, ec))
        return errors;
    std::vector<std::filesystem::path> files;
    for (auto it = std::filesystem::recursive_directory_iterator(
             folder, std::filesystem::directory_options::skip_permission_denied, ec);
         !ec && it != std::filesystem::recursive_directory_iterator();
         it.increment(ec)) {
        if (it.depth() > 4)
            it.disable_recursion_pending();
        const auto &p = it->path();
        if (it->is_regular_file(ec) && (p.extension() == ".yaml" || p.extension() == ".yml"))
            files.push_back(p);
    }
    std::sort(files.begin(), files.end());
    for (const auto &p : files) {
        LoadError error;
        std::string text;
        if (!readInputFile(p.string(), "preset", text, error) || !addFile(p.string(), text, error))
            errors.push_back(error);
    }
    return errors;
}

void PresetCatalog::putModel(ModelPreset preset)
{
    for (ModelPreset &m : m_models) {
        if (m.id == preset.id) {
            m = std::move(preset);
            return;
        }
    }
    m_models.push_back(std::move(preset));
}

void PresetCatalog::putGpu(GpuSpec gpu)
{
    for (GpuSpec &g : m_gpus) {
        if (g.id == gpu.id) {
            g = std::move(gpu);
            return;
        }
    }
    m_gpus.push_back(std::move(gpu));
}

void PresetCatalog::putScenario(ScenarioPreset scenario)
{
    for (ScenarioPreset &s : m_scenarios) {
        if (s.id == scenario.id) {
            s = std::move(scenario);
            return;
        }
    }
    m_scenarios.push_back(std::move(scenario));
}

const ModelPreset *PresetCatalog::findModel(const std::string &id) const
{
    for (const ModelPreset &m : m_models)
        if (m.id == id)
            return &m;
    return nullptr;
}

const GpuSpec *PresetCatalog::findGpu(const std::string &id) const
{
    for (const GpuSpec &g : m_gpus)
        if (g.id == id)
            return &g;
    return nullptr;
}

const ScenarioPreset *PresetCatalog::findScenario(const std::string &id) const
{
    for (const ScenarioPreset &s : m_scenarios)
        if (s.id == id)
            return &s;
    return nullptr;
}

std::vector<std::string> PresetCatalog::suggestModels(const std::string &id, int count) const
{
    return nearest(m_models, id, count);
}

std::vector<std::string> PresetCatalog::suggestGpus(const std::string &id, int count) const
{
    return nearest(m_gpus, id, count);
}

std::optional<ModelArchitecture> PresetCatalog::resolveModel(const ModelSpec &spec,
                                                             std::string &error) const
{
    if (!spec.preset.empty()) {
        const ModelPreset *preset = findModel(spec.preset);
        if (!preset) {
            error = "unknown model preset '" + spec.preset + "'";
            const auto near = suggestModels(spec.preset);
            if (!near.empty())
                error += "; did you mean " + near.front() + "?";
            return std::nullopt;
        }
        return applyModelSpec(spec, preset->arch, true);
    }
    return applyModelSpec(spec, ModelArchitecture{}, false);
}

std::optional<EstimateInput> resolveScenario(const Scenario &scenario,
                                             const PresetCatalog &catalog,
                                             std::string &error,
                                             std::string *key)
{
    auto arch = catalog.resolveModel(scenario.model, error);
    if (!arch) {
        if (key)
            *key = "model.preset";
        return std::nullopt;
    }
    if (scenario.model.rope_scaling_factor && arch->positions != PositionKind::Rotary) {
        error = "rope_scaling_factor needs rotary positions; a model with learned positions "
                "(GPT-2 style) has exactly max_position_embeddings of them";
        if (key)
            *key = "model.rope_scaling_factor";
        return std::nullopt;
    }
    EstimateInput input{*arch, scenario.training, scenario.parallelism, scenario.overheads};
    error = validateInput(input, key);
    if (!error.empty())
        return std::nullopt;
    return input;
}

} // namespace membudget
