// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// How the app words the throughput model's results (core/throughput): one place for the verdict
// table, the ladder, the sweep and "Make it fit".

#include "model/gpu_spec.h"
#include "model/memory_estimator.h"
#include "model/scenario.h"
#include "throughput/throughput_estimate.h"

#include <QString>

namespace membudget {

// Speed and run of one GPU type for the open scenario.
struct GpuSpeed
{
    ThroughputEstimate throughput;
    RunEstimate run;         // valid only with a dataset
    double price = 0;        // USD per GPU-hour in use (0: none)
    bool overridden = false; // the price is the scenario's, not the preset's
};

GpuSpeed gpuSpeed(const Scenario &scenario, const EstimateInput &input, const GpuSpec &gpu);

// "2.39 s · 3,426 tok/s" (training) or "0.41 s · 89 tok/s decode" (inference); "—" with a reason.
QString speedCell(const GpuSpeed &speed, const EstimateInput &input);
// "37 min · $1.53", "1 h 07 min · no price", or empty without a dataset.
QString runCell(const GpuSpeed &speed);
// Rich text: step, tokens/s (job and per GPU), MFU, where the time goes, and the run's GPU-hours,
// price and its source.
QString speedToolTip(const GpuSpeed &speed, const GpuSpec &gpu, const EstimateInput &input);

// "+31% time" / "−9% time" / "same time": time per token against a reference.
QString timeChangeText(double tokensPerSecond, double referenceTokensPerSecond);

} // namespace membudget
