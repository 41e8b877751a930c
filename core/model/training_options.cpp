// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/training_options.h"

#include "base/enum_names.h"

#include <algorithm>

namespace membudget {

const char *const kModeNames[2] = {"train", "inference"};
const char *const kMethodNames[4] = {"full", "lora", "qlora", "ia3"};
const char *const kPrecisionNames[7]
    = {"fp32", "amp-bf16", "amp-fp16", "bf16", "fp16", "mixed-bf16", "mixed-fp16"};
const char *const kQuantizationNames[16] = {"none",
                                            "int8",
                                            "nf4",
                                            "nf4-double",
                                            "fp4",
                                            "fp4-double",
                                            "gptq",
                                            "awq",
                                            "fp8",
                                            "hqq",
                                            "torchao-int4",
                                            "torchao-int8",
                                            "q4_k",
                                            "q5_k",
                                            "q6_k",
                                            "q8_0"};
const char *const kOptimizerNames[9] = {"adamw",
                                        "adamw-8bit",
                                        "paged-adamw",
                                        "paged-adamw-8bit",
                                        "sgd",
                                        "sgd-momentum",
                                        "adafactor",
                                        "lion",
                                        "adamw-fused"};
const char *const kCheckpointingNames[4] = {"none", "full", "selective", "op-selective"};
const char *const kAttentionNames[3] = {"eager", "sdpa", "flash"};
const char *const kBatchPaddingNames[3] = {"none", "padded", "packed"};
const char *const kShardingNames[6]
    = {"none", "zero1", "zero2", "zero3", "fsdp-full", "fsdp-grad-op"};
const char *const kPipelineScheduleNames[3] = {"1f1b", "gpipe", "interleaved-1f1b"};
const char *const kAdapterPrecisionNames[2] = {"fp32", "base"};
const char *const kLossNames[10] = {"hf",
                                    "hf-legacy",
                                    "chunked",
                                    "hf-4.46",
                                    "liger-fused",
                                    "torchtune-chunked",
                                    "no-upcast",
                                    "fp32-output",
                                    "fp32-output-kept",
                                    "trl-chunked-nll"};
const char *const kStackNames[7] = {"plain-torch",
                                    "hf-trainer",
                                    "trl-sft",
                                    "accelerate-fsdp",
                                    "deepspeed",
                                    "torchtune",
                                    "torchtitan"};
const char *const kParamDtypeNames[3] = {"fp32", "bf16", "fp16"};
const char *const kLoraTargetNames[7]
    = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};

std::string allowedNames(const char *const *names, int count)
{
    std::string out;
    for (int i = 0; i < count; ++i) {
        if (i > 0)
            out += i + 1 == count ? " or " : ", ";
        out += names[i];
    }
    return out;
}

const char *modeName(Mode v)
{
    return kModeNames[static_cast<int>(v)];
}
bool parseMode(const std::string &s, Mode &v)
{
    return parseEnumName(kModeNames, s, v);
}
const char *methodName(Method v)
{
    return kMethodNames[static_cast<int>(v)];
}
bool parseMethod(const std::string &s, Method &v)
{
    return parseEnumName(kMethodNames, s, v);
}
const char *precisionName(Precision v)
{
    return kPrecisionNames[static_cast<int>(v)];
}
bool parsePrecision(const std::string &s, Precision &v)
{
    return parseEnumName(kPrecisionNames, s, v);
}
const char *quantizationName(Quantization v)
{
    return kQuantizationNames[static_cast<int>(v)];
}
bool parseQuantization(const std::string &s, Quantization &v)
{
    return parseEnumName(kQuantizationNames, s, v);
}
const char *optimizerName(Optimizer v)
{
    return kOptimizerNames[static_cast<int>(v)];
}
bool parseOptimizer(const std::string &s, Optimizer &v)
{
    return parseEnumName(kOptimizerNames, s, v);
}
const char *checkpointingName(Checkpointing v)
{
    return kCheckpointingNames[static_cast<int>(v)];
}
bool parseCheckpointing(const std::string &s, Checkpointing &v)
{
    return parseEnumName(kCheckpointingNames, s, v);
}
std::int64_t checkpointedLayers(const TrainingConfig &t, std::int64_t layers)
{
    if (t.mode != Mode::Train)
        return 0;
    if (t.checkpointing == Checkpointing::OpSelective)
        return layers;
    if (t.checkpointing != Checkpointing::Full)
        return 0;
    return layers / std::max<std::int64_t>(1, t.checkpoint_every);
}
const char *attentionName(Attention v)
{
    return kAttentionNames[static_cast<int>(v)];
}
bool parseAttention(const std::string &s, Attention &v)
{
    return parseEnumName(kAttentionNames, s, v);
}

