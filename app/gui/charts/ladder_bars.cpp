// SPDX-License-Identifier: GPL-3.0-or-later
#include "charts/ladder_bars.h"

#include "advice/technique_ladder.h"

namespace membudget {

std::vector<ChartBar> ladderBars(const EstimateInput &current, ByteUnit unit)
{
    std::vector<ChartBar> bars;
    Bytes previous = -1;
    for (const LadderStep &step : techniqueLadder(current)) {
        ChartBar bar;
        bar.label = QString::fromStdString(step.label);
        bar.tooltip = QString::fromStdString(step.detail);
        bar.input = step.input;
        const std::string problem = validateInput(step.input);
        if (!problem.empty()) {
            bar.valid = false;
            bar.error = QString::fromStdString(problem);
        } else {
            bar.estimate = estimateMemory(step.input);
            const Bytes now = bar.estimate.device_total;
            if (previous >= 0 && !bar.estimate.too_large) {
                const Bytes delta = now <= previous ? previous - now : now - previous;
                bar.detail = (now <= previous ? QStringLiteral("−") : QStringLiteral("+"))
                             + QString::fromStdString(formatBytes(delta, unit, 1));
            }
            previous = now;
        }
        bars.push_back(std::move(bar));
    }
    return bars;
}

} // namespace membudget
