// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// "Export the setup you found": the settings MemBudget modelled, written as ready-to-paste
// configuration for the libraries people train with:
//   trainer     Python: transformers TrainingArguments + Trainer, with PEFT LoraConfig and
//               bitsandbytes BitsAndBytesConfig for LoRA/QLoRA
//   sft         Python: TRL SFTConfig + SFTTrainer
//   accelerate  YAML: an `accelerate launch --config_file` file (FSDP, DeepSpeed plugin or DDP)
//   deepspeed   JSON: a DeepSpeed config (ZeRO stage, offload, bf16/fp16, micro-batch, accumulation)
// Python and YAML files start with a comment naming the scenario, the model, MemBudget's estimate
// and what could not be expressed; JSON has no comments, so those notes come back in `notes` (the
// command line prints them on standard error, the app beside the preview). Only documented keys are
// written (tests/data/export-keys/ lists them, with the documentation they come from).

#include "export/export_plan.h"

#include <optional>
#include <string>
#include <vector>

namespace membudget {

enum class TrainingFormat { Trainer, Sft, Accelerate, DeepSpeed };

inline constexpr const char *kTrainingFormatNames[4] = {"trainer", "sft", "accelerate", "deepspeed"};
const char *trainingFormatName(TrainingFormat format);
bool parseTrainingFormat(const std::string &text, TrainingFormat &format);
// "Python", "YAML", "JSON"
const char *trainingFormatLanguage(TrainingFormat format);

struct TrainingExport
{
    std::string text;                // the file
    std::vector<std::string> header; // the comment header's lines (for JSON, which has none)
    std::vector<std::string> notes;  // what the settings cannot express (also in the header)
    std::string fileName;            // suggested name: train_membudget.py, ds_config.json...
};

// Nullopt with `problem` when the scenario cannot be exported (it does not resolve, or it is an
// inference scenario).
std::optional<TrainingExport> exportTrainingConfig(const Scenario &scenario,
                                                   const PresetCatalog &catalog,
                                                   TrainingFormat format,
                                                   std::string &problem);

TrainingExport exportTrainerPython(const ExportPlan &plan);
TrainingExport exportSftPython(const ExportPlan &plan);
TrainingExport exportAccelerateYaml(const ExportPlan &plan);
TrainingExport exportDeepSpeedJson(const ExportPlan &plan);

} // namespace membudget