const char *batchPaddingName(BatchPadding v)
{
    return kBatchPaddingNames[static_cast<int>(v)];
}
bool parseBatchPadding(const std::string &s, BatchPadding &v)
{
    return parseEnumName(kBatchPaddingNames, s, v);
}
const char *shardingName(Sharding v)
{
    return kShardingNames[static_cast<int>(v)];
}
bool parseSharding(const std::string &s, Sharding &v)
{
    return parseEnumName(kShardingNames, s, v);
}
const char *pipelineScheduleName(PipelineSchedule v)
{
    return kPipelineScheduleNames[static_cast<int>(v)];
}
bool parsePipelineSchedule(const std::string &s, PipelineSchedule &v)
{
    return parseEnumName(kPipelineScheduleNames, s, v);
}
const char *lossName(LossImplementation v)
{
    return kLossNames[static_cast<int>(v)];
}
bool parseLoss(const std::string &s, LossImplementation &v)
{
    return parseEnumName(kLossNames, s, v);
}
const char *stackName(Stack v)
{
    return kStackNames[static_cast<int>(v)];
}
bool parseStack(const std::string &s, Stack &v)
{
    return parseEnumName(kStackNames, s, v);
}
const char *paramDtypeName(ParamDtype v)
{
    return kParamDtypeNames[static_cast<int>(v)];
}
bool parseParamDtype(const std::string &s, ParamDtype &v)
{
    return parseEnumName(kParamDtypeNames, s, v);
}
const char *adapterPrecisionName(AdapterPrecision v)
{
    return kAdapterPrecisionNames[static_cast<int>(v)];
}
bool parseAdapterPrecision(const std::string &s, AdapterPrecision &v)
{
    return parseEnumName(kAdapterPrecisionNames, s, v);
}

const char *loraTargetName(LoraTarget t)
{
    for (int i = 0; i < 7; ++i) {
        if (static_cast<unsigned>(t) == (1u << i))
            return kLoraTargetNames[i];
    }
    return "all-linear";
}

bool parseLoraTarget(const std::string &s, unsigned &bits)
{
    if (s == "all-linear") {
        bits |= TargetAllLinear;
        return true;
    }
    for (int i = 0; i < 7; ++i) {
        if (s == kLoraTargetNames[i]) {
            bits |= 1u << i;
            return true;
        }
    }
    return false;
}

std::vector<std::string> loraTargetNames(unsigned bits)
{
    if ((bits & TargetAllLinear) == TargetAllLinear)
        return {"all-linear"};
    std::vector<std::string> out;
    for (int i = 0; i < 7; ++i) {
        if (bits & (1u << i))
            out.emplace_back(kLoraTargetNames[i]);
    }
    return out;
}

bool isAmp(Precision p)
{
    return p == Precision::AmpBf16 || p == Precision::AmpFp16;
}
bool isFp16(Precision p)
{
    return p == Precision::AmpFp16 || p == Precision::Fp16 || p == Precision::MixedFp16;
}

bool isPure16(Precision p)
{
    return p == Precision::Bf16 || p == Precision::Fp16;
}
bool isMixedMaster(Precision p)
{
    return p == Precision::MixedBf16 || p == Precision::MixedFp16;
}
bool is16bitWeights(Precision p)
{
    return isPure16(p) || isMixedMaster(p);
}
bool isAdapterMethod(Method m)
{
    return m != Method::Full;
}

} // namespace membudget
