// SPDX-License-Identifier: GPL-3.0-or-later
#include "panels/breakdown_table.h"

#include "model/stack_profile.h"

#include <QCoreApplication>
#include <QLocale>
#include <QStringList>

#include <algorithm>

namespace membudget {

namespace {

QString tr(const char *text)
{
    return QCoreApplication::translate("Breakdown", text);
}

QString bytes(Bytes b, ByteUnit unit)
{
    return QString::fromStdString(formatBytes(b, unit));
}

QString count(qint64 v)
{
    return QString::fromStdString(formatCount(static_cast<double>(v)));
}

QString methodText(const TrainingConfig &t)
{
    switch (t.method) {
    case Method::Full:
        return t.mode == Mode::Train ? tr("full fine-tuning") : tr("inference");
    case Method::Lora:
        return QStringLiteral("LoRA r%1").arg(t.lora.rank);
    case Method::Qlora:
        return QStringLiteral("QLoRA r%1").arg(t.lora.rank);
    case Method::Ia3:
        return QStringLiteral("IA3");
    }
    return {};
}

// Columns shown for an estimate: the three phases of a training step, only forward for inference.
std::vector<Phase> phasesOf(const MemoryEstimate &est)
{
    if (!est.training)
        return {Phase::Forward};
    return {Phase::Forward, Phase::Backward, Phase::OptimizerStep};
}

} // namespace

QString modelDisplayName(const Scenario &scenario,
                         const PresetCatalog &catalog,
                         const MemoryEstimate &estimate)
{
    if (!scenario.model.preset.empty()) {
        if (const ModelPreset *preset = catalog.findModel(scenario.model.preset))
            return QString::fromStdString(preset->name);
        return QString::fromStdString(scenario.model.preset);
    }
    if (!scenario.model.source.empty()) // a Hugging Face model: its id
        return QString::fromStdString(scenario.model.source);
    const double params = estimate.parameters > 0 ? static_cast<double>(estimate.parameters)
                                                  : scenario.model.parameters.value_or(0.0);
    if (params <= 0)
        return tr("custom model");
    return tr("%1B-parameter model").arg(params / 1e9, 0, 'f', params < 1e10 ? 1 : 0);
}

QString shortSummary(const Scenario &scenario)
{
    const TrainingConfig &t = scenario.training;
    QStringList parts;
    if (t.mode == Mode::Inference)
        parts << tr("inference");
    else if (t.method != Method::Full)
        parts << methodText(t);
    else
        parts << tr("full");
    parts << QString::fromUtf8(precisionName(deepSpeedPrecision(t, scenario.parallelism)));
    // No-break spaces: "4 × 4,096" stays on one line where a label wraps.
    parts << QStringLiteral("%1\u00a0×\u00a0%2")
                 .arg(t.micro_batch_size)
                 .arg(count(t.sequence_length));
    const ParallelismConfig &par = scenario.parallelism;
    if (par.gpus > 1) {
        QString g = tr("%1 GPUs").arg(par.gpus);
        if (par.context_parallel > 1)
            g += QStringLiteral(" CP%1").arg(par.context_parallel);
        if (par.pipeline_parallel > 1)
            g += QStringLiteral(" PP%1").arg(par.pipeline_parallel);
        parts << g;
    }
    return parts.join(QStringLiteral(" · "));
}

QString scenarioDifferences(const Scenario &a, const Scenario &b, int limit)
{
    const TrainingConfig &t = a.training;
    const TrainingConfig &o = b.training;
    QStringList d;
    auto name = [](const char *n) { return QString::fromUtf8(n); };
    if (!(a.model == b.model)) {
        if (!a.model.preset.empty())
            d << QString::fromStdString(a.model.preset);
        else if (a.model.parameters)
            d << tr("%1B model").arg(*a.model.parameters / 1e9, 0, 'g', 3);
        else
            d << tr("custom model");
    }
    if (t.mode != o.mode)
        d << name(modeName(t.mode));
    if (t.method != o.method)
        d << methodText(t);
    else if (t.method != Method::Full && !(t.lora == o.lora))
        d << QStringLiteral("r%1").arg(t.lora.rank);
    if (t.precision != o.precision)
        d << name(precisionName(t.precision));
    if (t.quantization != o.quantization)
        d << name(quantizationName(t.quantization));
    if (t.optimizer != o.optimizer)
        d << name(optimizerName(t.optimizer));
    if (t.micro_batch_size != o.micro_batch_size)
        d << tr("batch %1").arg(t.micro_batch_size);
    if (t.sequence_length != o.sequence_length)
        d << tr("seq %1").arg(count(t.sequence_length));
    if (t.gradient_accumulation_steps != o.gradient_accumulation_steps)
        d << tr("accum. %1").arg(t.gradient_accumulation_steps);
    if (t.checkpointing != o.checkpointing)
        d << tr("ckpt %1").arg(name(checkpointingName(t.checkpointing)));
    if (t.attention != o.attention)
        d << name(attentionName(t.attention));
    if (t.loss != o.loss)
        d << tr("loss %1").arg(name(lossName(t.loss)));
    if (!(t.offload == o.offload))
        d << (t.offload.optimizer || t.offload.parameters ? tr("offload") : tr("no offload"));
    if (!(a.parallelism == b.parallelism)) {
        QString p = tr("%1 GPUs").arg(a.parallelism.gpus);
        if (a.parallelism.sharding != Sharding::None)
            p += QLatin1Char(' ') + name(shardingName(a.parallelism.sharding));
        if (a.parallelism.tensor_parallel > 1)
            p += QStringLiteral(" TP%1").arg(a.parallelism.tensor_parallel);
        if (a.parallelism.context_parallel > 1)
            p += QStringLiteral(" CP%1").arg(a.parallelism.context_parallel);
        if (a.parallelism.pipeline_parallel > 1)
            p += QStringLiteral(" PP%1").arg(a.parallelism.pipeline_parallel);
        d << p;
    }
    if (!(a.overheads == b.overheads))
        d << tr("overheads");
    if (d.isEmpty())
        return tr("same as current");
    if (d.size() > limit) {
        d = d.mid(0, limit);
        d.last() += QStringLiteral(" …");
    }
    return d.join(QStringLiteral(" · "));
}

QString scenarioCaption(const Scenario &scenario,
                        const PresetCatalog &catalog,
                        const MemoryEstimate &estimate)
{
    const TrainingConfig &t = scenario.training;
    const ParallelismConfig &p = scenario.parallelism;
    QStringList parts;
    parts << modelDisplayName(scenario, catalog, estimate);
    parts << methodText(t);
    parts << QString::fromUtf8(precisionName(deepSpeedPrecision(t, scenario.parallelism)));
    if (t.quantization != Quantization::None)
        parts << tr("%1 base").arg(QString::fromUtf8(quantizationName(t.quantization)));
    if (t.mode == Mode::Train)
        parts << QString::fromUtf8(optimizerName(t.optimizer));
    parts << tr("micro-batch %1 × %2 tokens").arg(t.micro_batch_size).arg(count(t.sequence_length));
    if (t.mode == Mode::Train && t.checkpointing != Checkpointing::None)
        parts << tr("%1 checkpointing").arg(QString::fromUtf8(checkpointingName(t.checkpointing)));
    parts << tr("%1 attention").arg(QString::fromUtf8(attentionName(t.attention)));
    if (t.offload.optimizer || t.offload.parameters)
        parts << tr("CPU offload");
    if (p.gpus > 1) {
        QString g = tr("%1 GPUs").arg(p.gpus);
        if (p.sharding != Sharding::None)
            g += QLatin1Char(' ') + QString::fromUtf8(shardingName(p.sharding));
        if (p.tensor_parallel > 1)
            g += QStringLiteral(" TP%1").arg(p.tensor_parallel);
        if (p.context_parallel > 1)
            g += QStringLiteral(" CP%1").arg(p.context_parallel);
        if (p.pipeline_parallel > 1)
            g += QStringLiteral(" PP%1 (%2)")
                     .arg(p.pipeline_parallel)
                     .arg(QString::fromUtf8(pipelineScheduleName(p.pipeline_schedule)));
        parts << g;
    } else {
        parts << tr("1 GPU");
    }
    return parts.join(QStringLiteral(", ")) + QStringLiteral(". ")
           + (estimate.derivation.pipeline_stages > 1
                  ? tr("Per-GPU estimate of pipeline stage %1 of %2 by MemBudget %3.")
                        .arg(estimate.derivation.pipeline_stage + 1)
                        .arg(estimate.derivation.pipeline_stages)
                        .arg(QStringLiteral(MEMBUDGET_VERSION))
                  : tr("Per-GPU estimate by MemBudget %1.").arg(QStringLiteral(MEMBUDGET_VERSION)));
}

QString verdictText(const GpuVerdict &v, const MemoryEstimate &estimate, ByteUnit unit)
{
    const Bytes capacity = v.capacity;
    switch (v.verdict) {
    case FitVerdict::Fits:
        return tr("fits, %1 free").arg(bytes(capacity - estimate.device_total, unit));
    case FitVerdict::Tight:
        return tr("tight: %1").arg(QString::fromStdString(v.reason));
    case FitVerdict::DoesNotFit:
        break;
    }
    if (estimate.device_total > capacity)
        return tr("does not fit, %1 over").arg(bytes(estimate.device_total - capacity, unit));
    return tr("does not fit: %1").arg(QString::fromStdString(v.reason));
}

QString breakdownMarkdown(const Scenario &scenario,
                          const PresetCatalog &catalog,
                          const StepModel &model,
                          const MemoryEstimate &est,
                          const std::vector<GpuSpec> &gpus,
                          ByteUnit unit)
{
    const auto phases = phasesOf(est);
    QString out;
    out += QStringLiteral("**%1**\n\n")
               .arg(scenario.name.empty() ? modelDisplayName(scenario, catalog, est)
                                          : QString::fromStdString(scenario.name));
    out += scenarioCaption(scenario, catalog, est) + QStringLiteral("\n\n");
    out += QStringLiteral("| %1 |").arg(tr("Component"));
    for (Phase ph : phases)
        out += QStringLiteral(" %1 |").arg(QString::fromUtf8(phaseLabel(ph)));
    out += QStringLiteral(" %1 |\n|---|").arg(tr("At peak"));
    for (std::size_t i = 0; i < phases.size(); ++i)
        out += QStringLiteral("---:|");
    out += QStringLiteral("---:|\n");
    for (int c = 0; c < kComponentCount; ++c) {
        const Component comp = static_cast<Component>(c);
        if (!componentApplies(comp, est.training))
            continue; // no gradient rows in inference, no KV cache row in training
        out += QStringLiteral("| %1 |").arg(QString::fromUtf8(componentLabel(comp)));
        for (Phase ph : phases)
            out += QStringLiteral(" %1 |").arg(bytes(est.phase(ph)[comp], unit));
        out += QStringLiteral(" %1 |\n").arg(bytes(est.components[comp], unit));
    }
    out += QStringLiteral("| **%1** |").arg(tr("Total (nvidia-smi)"));
    for (Phase ph : phases)
        out += QStringLiteral(" **%1** |").arg(bytes(est.phase(ph).total(), unit));
    out += QStringLiteral(" **%1** |\n\n").arg(bytes(est.device_total, unit));
    out += tr("Peak in the %1 phase: %2 allocated, %3 reserved, %4 per GPU in total.")
               .arg(QString::fromUtf8(phaseLabel(est.peak_phase)).toLower(),
                    bytes(est.peak_allocated, unit),
                    bytes(est.peak_reserved, unit),
                    bytes(est.device_total, unit));
    out += QLatin1Char('\n');
    if (est.cpu_offload_total > 0)
        out += QStringLiteral("\n")
               + tr("CPU RAM for offload: %1 in total.").arg(bytes(est.cpu_offload_total, unit))
               + QLatin1Char('\n');
    if (!gpus.empty()) {
        out += QLatin1Char('\n');
        for (const GpuSpec &gpu : gpus)
            out += QStringLiteral("- %1 (%2): %3\n")
                       .arg(QString::fromStdString(gpu.name),
                            QString::fromStdString(formatCapacity(gpu.memory_bytes, unit)),
                            verdictText(gpuVerdict(model, est, gpu.memory_bytes, unit), est, unit));
    }
    return out;
}

QString breakdownCsv(const MemoryEstimate &est)
{
    QString out = QStringLiteral(
        "component,forward_bytes,backward_bytes,optimizer_step_bytes,peak_bytes\n");
    auto row = [&](const QString &key, auto get) {
        out += key;
        for (int p = 0; p < kPhaseCount; ++p)
            out += QLatin1Char(',') + QString::number(get(est.phases[static_cast<std::size_t>(p)]));
        out += QLatin1Char(',') + QString::number(get(est.components)) + QLatin1Char('\n');
    };
    for (int c = 0; c < kComponentCount; ++c) {
        const Component comp = static_cast<Component>(c);
        row(QString::fromUtf8(componentKey(comp)), [comp](const Breakdown &b) { return b[comp]; });
    }
    row(QStringLiteral("allocated"), [](const Breakdown &b) { return b.allocated(); });
    row(QStringLiteral("total"), [](const Breakdown &b) { return b.total(); });
    return out;
}

QString breakdownText(const Scenario &scenario,
                      const PresetCatalog &catalog,
                      const StepModel &model,
                      const MemoryEstimate &est,
                      const std::vector<GpuSpec> &gpus,
                      ByteUnit unit)
{
    const auto phases = phasesOf(est);
    const int first = 20;
    const int col = 16;
    auto cell = [col](const QString &s) { return s.rightJustified(col); };
    QString out;
    out += (scenario.name.empty() ? modelDisplayName(scenario, catalog, est)
                                  : QString::fromStdString(scenario.name))
           + QLatin1Char('\n');
    out += scenarioCaption(scenario, catalog, est) + QStringLiteral("\n\n");
    QString header = tr("Component").leftJustified(first);
    for (Phase ph : phases)
        header += cell(QString::fromUtf8(phaseLabel(ph)));
    header += cell(tr("At peak"));
    out += header + QLatin1Char('\n') + QString(header.size(), QLatin1Char('-'))
           + QLatin1Char('\n');
    for (int c = 0; c < kComponentCount; ++c) {
        const Component comp = static_cast<Component>(c);
        if (!componentApplies(comp, est.training))
            continue;
        QString line = QString::fromUtf8(componentLabel(comp)).leftJustified(first);
        for (Phase ph : phases)
            line += cell(bytes(est.phase(ph)[comp], unit));
        line += cell(bytes(est.components[comp], unit));
        out += line + QLatin1Char('\n');
    }
    out += QString(header.size(), QLatin1Char('-')) + QLatin1Char('\n');
    QString total = tr("Total (nvidia-smi)").leftJustified(first);
    for (Phase ph : phases)
        total += cell(bytes(est.phase(ph).total(), unit));
    total += cell(bytes(est.device_total, unit));
    out += total + QStringLiteral("\n\n");
    out += tr("Peak in the %1 phase: %2 allocated, %3 reserved, %4 per GPU in total.")
               .arg(QString::fromUtf8(phaseLabel(est.peak_phase)).toLower(),
                    bytes(est.peak_allocated, unit),
                    bytes(est.peak_reserved, unit),
                    bytes(est.device_total, unit))
           + QLatin1Char('\n');
    if (est.cpu_offload_total > 0)
        out += tr("CPU RAM for offload: %1 in total.").arg(bytes(est.cpu_offload_total, unit))
               + QLatin1Char('\n');
    for (const GpuSpec &gpu : gpus)
        out += QStringLiteral("%1 (%2): %3\n")
                   .arg(QString::fromStdString(gpu.name),
                        QString::fromStdString(formatCapacity(gpu.memory_bytes, unit)),
                        verdictText(gpuVerdict(model, est, gpu.memory_bytes, unit), est, unit));
    return out;
}

} // namespace membudget
