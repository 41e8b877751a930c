// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/preset_catalog.h"

#include "base/byte_format.h"
#include "io/bundled_presets.h"
#include "io/format_line.h"
#include "io/input_file.h"
#include "io/model_spec_yaml.h"
#include "io/scenario_yaml.h"
#include "io/yaml_reader.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <unordered_map>

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
    // A preset no scenario could use is refused here, where the file can be blamed for it (a user
    // preset overriding a bundled model would otherwise break every scenario that names it).
    std::string key;
    std::string problem = derivedHeadDimProblem(spec, out.arch, &key);
    if (problem.empty())
        problem = architectureProblem(out.arch, &key);
    if (!problem.empty()) {
        const std::string field = key.rfind("model.", 0) == 0 ? key.substr(6) : std::string();
        const YAML::Node at = field.empty() ? YAML::Node() : node[field];
        return r.fail(at.IsDefined() ? at : node, "model preset '" + out.id + "': " + problem);
    }
    return true;
}

// `compute_capability: "10.0"`: NVIDIA's sm version, which must belong to the architecture given.
// A Hopper GPU without it is 9.0 (every Hopper part is: NVIDIA, "CUDA GPUs - Compute Capability").
bool readComputeCapability(YamlReader &r, const YAML::Node &node, GpuPerformance &p)
{
    std::string text;
    if (!r.getString(node, "compute_capability", text))
        return false;
    const YAML::Node at = node["compute_capability"];
    if (text.empty()) {
        if (p.architecture == GpuArchitecture::Hopper)
            p.compute_capability = {9, 0};
        return true;
    }
    if (!parseComputeCapability(text, p.compute_capability))
        return r.fail(at,
                      "compute_capability '" + text
                          + "' is not a compute capability; expected major.minor, as NVIDIA "
                            "writes it (9.0 for H100, 10.0 for B200, 12.0 for RTX 5090)");
    const GpuArchitecture implied = architectureOfComputeCapability(p.compute_capability);
    if (implied == GpuArchitecture::Unknown)
        return r.fail(at,
                      "compute_capability " + text
                          + " is no NVIDIA GPU generation MemBudget knows (7.0 to 12.x)");
    if (node["architecture"].IsDefined() && p.architecture != implied)
        return r.fail(at,
                      "compute_capability " + text + " is a " + gpuArchitectureName(implied)
                          + " GPU, but architecture says " + gpuArchitectureName(p.architecture));
    p.architecture = implied;
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
          && r.getEnum(node, "interconnect", p.interconnect, parseInterconnect, kInterconnectNames, 4)
          && r.getDouble(node, "interconnect_gbps", p.interconnect_gbps, 0, 1e6)
          && r.getInt(node, "pcie_generation", pcie, 0, 10)
          && r.getInt(node, "gpus_per_node", gpusPerNode, 1, 1024)
          && r.getDouble(node, "network_gbps", p.network_gbps, 0, 1e6)
          && r.getDouble(node, "price_per_hour", p.price_per_hour, 0, 1e6)
          && r.getString(node, "price_source", p.price_source)
          && r.getString(node, "sources", p.sources) && readComputeCapability(r, node, p)))
        return false;
    p.multiprocessors = static_cast<int>(units);
    p.pcie_generation = static_cast<int>(pcie);
    p.gpus_per_node = static_cast<int>(gpusPerNode);
    return true;
}

