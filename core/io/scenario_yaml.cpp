// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/scenario_yaml.h"

#include "allocator/allocator_settings.h"

#include "base/byte_format.h"
#include "io/atomic_file.h"
#include "io/deepspeed_config.h"
#include "io/format_line.h"
#include "io/input_file.h"
#include "io/model_spec_yaml.h"
#include "io/preset_catalog.h"
#include "io/yaml_reader.h"
#include "model/stack_profile.h"

#include <map>
#include <utility>
#include <vector>

namespace membudget {

namespace {

// LoRA or IA3 target modules: all-linear or a list of module names.
bool readTargets(YamlReader &r, const YAML::Node &targets, const std::string &what, unsigned &out)
{
    if (!targets.IsDefined())
        return true;
    unsigned bits = 0;
    if (targets.IsScalar()) {
        if (!parseLoraTarget(targets.Scalar(), bits))
            return r.fail(targets,
                          "unknown " + what + " target '" + targets.Scalar()
                              + "'; expected all-linear or a list of "
                              + allowedNames(kLoraTargetNames, 7));
    } else if (targets.IsSequence()) {
        if (targets.size() == 0)
            return r.fail(targets, what + " targets must name at least one module");
        for (const YAML::Node &item : targets) {
            std::string name;
            if (!r.scalarText(item, "targets", name))
                return false;
            if (!parseLoraTarget(name, bits))
                return r.fail(item,
                              "unknown " + what + " target '" + name + "'; expected all-linear or "
                                  + allowedNames(kLoraTargetNames, 7));
        }
    } else {
        return r.fail(targets,
                      what + " targets must be a list of module names such as [q_proj, v_proj]");
    }
    out = bits;
    return true;
}

// training.quantization_options (docs/scenario-format.md): the weight format's knobs.
bool readQuantizationOptions(YamlReader &r, const YAML::Node &q, QuantizationOptions &o)
{
    if (!q.IsDefined())
        return true;
    if (!r.expectMap(q,
                     "training.quantization_options",
                     {"bits", "group_size", "fp8_scales", "lm_head", "compute_dtype"}))
        return false;
    return r.getInt(q, "bits", o.bits, 0, 8) && r.getInt(q, "group_size", o.group_size, -1, 1 << 20)
           && r.getEnum(q, "fp8_scales", o.fp8_scales, parseFp8Scales, kFp8ScalesNames, 3)
           && r.getBool(q, "lm_head", o.lm_head)
           && r.getEnum(q,
                        "compute_dtype",
                        o.compute_dtype,
                        parseQuantComputeDtype,
                        kQuantComputeDtypeNames,
                        4);
}

// training.inference: generated tokens and the KV cache (mode inference).
bool readInference(YamlReader &r, const YAML::Node &n, InferenceConfig &c)
{
    if (!n.IsDefined())
        return true;
    if (!r.expectMap(n,
                     "training.inference",
                     {"generated_tokens",
                      "kv_cache",
                      "kv_cache_dtype",
                      "max_cache_len",
                      "kv_bits",
                      "kv_group_size",
                      "kv_residual_length"}))
        return false;
    return r.getInt(n, "generated_tokens", c.generated_tokens, 0, 100'000'000)
           && r.getEnum(n, "kv_cache", c.kv_cache, parseKvCacheKind, kKvCacheKindNames, 4)
           && r.getEnum(n,
                        "kv_cache_dtype",
                        c.kv_cache_dtype,
                        parseKvCacheDtype,
                        kKvCacheDtypeNames,
                        2)
           && r.getInt(n, "max_cache_len", c.max_cache_len, 0, 100'000'000)
           && r.getInt(n, "kv_bits", c.kv_bits, 1, 8)
           && r.getInt(n, "kv_group_size", c.kv_group_size, 1, 1 << 20)
           && r.getInt(n, "kv_residual_length", c.kv_residual_length, 0, 100'000'000);
}

bool readTraining(YamlReader &r, const YAML::Node &t, TrainingConfig &c)
{
    if (!r.expectMap(t,
                     "training",
                     {"mode",
                      "method",
                      "precision",
                      "quantization",
                      "optimizer",
                      "micro_batch_size",
                      "sequence_length",
                      "gradient_accumulation_steps",
                      "gradient_checkpointing",
                      "checkpoint_every",
                      "attention",
                      "batch_padding",
                      "loss",
                      "lora",
                      "offload",
                      "kbit_fp32_upcast",
                      "use_cache",
                      "trainer_mixed_precision",
                      "optimizer_in_backward",
                      "activation_offloading",
                      "float8",
                      "quantization_options",
                      "ia3",
                      "inference"}))
        return false;
    if (!(r.getEnum(t, "mode", c.mode, parseMode, kModeNames, 2)
          && r.getEnum(t, "method", c.method, parseMethod, kMethodNames, 4)
          && r.getEnum(t, "precision", c.precision, parsePrecision, kPrecisionNames, 7)
          && r.getEnum(t, "optimizer", c.optimizer, parseOptimizer, kOptimizerNames, 9)
          && r.getInt(t, "micro_batch_size", c.micro_batch_size, 1, 1'000'000)
          && r.getInt(t, "sequence_length", c.sequence_length, 1, 100'000'000)
          && r.getInt(t, "gradient_accumulation_steps", c.gradient_accumulation_steps, 1, 1'000'000)
          && r.getEnum(t,
                       "gradient_checkpointing",
                       c.checkpointing,
                       parseCheckpointing,
                       kCheckpointingNames,
                       3)
          && r.getInt(t, "checkpoint_every", c.checkpoint_every, 1, 1'000'000)
          && r.getEnum(t, "attention", c.attention, parseAttention, kAttentionNames, 3)
          && r.getEnum(t, "batch_padding", c.batch_padding, parseBatchPadding, kBatchPaddingNames, 3)
          && r.getEnum(t, "loss", c.loss, parseLoss, kLossNames, 10)
          && r.getBool(t, "kbit_fp32_upcast", c.kbit_fp32_upcast)
          && r.getBool(t, "use_cache", c.use_cache)
          && r.getBool(t, "trainer_mixed_precision", c.trainer_mixed_precision)
          && r.getBool(t, "optimizer_in_backward", c.optimizer_in_backward)
          && r.getBool(t, "activation_offloading", c.activation_offloading)
          && r.getBool(t, "float8", c.float8)))
        return false;
    // QLoRA implies a 4-bit base unless the file says otherwise.
    if (c.method == Method::Qlora)
        c.quantization = Quantization::Nf4;
    if (!r.getEnum(t, "quantization", c.quantization, parseQuantization, kQuantizationNames, 16))
        return false;
    if (!readQuantizationOptions(r, t["quantization_options"], c.quantization_options)
        || !readInference(r, t["inference"], c.inference))
        return false;
    if (const YAML::Node lora = t["lora"]; lora.IsDefined()) {
        if (!r.expectMap(lora,
                         "training.lora",
                         {"rank",
                          "alpha",
                          "dropout",
                          "targets",
                          "adapter_precision",
                          "use_dora",
                          "use_rslora",
                          "loraplus_lr_ratio"}))
            return false;
        if (!(r.getInt(lora, "rank", c.lora.rank, 1, 65536)
              && r.getDouble(lora, "alpha", c.lora.alpha, 1e-6, 1e6)
              && r.getDouble(lora, "dropout", c.lora.dropout, 0.0, 0.999)
              && r.getEnum(lora,
                           "adapter_precision",
                           c.lora.adapter_precision,
                           parseAdapterPrecision,
                           kAdapterPrecisionNames,
                           2)
              && r.getBool(lora, "use_dora", c.lora.use_dora)
              && r.getBool(lora, "use_rslora", c.lora.use_rslora)
              && r.getDouble(lora, "loraplus_lr_ratio", c.lora.loraplus_lr_ratio, 0.0, 1e6)))
            return false;
        if (!readTargets(r, lora["targets"], "LoRA", c.lora.targets))
            return false;
    }
    if (const YAML::Node ia3 = t["ia3"]; ia3.IsDefined()) {
        if (!r.expectMap(ia3, "training.ia3", {"targets"})
            || !readTargets(r, ia3["targets"], "IA3", c.ia3.targets))
            return false;
    }
    if (const YAML::Node off = t["offload"]; off.IsDefined()) {
        if (!r.expectMap(off, "training.offload", {"optimizer", "parameters"}))
            return false;
        if (!(r.getBool(off, "optimizer", c.offload.optimizer)
              && r.getBool(off, "parameters", c.offload.parameters)))
            return false;
    }
    return true;
}

// A version key of `stack`, checked to be one.
bool readVersion(
    YamlReader &r, const YAML::Node &node, const char *key, const char *library, std::string &out)
{
    std::string version;
    LibraryVersion parsed;
    if (!r.scalarText(node, key, version))
        return false;
    if (!parseLibraryVersion(version, parsed))
        return r.fail(node,
                      "'" + version + "' is not a version; expected one such as "
                          + (std::string(library) == "PyTorch" ? "2.0 or 2.4.1" : "4.46 or 0.25.1")
                          + " (" + library + "'s)");
    out = version;
    return true;
}

// stack: a name, or {name, version, torch}.
bool readStack(YamlReader &r, const YAML::Node &node, StackConfig &stack)
{
    const YAML::Node nameNode = node.IsMap() ? node["name"] : node;
    if (node.IsMap()) {
        if (!r.expectMap(node, "stack", {"name", "version", "torch"}))
            return false;
        if (!nameNode.IsDefined())
            return r.fail(node, "a stack needs a 'name' (" + allowedNames(kStackNames, 7) + ")");
    } else if (!node.IsScalar()) {
        return r.fail(node,
                      "'stack' must be a name such as hf-trainer, or {name: hf-trainer, version: "
                      "\"4.46\"}");
    }
    std::string name;
    if (!r.scalarText(nameNode, "stack", name))
        return false;
    if (!parseStack(name, stack.name))
        return r.fail(nameNode,
                      "unknown stack '" + name + "'; expected " + allowedNames(kStackNames, 7));
    if (!node.IsMap())
        return true;
    if (node["version"].IsDefined()
        && !readVersion(r, node["version"], "version", stackLibrary(stack.name), stack.version))
        return false;
    if (!node["torch"].IsDefined())
        return true;
    if (stack.name == Stack::PlainTorch)
        return r.fail(node["torch"],
                      "plain-torch's 'version' is PyTorch's; write {name: plain-torch, version: "
                      "\"2.0\"} instead of 'torch'");
    return readVersion(r, node["torch"], "torch", "PyTorch", stack.torch);
}

bool readDeepSpeedKeys(YamlReader &r, const YAML::Node &d, DeepSpeedConfig &c)
{
    if (!r.expectMap(d,
                     "parallelism.deepspeed",
                     {"reduce_bucket_size",
                      "overlap_comm",
                      "sub_group_size",
                      "bf16_master_weights",
                      "bf16_optimizer_states"}))
        return false;
    return r.getDouble(d, "reduce_bucket_size", c.reduce_bucket_size, 1, 1e12)
           && r.getBool(d, "overlap_comm", c.overlap_comm)
           && r.getDouble(d, "sub_group_size", c.sub_group_size, 1, 1e15)
           && r.getBool(d, "bf16_master_weights", c.bf16_master_weights)
           && r.getBool(d, "bf16_optimizer_states", c.bf16_optimizer_states);
}

// parallelism.pipeline_layers: decoder layers per stage, first to last ([7, 9, 9, 7]). That it
// matches pipeline_parallel and the model's layers is the estimate's check
// (validatePipelineParallel), which knows the model.
bool readPipelineLayers(YamlReader &r, const YAML::Node &list, std::vector<std::int64_t> &out)
{
    if (!list.IsDefined() || list.IsNull())
        return true;
    constexpr std::size_t kMaxStages = 65536; // pipeline_parallel's own limit
    if (!list.IsSequence() || list.size() == 0 || list.size() > kMaxStages)
        return r.fail(list,
                      "'pipeline_layers' must be a list of decoder layers per stage, first to "
                      "last, such as [7, 9, 9, 7] (at most 65536 stages)");
    std::vector<std::int64_t> layers;
    for (const YAML::Node &item : list) {
        std::int64_t n = 0;
        if (!r.toInt(item, "pipeline_layers", n, 1, 1'000'000))
            return false;
        layers.push_back(n);
    }
    out = std::move(layers);
    return true;
}

bool readParallelism(YamlReader &r,
                     const YAML::Node &p,
                     ParallelismConfig &c,
                     const std::string &fileName,
                     DeepSpeedFileSettings &file)
{
    if (!r.expectMap(p,
                     "parallelism",
                     {"gpus",
                      "sharding",
                      "tensor_parallel",
                      "sequence_parallel",
                      "loss_parallel",
                      "shard_group",
                      "context_parallel",
                      "pipeline_parallel",
                      "pipeline_schedule",
                      "pipeline_virtual_stages",
                      "pipeline_layers",
                      "fsdp_param_dtype",
                      "fsdp_reduce_dtype",
                      "deepspeed",
                      "deepspeed_config"})
        || !r.getInt(p, "gpus", c.gpus, 1, 1'000'000)
        || !r.getEnum(p, "sharding", c.sharding, parseSharding, kShardingNames, 6)
        || !r.getInt(p, "tensor_parallel", c.tensor_parallel, 1, 65536)
        || !r.getBool(p, "sequence_parallel", c.sequence_parallel)
        || !r.getBool(p, "loss_parallel", c.loss_parallel)
        || !r.getInt(p, "shard_group", c.shard_group, 0, 1'000'000)
        || !r.getInt(p, "context_parallel", c.context_parallel, 1, 65536)
        || !r.getInt(p, "pipeline_parallel", c.pipeline_parallel, 1, 65536)
        || !r.getEnum(p,
                      "pipeline_schedule",
                      c.pipeline_schedule,
                      parsePipelineSchedule,
                      kPipelineScheduleNames,
                      3)
        || !r.getInt(p, "pipeline_virtual_stages", c.pipeline_virtual_stages, 1, 1024)
        || !r.getEnum(p, "fsdp_param_dtype", c.fsdp_param_dtype, parseParamDtype, kParamDtypeNames, 3)
        || !r.getEnum(p,
                      "fsdp_reduce_dtype",
                      c.fsdp_reduce_dtype,
                      parseParamDtype,
                      kParamDtypeNames,
                      3)
        || !r.getString(p, "deepspeed_config", c.deepspeed_config))
        return false;
    if (const YAML::Node d = p["deepspeed"]; d.IsDefined() && !readDeepSpeedKeys(r, d, c.deepspeed))
        return false;
    if (!readPipelineLayers(r, p["pipeline_layers"], c.pipeline_layers))
        return false;
    if (c.gpus % c.tensor_parallel != 0)
        return r.fail(p,
                      "gpus (" + std::to_string(c.gpus) + ") must be a multiple of tensor_parallel ("
                          + std::to_string(c.tensor_parallel) + ")");
    if (c.gpus % (c.tensor_parallel * c.context_parallel) != 0)
        return r.fail(p["context_parallel"],
                      "gpus (" + std::to_string(c.gpus)
                          + ") must be a multiple of tensor_parallel x context_parallel ("
                          + std::to_string(c.tensor_parallel * c.context_parallel) + ")");
    const std::int64_t split = c.tensor_parallel * c.context_parallel * c.pipeline_parallel;
    if (c.gpus % split != 0)
        return r.fail(p["pipeline_parallel"],
                      "gpus (" + std::to_string(c.gpus)
                          + ") must be a multiple of tensor_parallel x context_parallel x "
                            "pipeline_parallel ("
                          + std::to_string(split) + ")");
    if (c.shard_group > 0 && c.dataParallel() % c.shard_group != 0)
        return r.fail(p["shard_group"],
                      "shard_group (" + std::to_string(c.shard_group)
                          + ") must divide the data-parallel GPUs (gpus / (tensor_parallel x "
                            "pipeline_parallel) = "
                          + std::to_string(c.dataParallel()) + ")");
    if (!c.deepspeed_config.empty()) {
        std::string problem;
        if (!readDeepSpeedConfigFile(resolveBeside(fileName, c.deepspeed_config), file, problem))
            return r.fail(p["deepspeed_config"], problem);
    }
    return true;
}

// Which keys a stack may set were written in the file.
ExplicitKeys explicitKeys(const YAML::Node &root)
{
    const YAML::Node t = root["training"];
    const YAML::Node p = root["parallelism"];
    auto has = [](const YAML::Node &map, const char *key) {
        return map.IsDefined() && map.IsMap() && map[key].IsDefined();
    };
    ExplicitKeys x;
    x.precision = has(t, "precision");
    x.optimizer = has(t, "optimizer");
    x.loss = has(t, "loss");
    x.checkpointing = has(t, "gradient_checkpointing") || has(t, "checkpoint_every");
    x.adapter_precision = has(t, "lora") && has(t["lora"], "adapter_precision");
    x.sharding = has(p, "sharding");
    x.offload = has(t, "offload");
    return x;
}

bool readModel(YamlReader &r, const YAML::Node &m, ModelSpec &spec, const PresetCatalog *catalog)
{
    std::initializer_list<const char *> keys = {"preset",
                                                "source",
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
                                                "hidden_dropout",
                                                "rope_scaling_factor"};
    if (!r.expectMap(m, "model", keys))
        return false;
    if (!r.getString(m, "preset", spec.preset) || !r.getString(m, "source", spec.source)
        || !readArchitectureKeys(r, m, spec)
        || !r.getDouble(m, "rope_scaling_factor", spec.rope_scaling_factor, 1.0, 1024.0))
        return false;
    if (spec.parameters && !spec.preset.empty())
        return r.fail(m["parameters"],
                      "'parameters' is quick mode (a Llama-shaped model of that size) and cannot "
                      "be combined with a preset; remove one of them");
    if (!spec.preset.empty() && catalog && !catalog->findModel(spec.preset)) {
        std::string msg = "unknown model preset '" + spec.preset + "'";
        const auto near = catalog->suggestModels(spec.preset);
        if (!near.empty())
            msg += "; did you mean " + near.front() + "?";
        msg += " (membudget presets lists them)";
        return r.fail(m["preset"], msg);
    }
    return true;
}

// The node at a dotted key path ("model.kv_heads"); undefined when the file does not have it.
YAML::Node nodeAt(const YAML::Node &root, const std::string &path)
{
    YAML::Node at;
    at.reset(root);
    std::size_t start = 0;
    while (at.IsMap()) {
        const std::size_t dot = path.find('.', start);
        const YAML::Node &current = at;
        const YAML::Node next = current[path.substr(start, dot - start)];
        if (!next.IsDefined() || dot == std::string::npos)
            return next;
        at.reset(next);
        start = dot + 1;
    }
    return YAML::Node(YAML::NodeType::Undefined);
}

// The GPUs to compare against: at most kMaxScenarioGpus ids, each once (every command's cost and
// every chart's size grow with this list; a 1 MiB file could otherwise list 350,000). `key` names
// the list (`gpus`, `expected.fits`); absent or null is an empty list.
bool readGpuList(YamlReader &r,
                 const YAML::Node &g,
                 const char *key,
                 const PresetCatalog *catalog,
                 std::vector<std::string> &out)
{
    if (!g.IsDefined() || g.IsNull())
        return true;
    if (!g.IsSequence())
        return r.fail(g,
                      std::string("'") + key
                          + "' must be a list of GPU preset ids such as [a100-80gb, rtx-4090]");
    if (g.size() > kMaxScenarioGpus) {
        std::size_t index = 0;
        for (const YAML::Node &item : g)
            if (index++ == kMaxScenarioGpus)
                return r.fail(item,
                              "too many GPUs: at most " + std::to_string(kMaxScenarioGpus)
                                  + " to compare against (this list has " + std::to_string(g.size())
                                  + ")");
    }
    std::map<std::string, YAML::Mark> seen;
    for (const YAML::Node &item : g) {
        std::string id;
        if (!r.scalarText(item, key, id))
            return false;
        if (const auto it = seen.find(id); it != seen.end())
            return r.fail(item,
                          "GPU '" + id + "' is listed twice (first at line "
                              + std::to_string(it->second.line + 1) + ", column "
                              + std::to_string(it->second.column + 1) + ")");
        if (catalog && !catalog->findGpu(id)) {
            std::string msg = "unknown GPU '" + id + "'";
            const auto near = catalog->suggestGpus(id);
            if (!near.empty())
                msg += "; did you mean " + near.front() + "?";
            return r.fail(item, msg);
        }
        seen.emplace(id, item.Mark());
        out.push_back(id);
    }
    return true;
}

// The keys of issue 14 (quantization_options, ia3, inference), written only when they differ
// from the defaults so that older scenarios round-trip unchanged.
void writeAdapterAndFormatKeys(const TrainingConfig &t, std::string &out)
{
    const TrainingConfig defaults;
    const QuantizationOptions &q = t.quantization_options;
    if (!(q == defaults.quantization_options)) {
        out += "  quantization_options: {bits: " + std::to_string(q.bits) + ", group_size: "
               + std::to_string(q.group_size) + ", fp8_scales: " + fp8ScalesName(q.fp8_scales)
               + ", lm_head: " + (q.lm_head ? "true" : "false")
               + ", compute_dtype: " + quantComputeDtypeName(q.compute_dtype) + "}\n";
    }
    if (t.method == Method::Ia3 || t.ia3.targets != defaults.ia3.targets) {
        out += "  ia3:\n    targets: [";
        const auto names = loraTargetNames(t.ia3.targets);
        for (std::size_t i = 0; i < names.size(); ++i)
            out += (i ? ", " : "") + names[i];
        out += "]\n";
    }
    const InferenceConfig &i = t.inference;
    if (!(i == defaults.inference)) {
        out += "  inference:\n";
        out += "    generated_tokens: " + std::to_string(i.generated_tokens) + "\n";
        out += std::string("    kv_cache: ") + kvCacheKindName(i.kv_cache) + "\n";
        out += std::string("    kv_cache_dtype: ") + kvCacheDtypeName(i.kv_cache_dtype) + "\n";
        out += "    max_cache_len: " + std::to_string(i.max_cache_len) + "\n";
        out += "    kv_bits: " + std::to_string(i.kv_bits) + "\n";
        out += "    kv_group_size: " + std::to_string(i.kv_group_size) + "\n";
        out += "    kv_residual_length: " + std::to_string(i.kv_residual_length) + "\n";
    }
}

} // namespace

std::optional<Scenario> parseScenario(const std::string &text,
                                      const std::string &fileName,
                                      LoadError &error,
                                      const PresetCatalog *catalog)
{
    YamlReader r(fileName, error);
    YAML::Node root;
    if (!r.parse(text, root))
        return std::nullopt;
    try {
        if (!r.expectMap(root,
                         "the scenario",
                         {"format",
                          "name",
                          "description",
                          "stack",
                          "model",
                          "training",
                          "parallelism",
                          "gpus",
                          "overheads",
                          "dataset",
                          "prices",
                          "expected"}))
            return std::nullopt;
        const YAML::Node format = root["format"];
        if (!format.IsDefined()) {
            r.failAt(root.Mark(),
                     std::string("missing 'format: ") + kScenarioFormat
                         + "' line (is this a MemBudget scenario?)");
            return std::nullopt;
        }
        std::string fmt;
        if (!r.scalarText(format, "format", fmt))
            return std::nullopt;
        if (const std::string problem = formatLineProblem(fmt,
                                                          kScenarioFormat,
                                                          "a MemBudget scenario");
            !problem.empty()) {
            r.fail(format, problem);
            return std::nullopt;
        }
        Scenario s;
        s.model = ModelSpec{};
        if (!r.getString(root, "name", s.name) || !r.getString(root, "description", s.description))
            return std::nullopt;
        if (const YAML::Node m = root["model"]; m.IsDefined() && !readModel(r, m, s.model, catalog))
            return std::nullopt;
        if (const YAML::Node st = root["stack"];
            st.IsDefined() && !readStack(r, st, s.training.stack))
            return std::nullopt;
        if (const YAML::Node t = root["training"]; t.IsDefined() && !readTraining(r, t, s.training))
            return std::nullopt;
        DeepSpeedFileSettings dsFile;
        if (const YAML::Node p = root["parallelism"];
            p.IsDefined() && !readParallelism(r, p, s.parallelism, fileName, dsFile))
            return std::nullopt;
        // The deepspeed_config file fills what the scenario leaves out; then the stack's defaults.
        ExplicitKeys given = explicitKeys(root);
        applyDeepSpeedFileSettings(dsFile, given, s.training, s.parallelism);
        applyStackDefaults(s.training, s.parallelism, given);
        if (const YAML::Node o = root["overheads"]; o.IsDefined()) {
            if (!r.expectMap(o,
                             "overheads",
                             {"cuda_context",
                              "nccl",
                              "allocator_reserve",
                              "allocator_conf",
                              "extra_resident"})
                || !r.getByteSize(o, "cuda_context", s.overheads.cuda_context_bytes, 1024 * kGiB)
                || !r.getByteSize(o, "nccl", s.overheads.nccl_bytes, 1024 * kGiB)
                || !r.getDouble(o,
                                "allocator_reserve",
                                s.overheads.allocator_reserve_fraction,
                                0.0,
                                10.0)
                || !r.getString(o, "allocator_conf", s.overheads.allocator_conf)
                || !r.getByteSize(o, "extra_resident", s.overheads.extra_resident_bytes, 1024 * kGiB))
                return std::nullopt;
            AllocatorSettings settings;
            std::string problem;
            if (!parseAllocatorConf(s.overheads.allocator_conf, settings, problem)) {
                r.fail(o["allocator_conf"], "allocator_conf (PYTORCH_CUDA_ALLOC_CONF): " + problem);
                return std::nullopt;
            }
        }
        if (!readGpuList(r, root["gpus"], "gpus", catalog, s.gpus))
            return std::nullopt;
        if (const YAML::Node e = root["expected"]; e.IsDefined()) {
            if (!r.expectMap(e, "expected", {"fits", "tight", "does_not_fit"})
                || !readGpuList(r, e["fits"], "expected.fits", catalog, s.expected_fits)
                || !readGpuList(r, e["tight"], "expected.tight", catalog, s.expected_tight)
                || !readGpuList(r,
                                e["does_not_fit"],
                                "expected.does_not_fit",
                                catalog,
                                s.expected_not_fits))
                return std::nullopt;
        }
        if (const YAML::Node d = root["dataset"]; d.IsDefined()) {
            DatasetConfig data;
            if (!r.expectMap(d, "dataset", {"examples", "tokens_per_example", "epochs"})
                || !r.getInt(d, "examples", data.examples, 1, 1'000'000'000'000LL)
                || !r.getInt(d, "tokens_per_example", data.tokens_per_example, 1, 100'000'000)
                || !r.getDouble(d, "epochs", data.epochs, 1e-6, 1e6))
                return std::nullopt;
            if (!d["examples"].IsDefined()) {
                r.fail(d, "a dataset needs 'examples' (how many training examples)");
                return std::nullopt;
            }
            s.dataset = data;
        }
        if (const YAML::Node pr = root["prices"]; pr.IsDefined() && !pr.IsNull()) {
            if (!r.expectMap(pr, "prices"))
                return std::nullopt;
            for (const auto &entry : pr) {
                const std::string id = entry.first.Scalar();
                if (catalog && !catalog->findGpu(id)) {
                    std::string msg = "unknown GPU '" + id + "' in prices";
                    const auto near = catalog->suggestGpus(id);
                    if (!near.empty())
                        msg += "; did you mean " + near.front() + "?";
                    r.fail(entry.first, msg);
                    return std::nullopt;
                }
                double price = 0;
                if (!r.toDouble(entry.second, id, price, 0, 1e6))
                    return std::nullopt;
                s.prices[id] = price;
            }
        }
        // With a catalog the whole scenario must make sense: point at the key a problem is about, or
        // at the nearest section the file has.
        if (catalog) {
            std::string problem, key;
            if (!resolveScenario(s, *catalog, problem, &key)) {
                // A problem between two keys is blamed on the one the file wrote when the other
                // comes from a preset (experts: 1 under a mixture-of-experts preset).
                static const std::map<std::string, std::string> partner
                    = {{"model.experts_per_token", "model.experts"},
                       {"model.kv_heads", "model.attention_heads"}};
                if (const auto it = partner.find(key); it != partner.end()
                                                       && !nodeAt(root, key).IsDefined()
                                                       && nodeAt(root, it->second).IsDefined())
                    key = it->second;
                // Node::reset re-points the handle; assignment would rewrite the tree.
                YAML::Node at;
                at.reset(root);
                std::string path = key;
                while (!path.empty() && at.IsMap()) {
                    const std::size_t dot = path.find('.');
                    const YAML::Node &current = at;
                    const YAML::Node next = current[path.substr(0, dot)];
                    if (!next.IsDefined())
                        break;
                    at.reset(next);
                    path = dot == std::string::npos ? std::string() : path.substr(dot + 1);
                }
                r.fail(at, problem);
                return std::nullopt;
            }
        } else if (s.training.method == Method::Qlora
                   && s.training.quantization == Quantization::None) {
            r.fail(root["training"]["quantization"],
                   "qlora needs a quantized base: quantization int8, nf4, gptq, awq, hqq or "
                   "another format");
            return std::nullopt;
        }
        return s;
    } catch (const std::exception &e) {
        r.failAt(YAML::Mark::null_mark(), std::string("cannot read the scenario: ") + e.what());
        return std::nullopt;
    }
}

std::optional<Scenario> loadScenarioFile(const std::string &path,
                                         LoadError &error,
                                         const PresetCatalog *catalog)
{
    std::string text;
    if (!readInputFile(path, "scenario", text, error))
        return std::nullopt;
    return parseScenario(text, path, error, catalog);
}

namespace {

std::string stackYaml(const StackConfig &stack)
{
    if (stack.version.empty() && stack.torch.empty())
        return std::string("stack: ") + stackName(stack.name) + "\n";
    std::string out = std::string("stack: {name: ") + stackName(stack.name);
    if (!stack.version.empty())
        out += ", version: " + yamlString(stack.version);
    if (!stack.torch.empty())
        out += ", torch: " + yamlString(stack.torch);
    return out + "}\n";
}

// Keys written only when set, after the documented ones of `training`.
void trainingExtras(const TrainingConfig &t, std::string &out)
{
    if (t.kbit_fp32_upcast)
        out += std::string("  kbit_fp32_upcast: ") + (*t.kbit_fp32_upcast ? "true" : "false")
               + "\n";
    if (t.use_cache)
        out += std::string("  use_cache: ") + (*t.use_cache ? "true" : "false") + "\n";
    if (t.trainer_mixed_precision)
        out += std::string("  trainer_mixed_precision: ")
               + (*t.trainer_mixed_precision ? "true" : "false") + "\n";
    if (t.optimizer_in_backward)
        out += "  optimizer_in_backward: true\n";
    if (t.activation_offloading)
        out += "  activation_offloading: true\n";
    if (t.float8)
        out += "  float8: true\n";
}

void parallelismYaml(const ParallelismConfig &p, std::string &out)
{
    out += "parallelism:\n";
    out += "  gpus: " + std::to_string(p.gpus) + "\n";
    out += std::string("  sharding: ") + shardingName(p.sharding) + "\n";
    out += "  tensor_parallel: " + std::to_string(p.tensor_parallel) + "\n";
    if (p.sequence_parallel)
        out += std::string("  sequence_parallel: ") + (*p.sequence_parallel ? "true" : "false")
               + "\n";
    if (p.loss_parallel)
        out += std::string("  loss_parallel: ") + (*p.loss_parallel ? "true" : "false") + "\n";
    if (p.shard_group > 0)
        out += "  shard_group: " + std::to_string(p.shard_group) + "\n";
    if (p.context_parallel > 1)
        out += "  context_parallel: " + std::to_string(p.context_parallel) + "\n";
    // Every setting that is not the default, also those a single stage leaves unused, so that
    // what is saved loads back the same.
    const ParallelismConfig defaults;
    if (p.pipeline_parallel > 1)
        out += "  pipeline_parallel: " + std::to_string(p.pipeline_parallel) + "\n";
    if (p.pipeline_parallel > 1 || p.pipeline_schedule != defaults.pipeline_schedule)
        out += std::string("  pipeline_schedule: ") + pipelineScheduleName(p.pipeline_schedule)
               + "\n";
    if (p.pipeline_virtual_stages != defaults.pipeline_virtual_stages)
        out += "  pipeline_virtual_stages: " + std::to_string(p.pipeline_virtual_stages) + "\n";
    if (!p.pipeline_layers.empty()) {
        out += "  pipeline_layers: [";
        for (std::size_t i = 0; i < p.pipeline_layers.size(); ++i)
            out += (i ? ", " : "") + std::to_string(p.pipeline_layers[i]);
        out += "]\n";
    }
    if (p.fsdp_param_dtype)
        out += std::string("  fsdp_param_dtype: ") + paramDtypeName(*p.fsdp_param_dtype) + "\n";
    if (p.fsdp_reduce_dtype)
        out += std::string("  fsdp_reduce_dtype: ") + paramDtypeName(*p.fsdp_reduce_dtype) + "\n";
    const DeepSpeedConfig &d = p.deepspeed;
    if (!(d == DeepSpeedConfig{})) {
        out += "  deepspeed:\n";
        if (d.reduce_bucket_size)
            out += "    reduce_bucket_size: " + formatYamlNumber(*d.reduce_bucket_size) + "\n";
        if (d.overlap_comm)
            out += std::string("    overlap_comm: ") + (*d.overlap_comm ? "true" : "false") + "\n";
        if (d.sub_group_size)
            out += "    sub_group_size: " + formatYamlNumber(*d.sub_group_size) + "\n";
        if (d.bf16_master_weights)
            out += std::string("    bf16_master_weights: ")
                   + (*d.bf16_master_weights ? "true" : "false") + "\n";
        if (d.bf16_optimizer_states)
            out += std::string("    bf16_optimizer_states: ")
                   + (*d.bf16_optimizer_states ? "true" : "false") + "\n";
    }
    if (!p.deepspeed_config.empty())
        out += "  deepspeed_config: " + yamlString(p.deepspeed_config) + "\n";
}

} // namespace

std::string scenarioToYaml(const Scenario &s)
{
    const TrainingConfig &t = s.training;
    // What reading the file back would assume for the keys written only when they differ.
    TrainingConfig defaults;
    defaults.stack = t.stack;
    defaults.method = t.method;
    ParallelismConfig parallelDefaults;
    applyStackDefaults(defaults, parallelDefaults);
    std::string out;
    out += "format: ";
    out += kScenarioFormat;
    out += "\n";
    if (!s.name.empty())
        out += "name: " + yamlString(s.name) + "\n";
    if (!s.description.empty())
        out += "description: " + yamlString(s.description) + "\n";
    if (!(t.stack == StackConfig{}))
        out += stackYaml(t.stack);
    out += "model:\n";
    if (!s.model.preset.empty())
        out += "  preset: " + yamlString(s.model.preset) + "\n";
    if (!s.model.source.empty())
        out += "  source: " + yamlString(s.model.source) + "\n";
    writeArchitectureKeys(s.model, "  ", out);
    if (s.model.rope_scaling_factor)
        out += "  rope_scaling_factor: " + formatYamlNumber(*s.model.rope_scaling_factor) + "\n";
    if (s.model == ModelSpec{})
        out.resize(out.size() - 1), out += " {}\n";
    out += "training:\n";
    out += std::string("  mode: ") + modeName(t.mode) + "\n";
    out += std::string("  method: ") + methodName(t.method) + "\n";
    out += std::string("  precision: ") + precisionName(t.precision) + "\n";
    out += std::string("  quantization: ") + quantizationName(t.quantization) + "\n";
    out += std::string("  optimizer: ") + optimizerName(t.optimizer) + "\n";
    out += "  micro_batch_size: " + std::to_string(t.micro_batch_size) + "\n";
    out += "  sequence_length: " + std::to_string(t.sequence_length) + "\n";
    out += "  gradient_accumulation_steps: " + std::to_string(t.gradient_accumulation_steps) + "\n";
    out += std::string("  gradient_checkpointing: ") + checkpointingName(t.checkpointing) + "\n";
    if (t.checkpoint_every != 1)
        out += "  checkpoint_every: " + std::to_string(t.checkpoint_every) + "\n";
    out += std::string("  attention: ") + attentionName(t.attention) + "\n";
    if (t.batch_padding != BatchPadding::None)
        out += std::string("  batch_padding: ") + batchPaddingName(t.batch_padding) + "\n";
    if (t.loss != defaults.loss)
        out += std::string("  loss: ") + lossName(t.loss) + "\n";
    if (t.method != Method::Full || !(t.lora == defaults.lora)) {
        out += "  lora:\n";
        out += "    rank: " + std::to_string(t.lora.rank) + "\n";
        out += "    alpha: " + formatYamlNumber(t.lora.alpha) + "\n";
        out += "    dropout: " + formatYamlNumber(t.lora.dropout) + "\n";
        out += "    targets: [";
        const auto names = loraTargetNames(t.lora.targets);
        for (std::size_t i = 0; i < names.size(); ++i)
            out += (i ? ", " : "") + names[i];
        out += "]\n";
        out += std::string("    adapter_precision: ")
               + adapterPrecisionName(t.lora.adapter_precision) + "\n";
        if (t.lora.use_dora)
            out += "    use_dora: true\n";
        if (t.lora.use_rslora)
            out += "    use_rslora: true\n";
        if (t.lora.loraplus_lr_ratio > 0)
            out += "    loraplus_lr_ratio: " + formatYamlNumber(t.lora.loraplus_lr_ratio) + "\n";
    }
    writeAdapterAndFormatKeys(t, out);
    out += std::string("  offload: {optimizer: ") + (t.offload.optimizer ? "true" : "false")
           + ", parameters: " + (t.offload.parameters ? "true" : "false") + "}\n";
    trainingExtras(t, out);
    parallelismYaml(s.parallelism, out);
    if (!(s.overheads == OverheadConfig{})) {
        out += "overheads:\n";
        out += "  cuda_context: " + std::to_string(s.overheads.cuda_context_bytes) + "\n";
        out += "  nccl: " + std::to_string(s.overheads.nccl_bytes) + "\n";
        if (s.overheads.allocator_reserve_fraction)
            out += "  allocator_reserve: "
                   + formatYamlNumber(*s.overheads.allocator_reserve_fraction) + "\n";
        if (!s.overheads.allocator_conf.empty())
            out += "  allocator_conf: " + yamlString(s.overheads.allocator_conf) + "\n";
        if (s.overheads.extra_resident_bytes != 0)
            out += "  extra_resident: " + std::to_string(s.overheads.extra_resident_bytes) + "\n";
    }
    if (s.dataset) {
        out += "dataset:\n";
        out += "  examples: " + std::to_string(s.dataset->examples) + "\n";
        if (s.dataset->tokens_per_example > 0)
            out += "  tokens_per_example: " + std::to_string(s.dataset->tokens_per_example) + "\n";
        out += "  epochs: " + formatYamlNumber(s.dataset->epochs) + "\n";
    }
    if (!s.prices.empty()) {
        out += "prices:\n";
        for (const auto &[id, price] : s.prices)
            out += "  " + yamlString(id) + ": " + formatYamlNumber(price) + "\n";
    }
    auto list = [](const std::vector<std::string> &ids) {
        std::string text = "[";
        for (std::size_t i = 0; i < ids.size(); ++i)
            text += (i ? ", " : "") + yamlString(ids[i]);
        return text + "]";
    };
    out += "gpus: " + list(s.gpus) + "\n";
    if (!s.expected_fits.empty() || !s.expected_tight.empty() || !s.expected_not_fits.empty()) {
        out += "expected: {fits: " + list(s.expected_fits);
        if (!s.expected_tight.empty())
            out += ", tight: " + list(s.expected_tight);
        out += ", does_not_fit: " + list(s.expected_not_fits) + "}\n";
    }
    return out;
}

bool saveScenarioFile(const Scenario &scenario, const std::string &path, std::string &error)
{
    return writeFileAtomically(path, scenarioToYaml(scenario), error);
}

} // namespace membudget
