// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Words and tables about a scenario and its estimate: the chart caption, the short bar labels, the
// breakdown as Markdown, CSV or a plain-text table. Every number comes from the core.

#include "advice/gpu_verdict.h"
#include "base/byte_format.h"
#include "io/preset_catalog.h"
#include "model/gpu_spec.h"
#include "model/memory_estimator.h"
#include "model/scenario.h"
#include "model/step_model.h"

#include <QString>

#include <vector>

namespace membudget {

// "Llama 3.1 8B" for a preset, else "7.2B-parameter model".
QString modelDisplayName(const Scenario &scenario,
                         const PresetCatalog &catalog,
                         const MemoryEstimate &estimate);

// "LoRA r16 · bf16 · 4 × 4,096 tok" (fits under a bar).
QString shortSummary(const Scenario &scenario);

// What `pinned` sets differently from `current`, in `pinned`'s values: "seq 2,048 · loss hf".
// "same as current" when nothing differs; at most `limit` items.
QString scenarioDifferences(const Scenario &pinned, const Scenario &current, int limit = 3);

// A sentence that states the scenario, for captions and the status bar.
QString scenarioCaption(const Scenario &scenario,
                        const PresetCatalog &catalog,
                        const MemoryEstimate &estimate);

// Components by phase (plus the peak column), totals, and one verdict line per GPU: the
// three-way verdict of the step model the estimate came from (gpu_verdict.h), as the app shows it.
QString breakdownMarkdown(const Scenario &scenario,
                          const PresetCatalog &catalog,
                          const StepModel &model,
                          const MemoryEstimate &estimate,
                          const std::vector<GpuSpec> &gpus,
                          ByteUnit unit);
// The same as CSV with exact byte counts.
QString breakdownCsv(const MemoryEstimate &estimate);
// A fixed-width table for a terminal.
QString breakdownText(const Scenario &scenario,
                      const PresetCatalog &catalog,
                      const StepModel &model,
                      const MemoryEstimate &estimate,
                      const std::vector<GpuSpec> &gpus,
                      ByteUnit unit);

// "fits, 12.3 GB free", "tight: <why>", "does not fit, 3.2 GB over" (or why, when the expected
// total is within the capacity) for a GPU, from its verdict.
QString verdictText(const GpuVerdict &verdict, const MemoryEstimate &estimate, ByteUnit unit);

} // namespace membudget
