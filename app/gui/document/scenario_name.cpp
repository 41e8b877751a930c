// SPDX-License-Identifier: GPL-3.0-or-later
#include "document/scenario_name.h"

#include "model/stack_profile.h"

#include <QCoreApplication>
#include <QLocale>
#include <QRegularExpression>
#include <QStringList>

namespace membudget {

namespace {

QString tr(const char *text)
{
    return QCoreApplication::translate("ScenarioName", text);
}

QString modelName(const ModelSpec &model, const PresetCatalog &catalog)
{
    if (!model.preset.empty()) {
        const ModelPreset *preset = catalog.findModel(model.preset);
        return QString::fromStdString(preset ? preset->name : model.preset);
    }
    if (model.parameters && *model.parameters > 0)
        return tr("%1B model").arg(*model.parameters / 1e9, 0, 'f', *model.parameters < 1e10 ? 1 : 0);
    return tr("Custom model");
}

} // namespace

QString derivedScenarioName(const Scenario &s, const PresetCatalog &catalog)
{
    const TrainingConfig &t = s.training;
    QString head = modelName(s.model, catalog);
    if (t.mode == Mode::Inference)
        head += QLatin1Char(' ') + tr("inference");
    else if (t.method == Method::Lora)
        head += QStringLiteral(" LoRA r%1").arg(t.lora.rank);
    else if (t.method == Method::Qlora)
        head += QStringLiteral(" QLoRA r%1").arg(t.lora.rank);
    else
        head += QLatin1Char(' ') + tr("full fine-tuning");
    QStringList parts{head, QString::fromUtf8(precisionName(deepSpeedPrecision(t, s.parallelism)))};
    parts << tr("%1 × %2 tokens")
                 .arg(QLocale().toString(static_cast<qlonglong>(t.micro_batch_size)),
                      QLocale().toString(static_cast<qlonglong>(t.sequence_length)));
    if (s.parallelism.gpus > 1)
        parts << tr("%1 GPUs").arg(s.parallelism.gpus);
    return parts.join(QStringLiteral(", "));
}

QString fileNameFor(const QString &name, int maxLength)
{
    QString out;
    for (QString word : name.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
        word = word.toLower();
        word.replace(QChar(0x00D7), QLatin1Char('x')); // ×
        word.remove(QRegularExpression(QStringLiteral("[^a-z0-9.x_-]")));
        word.replace(QRegularExpression(QStringLiteral("^[.-]+|[.-]+$")), QString());
        if (word.isEmpty())
            continue;
        if (!out.isEmpty() && out.size() + 1 + word.size() > maxLength)
            break;
        out += (out.isEmpty() ? QString() : QStringLiteral("-")) + word;
    }
    // "4 x 4096" reads better as "4x4096".
    out.replace(QRegularExpression(QStringLiteral("-x-")), QStringLiteral("x"));
    return out.isEmpty() ? QStringLiteral("scenario") : out;
}

bool sameSettings(const Scenario &a, const Scenario &b)
{
    // The GPUs compared against are a view of the scenario, not part of what it is.
    return a.model == b.model && a.training == b.training && a.parallelism == b.parallelism
           && a.overheads == b.overheads;
}

} // namespace membudget