// CUDA's total is the driver's total less the driver's own reserve: never more.
bool readCudaTotal(YamlReader &r, const YAML::Node &node, double cudaMib, GpuSpec &gpu)
{
    const std::int64_t cuda = toBytes(cudaMib * static_cast<double>(kMiB));
    if (cuda > gpu.memory_bytes)
        return r.fail(node["cuda_memory_mib"],
                      "cuda_memory_mib (" + formatFixed(cudaMib, 0)
                          + ") is more than the GPU's total memory ("
                          + formatFixed(static_cast<double>(gpu.memory_bytes)
                                            / static_cast<double>(kMiB),
                                        0)
                          + " MiB); CUDA reports at most what the driver does");
    // Kept even where the two agree (ROCm reports the driver's total): the capacity is then known.
    gpu.driver_total_bytes = gpu.memory_bytes;
    gpu.memory_bytes = cuda;
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
                      "cuda_memory_mib",
                      "architecture",
                      "compute_capability",
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
    double mib = 0, gib = 0, gb = 0, cudaMib = 0;
    if (!r.getString(node, "id", gpu.id) || !r.getString(node, "name", gpu.name)
        || !r.getString(node, "vendor", gpu.vendor) || !r.getString(node, "segment", gpu.segment)
        || !r.getDouble(node, "memory_mib", mib, 1, 1e9)
        || !r.getDouble(node, "memory_gib", gib, 0.001, 1e6)
        || !r.getDouble(node, "memory_gb", gb, 0.001, 1e6)
        || !r.getDouble(node, "cuda_memory_mib", cudaMib, 1, 1e9)
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
    if (cudaMib > 0 && !readCudaTotal(r, node, cudaMib, gpu))
        return false;
    if (gpu.name.empty())
        gpu.name = gpu.id;
    gpu.performance.power_limited = gpu.segment != "consumer";
    return true;
}

std::string stemOf(const std::string &path)
{
    return std::filesystem::path(path).stem().string();
}

// A user preset folder is read on every start of every command: a bound on what it may cost.
constexpr std::size_t kMaxUserPresetFiles = 1000;
constexpr std::uintmax_t kMaxUserPresetBytes = 16 * 1024 * 1024;

} // namespace

std::string derivedHeadDimProblem(const ModelSpec &s, const ModelArchitecture &a, std::string *key)
{
    // applyModelSpec derives head_dim = hidden_size / attention_heads when the shape changed and
    // head_dim is not given; rounding down would describe a model that cannot exist.
    if (s.head_dim || !(s.hidden_size || s.attention_heads) || a.attention_heads < 1
        || a.hidden_size % a.attention_heads == 0)
        return {};
    if (key)
        *key = s.attention_heads ? "model.attention_heads" : "model.hidden_size";
    return "hidden_size (" + std::to_string(a.hidden_size)
           + ") is not a multiple of attention_heads (" + std::to_string(a.attention_heads)
           + "): give head_dim, the width of one head";
}

std::string architectureProblem(const ModelArchitecture &arch, std::string *key)
{
    // The model checks of validateInput (the default training and one GPU pass the rest; should
    // they not, that is no fault of the model).
    const EstimateInput probe{arch, TrainingConfig{}, ParallelismConfig{}, OverheadConfig{}};
    std::string where;
    std::string problem = validateInput(probe, &where);
    if (where.rfind("model", 0) != 0)
        return {};
    if (key)
        *key = where;
    return problem;
}

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
    return a; // experts_per_token > experts is refused by validateInput, not clamped
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
        if (format.rfind("membudget/", 0) == 0)
            return r.fail(root["format"],
                          formatLineProblem(format, kScenarioFormat, "a MemBudget scenario"));
        if (format.rfind("membudget-presets/", 0) == 0 && format != kPresetFormat)
            return r.fail(root["format"],
                          formatLineProblem(format, kPresetFormat, "a MemBudget preset file"));
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
    namespace fs = std::filesystem;
    std::vector<LoadError> errors;
    const auto problem = [&](const std::string &file, const std::string &message) {
        LoadError e;
        e.file = file;
        e.message = message;
        errors.push_back(e);
    };
    std::error_code ec;
    if (!fs::is_directory(folder, ec))
        return errors;
    // Every *.yaml or *.yml entry is read through readInputFile, so that a link to a device, a
    // dangling or looping link, an unreadable file or a read error is a warning about that file,
    // never a reason to stop (links to regular files are followed: a dotfiles folder may use them).
    std::vector<fs::path> files;
    fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (it.depth() > 4)
            it.disable_recursion_pending();
        const fs::path &p = it->path();
        std::error_code typeEc;
        if ((p.extension() != ".yaml" && p.extension() != ".yml") || it->is_directory(typeEc))
            continue;
        if (files.size() == kMaxUserPresetFiles) {
            problem(folder,
                    "more than " + std::to_string(kMaxUserPresetFiles)
                        + " preset files; the rest are not read");
            break;
        }
        files.push_back(p);
    }
    if (ec)
        problem(folder, "cannot list the folder: " + ec.message());
    std::sort(files.begin(), files.end());
    std::uintmax_t total = 0;
    for (const auto &p : files) {
        LoadError error;
        std::string text;
        if (!readInputFile(p.string(), "preset", text, error)) {
            errors.push_back(error);
            continue;
        }
        total += text.size();
        if (total > kMaxUserPresetBytes) {
            problem(p.string(),
                    "the preset folder holds more than 16 MiB; this file and the rest are not "
                    "read");
            break;
        }
        if (!addFile(p.string(), text, error))
            errors.push_back(error);
    }
    return errors;
}

