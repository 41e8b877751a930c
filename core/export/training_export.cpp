// SPDX-License-Identifier: GPL-3.0-or-later
#include "export/training_export.h"

namespace membudget {

const char *exportFormatName(ExportFormat format)
{
    return kExportFormatNames[static_cast<int>(format)];
}

bool parseExportFormat(const std::string &text, ExportFormat &format)
{
    for (int i = 0; i < 4; ++i) {
        if (text == kExportFormatNames[i]) {
            format = static_cast<ExportFormat>(i);
            return true;
        }
    }
    return false;
}

const char *exportFormatLanguage(ExportFormat format)
{
    switch (format) {
    case ExportFormat::Trainer:
    case ExportFormat::Sft:
        return "Python";
    case ExportFormat::Accelerate:
        return "YAML";
    case ExportFormat::DeepSpeed:
        return "JSON";
    }
    return "";
}

std::optional<TrainingExport> exportTrainingConfig(const Scenario &scenario,
                                                   const PresetCatalog &catalog,
                                                   ExportFormat format,
                                                   std::string &problem)
{
    const auto plan = makeExportPlan(scenario, catalog, problem);
    if (!plan)
        return std::nullopt;
    switch (format) {
    case ExportFormat::Trainer:
        return exportTrainerPython(*plan);
    case ExportFormat::Sft:
        return exportSftPython(*plan);
    case ExportFormat::Accelerate:
        return exportAccelerateYaml(*plan);
    case ExportFormat::DeepSpeed:
        return exportDeepSpeedJson(*plan);
    }
    return std::nullopt;
}

} // namespace membudget
