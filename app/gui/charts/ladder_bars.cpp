// SPDX-License-Identifier: GPL-3.0-or-later
#include "charts/ladder_bars.h"

#include "advice/technique_ladder.h"
#include "base/time_format.h"
#include "panels/throughput_text.h"
#include "throughput/throughput_model.h"

namespace membudget {

std::vector<ChartBar> ladderBars(const EstimateInput &current, ByteUnit unit, const GpuSpec *gpu)
{
    std::vector<ChartBar> bars;
    Bytes previous = -1;
    double previousRate = 0;
    for (const LadderStep &step : techniqueLadder(current)) {
        ChartBar bar;
        bar.label = QString::fromStdString(step.label);
        bar.tooltip = QString::fromStdString(step.detail);
        bar.input = step.input;
        const std::string problem = validateInput(step.input);
        if (!problem.empty()) {
            bar.valid = false;
            bar.error = QString::fromStdString(problem);
            bars.push_back(std::move(bar));
            continue;
        }
        bar.estimate = estimateMemory(step.input);
        const Bytes now = bar.estimate.device_total;
        if (previous >= 0 && !bar.estimate.too_large) {
            // "−1.2 GB", "+0.3 GB", "0 B" when the step changes nothing (not "−0 B").
            bar.detail = QString::fromStdString(formatByteChange(previous, now, unit, 1));
            if (bar.detail.startsWith(QLatin1Char('-')))
                bar.detail.replace(0, 1, QStringLiteral("−")); // a typographic minus
        }
        previous = now;
        // Time per token on the GPU, against the step before (the model of core/throughput).
        if (gpu) {
            const ThroughputEstimate t = estimateThroughput(step.input, gpu->performance);
            if (t.valid) {
                const QString change = timeChangeText(t.tokens_per_second, previousRate);
                if (!change.isEmpty())
                    bar.detail += (bar.detail.isEmpty() ? QString() : QStringLiteral("\n"))
                                  + change;
                bar.tooltip += QStringLiteral("\n")
                               + QObject::tr("%1 tokens/s on %2 (modelled)")
                                     .arg(QString::fromStdString(formatRate(t.tokens_per_second)),
                                          QString::fromStdString(gpu->name));
                previousRate = t.tokens_per_second;
            }
        }
        bars.push_back(std::move(bar));
    }
    return bars;
}

} // namespace membudget
