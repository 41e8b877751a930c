// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/deepspeed_config.h"

#include "io/input_file.h"

#include <nlohmann/json.hpp>

#include <cctype>
#include <filesystem>

namespace membudget {

namespace {

using Json = nlohmann::json;

// "line:column" of a byte offset in `text`.
std::string position(const std::string &text, std::size_t offset)
{
    int line = 1, column = 1;
    for (std::size_t i = 0; i < offset && i < text.size(); ++i) {
        if (text[i] == '\n') {
            ++line;
            column = 1;
        } else {
            ++column;
        }
    }
    return std::to_string(line) + ":" + std::to_string(column);
}

bool isAuto(const Json &v)
{
    return v.is_string() && v.get<std::string>() == "auto";
}

// A number (or "auto": left unset); false for anything else.
bool readNumber(const Json &map, const char *key, std::optional<double> &out, std::string &problem)
{
    if (!map.contains(key) || isAuto(map[key]))
        return true;
    const Json &v = map[key];
    if (!v.is_number() || v.get<double>() < 0) {
        problem = std::string(key) + " must be a number of elements or \"auto\"";
        return false;
    }
    out = v.get<double>();
    return true;
}

bool readFlag(const Json &map, const char *key, std::optional<bool> &out, std::string &problem)
{
    if (!map.contains(key) || isAuto(map[key]))
        return true;
    if (!map[key].is_boolean()) {
        problem = std::string(key) + " must be true, false or \"auto\"";
        return false;
    }
    out = map[key].get<bool>();
    return true;
}

bool enabled(const Json &root, const char *section)
{
    if (!root.contains(section) || !root[section].is_object())
        return false;
    const Json &s = root[section];
    return s.contains("enabled") && s["enabled"].is_boolean() && s["enabled"].get<bool>();
}

// DeepSpeed's torch_autocast section (runtime/torch_autocast.py): autocast on the fp32 weights, in
// its dtype ("bfloat16", "bf16", "torch.bfloat16", ...); without one torch.autocast's CUDA default,
// float16.
Precision autocastPrecision(const Json &section)
{
    const bool bf16 = section.contains("dtype") && section["dtype"].is_string()
                      && section["dtype"].get<std::string>().find("bf") != std::string::npos;
    return bf16 ? Precision::AmpBf16 : Precision::AmpFp16;
}

bool offloadsTo(const Json &zero, const char *key)
{
    if (!zero.contains(key) || !zero[key].is_object() || !zero[key].contains("device"))
        return false;
    const Json &d = zero[key]["device"];
    return d.is_string() && (d.get<std::string>() == "cpu" || d.get<std::string>() == "nvme");
}

bool readZero(const Json &zero, DeepSpeedFileSettings &out, std::string &problem)
{
    if (!zero.is_object()) {
        problem = "zero_optimization must be an object";
        return false;
    }
    if (zero.contains("stage") && !isAuto(zero["stage"])) {
        const Json &st = zero["stage"];
        if (!st.is_number_integer() || st.get<int>() < 0 || st.get<int>() > 3) {
            problem = "zero_optimization.stage must be 0, 1, 2 or 3";
            return false;
        }
        constexpr Sharding stages[]
            = {Sharding::None, Sharding::Zero1, Sharding::Zero2, Sharding::Zero3};
        out.sharding = stages[st.get<int>()];
    }
    DeepSpeedConfig &b = out.buckets;
    if (!(readNumber(zero, "reduce_bucket_size", b.reduce_bucket_size, problem)
          && readFlag(zero, "overlap_comm", b.overlap_comm, problem)
          && readNumber(zero, "sub_group_size", b.sub_group_size, problem)))
        return false;
    // MiCS (DeepSpeed docs, zero3.rst "MiCS Configurations"): -1 (the default) turns it off.
    if (zero.contains("mics_shard_size") && !isAuto(zero["mics_shard_size"])) {
        const Json &m = zero["mics_shard_size"];
        if (!m.is_number_integer() || m.get<std::int64_t>() > 1'000'000) {
            problem = "zero_optimization.mics_shard_size must be a whole number of GPUs";
            return false;
        }
        out.mics_shard_size = std::max<std::int64_t>(0, m.get<std::int64_t>());
    }
    if (zero.contains("offload_optimizer"))
        out.offload_optimizer = offloadsTo(zero, "offload_optimizer");
    if (zero.contains("offload_param"))
        out.offload_parameters = offloadsTo(zero, "offload_param");
    return true;
}

} // namespace

bool parseDeepSpeedConfig(const std::string &text, DeepSpeedFileSettings &out, std::string &problem)
{
    Json root;
    try {
        root = Json::parse(text);
    } catch (const Json::parse_error &e) {
        problem = position(text, e.byte > 0 ? e.byte - 1 : 0) + ": not valid JSON";
        return false;
    }
    if (!root.is_object()) {
        problem = "1:1: a DeepSpeed config is a JSON object";
        return false;
    }
    if (root.contains("zero_optimization") && !readZero(root["zero_optimization"], out, problem))
        return false;
    if (root.contains("bf16") && root["bf16"].is_object()
        && !(readFlag(root["bf16"],
                      "bf16_master_weights_and_grads",
                      out.buckets.bf16_master_weights,
                      problem)
             && readFlag(root["bf16"],
                         "bf16_optimizer_states",
                         out.buckets.bf16_optimizer_states,
                         problem)))
        return false;
    // DeepSpeed's default (precision_config.py, DeepSpeedBF16Config): fp32 states beside bf16
    // masters, which needs ZeRO-Offload.
    if (out.buckets.bf16_master_weights.value_or(false) && !out.buckets.bf16_optimizer_states)
        out.buckets.bf16_optimizer_states = false;
    if (enabled(root, "bf16"))
        out.precision = out.buckets.bf16_master_weights.value_or(false) ? Precision::Bf16
                                                                        : Precision::MixedBf16;
    else if (enabled(root, "fp16"))
        out.precision = Precision::MixedFp16;
    else if (enabled(root, "torch_autocast"))
        out.precision = autocastPrecision(root["torch_autocast"]);
    return true;
}

bool readDeepSpeedConfigFile(const std::string &path,
                             DeepSpeedFileSettings &out,
                             std::string &problem)
{
    std::string text;
    LoadError error;
    if (!readInputFile(path, "DeepSpeed config", text, error)
        || !checkInputText(text, path, error)) {
        problem = error.toString();
        return false;
    }
    std::string what;
    if (!parseDeepSpeedConfig(text, out, what)) {
        problem = path + ":" + what;
        if (what.empty() || !std::isdigit(static_cast<unsigned char>(what[0])))
            problem = path + ": " + what;
        return false;
    }
    return true;
}

std::string resolveBeside(const std::string &scenarioFile, const std::string &path)
{
    const std::filesystem::path p(path);
    if (p.is_absolute() || scenarioFile.empty())
        return path;
    return (std::filesystem::path(scenarioFile).parent_path() / p).string();
}

void applyDeepSpeedFileSettings(const DeepSpeedFileSettings &file,
                                ExplicitKeys &x,
                                TrainingConfig &training,
                                ParallelismConfig &parallelism)
{
    if (file.sharding && !x.sharding) {
        parallelism.sharding = *file.sharding;
        x.sharding = true;
    }
    if (file.precision && !x.precision) {
        training.precision = *file.precision;
        x.precision = true;
    }
    if (!x.offload) {
        training.offload.optimizer = file.offload_optimizer.value_or(training.offload.optimizer);
        training.offload.parameters = file.offload_parameters.value_or(training.offload.parameters);
    }
    parallelism.deepspeed_from_file = file.buckets;
    if (file.mics_shard_size > 0 && parallelism.shard_group == 0)
        parallelism.shard_group = file.mics_shard_size;
}

} // namespace membudget
