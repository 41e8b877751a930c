// SPDX-License-Identifier: GPL-3.0-or-later
#include "panels/throughput_text.h"

#include "base/time_format.h"
#include "throughput/throughput_model.h"

#include <QCoreApplication>

#include <cmath>

namespace membudget {

namespace {

QString tr(const char *text)
{
    return QCoreApplication::translate("ThroughputText", text);
}

QString str(const std::string &s)
{
    return QString::fromStdString(s);
}

} // namespace

GpuSpeed gpuSpeed(const Scenario &scenario, const EstimateInput &input, const GpuSpec &gpu)
{
    GpuSpeed out;
    out.throughput = estimateThroughput(input, gpu.performance);
    out.price = gpuHourPrice(scenario, gpu.id, gpu.performance.price_per_hour);
    out.overridden = scenario.prices.count(gpu.id) > 0;
    if (scenario.dataset)
        out.run = estimateRun(out.throughput, input, *scenario.dataset, out.price);
    return out;
}

QString speedCell(const GpuSpeed &speed, const EstimateInput &input)
{
    const ThroughputEstimate &t = speed.throughput;
    if (!t.valid)
        return QStringLiteral("—");
    if (input.training.mode == Mode::Inference)
        return tr("%1 · %2 tok/s decode")
            .arg(str(formatDuration(t.step_seconds)), str(formatRate(t.decode_tokens_per_second)));
    return tr("%1 · %2 tok/s")
        .arg(str(formatDuration(t.step_seconds)), str(formatRate(t.tokens_per_second)));
}

QString runCell(const GpuSpeed &speed)
{
    if (!speed.run.valid)
        return QString();
    return QStringLiteral("%1 · %2").arg(str(formatDuration(speed.run.run_seconds)),
                                         speed.run.has_price ? str(formatCost(speed.run.cost))
                                                             : tr("no price"));
}

QString speedToolTip(const GpuSpeed &speed, const GpuSpec &gpu, const EstimateInput &input)
{
    const ThroughputEstimate &t = speed.throughput;
    if (!t.valid)
        return tr("No speed estimate: %1").arg(str(t.problem));
    const bool train = input.training.mode == Mode::Train;
    QString text = tr("<b>%1</b>, modelled (docs/throughput-model.md)<br>").arg(str(gpu.name));
    text += (train ? tr("Optimizer step: %1") : tr("Prefill: %1"))
                .arg(str(formatDuration(t.step_seconds)));
    text += QStringLiteral("<br>")
            + tr("%1 tokens/s, %2 per GPU, MFU %3%")
                  .arg(str(formatRate(t.tokens_per_second)),
                       str(formatRate(t.tokens_per_second_per_gpu)))
                  .arg(std::lround(100 * t.mfu));
    if (!train)
        text += QStringLiteral("<br>")
                + tr("Decoding: %1 tokens/s").arg(str(formatRate(t.decode_tokens_per_second)));
    const ThroughputBreakdown &b = t.breakdown;
    const double total = std::max(b.total(), 1e-12);
    auto part = [&](const QString &name, double seconds) {
        if (seconds / total >= 0.005)
            text += QStringLiteral("<br>&nbsp;&nbsp;%1 %2%")
                        .arg(name)
                        .arg(std::lround(100 * seconds / total));
    };
    text += QStringLiteral("<br>") + tr("Where the step goes:");
    part(tr("matmuls"), b.matmul);
    part(tr("attention"), b.attention);
    part(tr("memory-bound kernels"), b.elementwise);
    part(tr("dequantization"), b.dequantize);
    part(tr("waiting for the host"), b.host_wait);
    part(tr("communication"), b.communication);
    part(tr("offload"), b.offload);
    part(tr("optimizer step"), b.optimizer);
    part(tr("pipeline bubble"), b.pipeline_bubble);
    if (speed.run.valid) {
        text += QStringLiteral("<br>")
                + tr("Run: %1, %2 GPU-hours")
                      .arg(str(formatDuration(speed.run.run_seconds)))
                      .arg(speed.run.gpu_hours, 0, 'f', 2);
        if (speed.run.has_price)
            text += QStringLiteral("<br>")
                    + tr("Cost: %1 at %2 per GPU-hour (%3)")
                          .arg(str(formatCost(speed.run.cost)),
                               str(formatCost(speed.price)),
                               speed.overridden
                                   ? tr("your price")
                                   : str(gpu.performance.price_source).toHtmlEscaped());
        else
            text += QStringLiteral("<br>") + tr("No price for this GPU: set one in Run & cost.");
    }
    return text;
}

QString timeChangeText(double tokensPerSecond, double referenceTokensPerSecond)
{
    if (!(tokensPerSecond > 0) || !(referenceTokensPerSecond > 0))
        return QString();
    const double change = referenceTokensPerSecond / tokensPerSecond - 1;
    if (std::abs(change) < 0.005)
        return tr("same time");
    return (change > 0 ? tr("+%1% time") : tr("−%1% time")).arg(std::lround(std::abs(change) * 100));
}

} // namespace membudget
