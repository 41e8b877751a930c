// SPDX-License-Identifier: GPL-3.0-or-later
#include "export/training_export.h"

namespace membudget {

const char *trainingFormatName(TrainingFormat format)
{
    return kTrainingFormatNames[static_cast<int>(format)];
}

bool parseTrainingFormat(const std::string &text, TrainingFormat &format)
{
    for (int i = 0; i < 4; ++i) {
        if (text == kTrainingFormatNames[i]) {
            format = static_cast<TrainingFormat>(i);
            return true;
        }
    }
    return false;
}

const char *trainingFormatLanguage(TrainingFormat format)
{
    switch (format) {
    case TrainingFormat::Trainer:
    case TrainingFormat::Sft:
        return "Python";
    case TrainingFormat::Accelerate:
        return "YAML";
    case TrainingFormat::DeepSpeed:
        return "JSON";
    }
    return "";
}

std::optional<TrainingExport> exportTrainingConfig(const Scenario &scenario,
                                                   const PresetCatalog &catalog,
                                                   TrainingFormat format,
                                                   std::string &problem)
{
    const auto plan = makeExportPlan(scenario, catalog, problem);
    if (!plan)
        return std::nullopt;
    switch (format) {
    case TrainingFormat::Trainer:
        return exportTrainerPython(*plan);
    case TrainingFormat::Sft:
        return exportSftPython(*plan);
    case TrainingFormat::Accelerate:
        return exportAccelerateYaml(*plan);
    case TrainingFormat::DeepSpeed:
        return exportDeepSpeedJson(*plan);
    }
    return std::nullopt;
}

} // namespace membudget
