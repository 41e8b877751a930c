// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The settings MemBudget modelled, translated once into the words the Hugging Face training stack
// uses (optimizer names of transformers' OptimizerNames, attn_implementation values, PEFT target
// module names, dtypes), with what cannot be expressed kept as notes. Each export format
// (core/export/*_export.cpp) writes its file from this plan.

#include "base/units.h"
#include "model/scenario.h"

#include <optional>
#include <string>
#include <vector>

namespace membudget {

class PresetCatalog;

struct ExportPlan
{
    Scenario scenario; // as the user set it
    ModelFamily family = ModelFamily::Llama;
    std::string modelId;   // Hugging Face id ("mistralai/Mistral-7B-v0.1"); empty when unknown
    std::string revision;  // empty for main
    std::string modelName; // what the header calls the model
    Bytes peakPerGpu = 0;  // MemBudget's estimate, for the header
    std::int64_t dataParallel = 1;

    // transformers TrainingArguments(optim=...) name of the optimizer (training_args.py
    // OptimizerNames): adamw_torch, adamw_torch_fused, adamw_bnb_8bit, paged_adamw_32bit,
    // paged_adamw_8bit, sgd, adafactor, lion_32bit.
    std::string optim;
    // from_pretrained(attn_implementation=...): eager, sdpa, flash_attention_2.
    std::string attnImplementation;
    // torch dtype names: the dtype 16-bit compute uses ("bfloat16", "float16"), "float32" without.
    std::string computeDtype;
    bool halfCompute
        = false;       // bf16 or fp16 compute (Trainer bf16=/fp16=, accelerate mixed_precision)
    bool bf16 = false; // the 16-bit type is bfloat16 (else float16 when halfCompute)
    // Trainer bf16=/fp16= and accelerate mixed_precision: halfCompute unless the scenario says
    // trainer_mixed_precision: false (16-bit weights without autocast).
    bool mixedPrecisionFlag = false;
    std::vector<std::string> loraTargets; // PEFT target_modules; {"all-linear"} for every linear

    // What no format can say (tensor parallelism, selective checkpointing, SGD momentum, ...).
    std::vector<std::string> notes;

    std::string modelIdOrPlaceholder() const;
};

// Builds the plan; nullopt with `problem` when the scenario cannot be exported (it does not resolve,
// or it is an inference scenario: these files configure training).
std::optional<ExportPlan> makeExportPlan(const Scenario &scenario,
                                         const PresetCatalog &catalog,
                                         std::string &problem);

} // namespace membudget
