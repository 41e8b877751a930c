// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The throughput model: how long one optimizer step of a scenario takes on a GPU type, tokens per
// second, MFU, and what a dataset run costs. Derivation and sources: docs/throughput-model.md;
// accuracy against published runs: docs/accuracy.md. Pure and allocation-light (a few
// microseconds): fine on every slider move, not inside the memory solvers' bisections.

#include "model/gpu_spec.h"
#include "model/memory_estimator.h"
#include "throughput/throughput_estimate.h"

namespace membudget {

struct DatasetConfig;

ThroughputEstimate estimateThroughput(const EstimateInput &input, const GpuPerformance &gpu);

// The throughput of `input` on `gpu`, or on a reference GPU (an A100 80GB's figures) when the preset
// lacks speed figures: for comparing techniques with each other, where only ratios matter.
ThroughputEstimate estimateRelativeThroughput(const EstimateInput &input, const GpuPerformance &gpu);

// A run over `dataset` at `pricePerHour` USD per GPU-hour (0: no price known).
RunEstimate estimateRun(const ThroughputEstimate &throughput,
                        const EstimateInput &input,
                        const DatasetConfig &dataset,
                        double pricePerHour);

} // namespace membudget