namespace {

// Inserts or replaces (a later file overrides an id) in constant time: a user preset file may
// hold tens of thousands of entries.
template<typename T>
void putById(std::vector<T> &items, std::unordered_map<std::string, std::size_t> &index, T item)
{
    const auto [it, inserted] = index.emplace(item.id, items.size());
    if (inserted)
        items.push_back(std::move(item));
    else
        items[it->second] = std::move(item);
}

template<typename T>
const T *findById(const std::vector<T> &items,
                  const std::unordered_map<std::string, std::size_t> &index,
                  const std::string &id)
{
    const auto it = index.find(id);
    return it == index.end() ? nullptr : &items[it->second];
}

} // namespace

void PresetCatalog::putModel(ModelPreset preset)
{
    putById(m_models, m_modelIndex, std::move(preset));
}

void PresetCatalog::putGpu(GpuSpec gpu)
{
    putById(m_gpus, m_gpuIndex, std::move(gpu));
}

void PresetCatalog::putScenario(ScenarioPreset scenario)
{
    putById(m_scenarios, m_scenarioIndex, std::move(scenario));
}

const ModelPreset *PresetCatalog::findModel(const std::string &id) const
{
    return findById(m_models, m_modelIndex, id);
}

const GpuSpec *PresetCatalog::findGpu(const std::string &id) const
{
    return findById(m_gpus, m_gpuIndex, id);
}

const ScenarioPreset *PresetCatalog::findScenario(const std::string &id) const
{
    return findById(m_scenarios, m_scenarioIndex, id);
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
                                                             std::string &error,
                                                             std::string *key) const
{
    const ModelPreset *preset = nullptr;
    if (!spec.preset.empty()) {
        preset = findModel(spec.preset);
        if (!preset) {
            error = "unknown model preset '" + spec.preset + "'";
            const auto near = suggestModels(spec.preset);
            if (!near.empty())
                error += "; did you mean " + near.front() + "?";
            if (key)
                *key = "model.preset";
            return std::nullopt;
        }
    }
    ModelArchitecture arch = preset ? applyModelSpec(spec, preset->arch, true)
                                    : applyModelSpec(spec, ModelArchitecture{}, false);
    error = derivedHeadDimProblem(spec, arch, key);
    if (!error.empty())
        return std::nullopt;
    return arch;
}

std::optional<EstimateInput> resolveScenario(const Scenario &scenario,
                                             const PresetCatalog &catalog,
                                             std::string &error,
                                             std::string *key)
{
    auto arch = catalog.resolveModel(scenario.model, error, key);
    if (!arch)
        return std::nullopt;
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
