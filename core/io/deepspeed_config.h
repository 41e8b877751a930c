// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/stack_profile.h"
#include "model/training_options.h"

#include <optional>
#include <string>

namespace membudget {

// What MemBudget takes from a DeepSpeed JSON config (deepspeed/runtime/zero/config.py and
// runtime/config.py): the ZeRO stage, CPU offload, bf16/fp16 mode and the ZeRO-1/2 gradient
// buckets. "auto" values (filled by Hugging Face's integration) are left to the stack.
struct DeepSpeedFileSettings
{
    std::optional<Sharding> sharding; // zero_optimization.stage 0..3
    // bf16.enabled / fp16.enabled: mixed-bf16 / mixed-fp16 (bf16 with bf16_master_weights_and_grads);
    // torch_autocast.enabled: amp-bf16 / amp-fp16
    std::optional<Precision> precision;
    std::optional<bool> offload_optimizer, offload_parameters; // offload_*.device cpu or nvme
    std::int64_t mics_shard_size = 0; // zero_optimization.mics_shard_size (MiCS), > 0 when set
    DeepSpeedConfig buckets;
};

// Parses the JSON text of a DeepSpeed config. False with `problem` ("line:column: what") for
// malformed JSON or a value of the wrong type.
bool parseDeepSpeedConfig(const std::string &text, DeepSpeedFileSettings &out, std::string &problem);

// Reads and parses a DeepSpeed config file; `problem` starts with the file's name.
bool readDeepSpeedConfigFile(const std::string &path,
                             DeepSpeedFileSettings &out,
                             std::string &problem);

// `path` relative to the folder of `scenarioFile` (absolute paths unchanged).
std::string resolveBeside(const std::string &scenarioFile, const std::string &path);

// The file's settings for the keys the scenario does not set (`explicitKeys` is updated: what the
// file sets counts as set for the stack's defaults).
void applyDeepSpeedFileSettings(const DeepSpeedFileSettings &file,
                                ExplicitKeys &explicitKeys,
                                TrainingConfig &training,
                                ParallelismConfig &parallelism);

} // namespace membudget
