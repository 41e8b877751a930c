// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "advice/gpu_verdict.h"
#include "model/gpu_spec.h"
#include "model/memory_estimator.h"

#include <atomic>
#include <string>
#include <vector>

namespace membudget {

// One way to make a scenario fit: a set of technique changes, its expected cost in step time and
// the resulting peak.
struct FitSuggestion
{
    std::vector<std::string> changes; // "gradient checkpointing: full", "optimizer: adamw-8bit", ...
    // The changes (a subset of `changes`) that alter what is trained, not only how fast: another
    // method (LoRA, QLoRA). Empty when the run learns the same thing.
    std::vector<std::string> result_changes;
    EstimateInput input; // the scenario with the changes applied
    // Time per token relative to the original (1.0 = same, 2.0 = half the tokens per second),
    // modelled on the GPU (core/throughput; on reference A100 figures when the preset has none).
    double slowdown = 1.0;
    double step_seconds = 0;      // one optimizer step with the changes (its tokens may differ)
    double tokens_per_second = 0; // all GPUs
    // Fits, except for expandable segments where they turn out of memory into tight: the run
    // goes through, with little room (gpu_verdict.h).
    FitVerdict verdict = FitVerdict::Fits;
    Bytes device_total = 0;
    Bytes headroom = 0;          // capacity - device_total, at least 0
    Bytes cpu_offload_bytes = 0; // CPU RAM the job needs for offloaded states, all GPUs together

    bool changesResult() const { return !result_changes.empty(); }
};

// The allocator setting the advisor offers (overheads.allocator_conf, PYTORCH_CUDA_ALLOC_CONF).
inline constexpr const char *kExpandableSegmentsConf = "expandable_segments:True";

// Searches combinations of techniques (bf16, flash attention, checkpointing, 8-bit or paged
// optimizers, smaller micro-batch with more accumulation, LoRA, QLoRA, CPU offload, sharding when
// several GPUs) and returns the minimal ones that fit the GPU's memory (verdict "fits", not "tight":
// gpu_verdict.h), plus expandable segments alone where they turn a tight verdict into fits or an
// out-of-memory by fragmentation into a run (then tight), first (a setting: the same computation,
// no slower), then the others ranked by rankSuggestions(), at most `limit` in all. The effective batch (micro-batch x accumulation x
// data-parallel GPUs) never changes: a smaller micro-batch is offered only where it divides the
// current one. A combination that only adds a change buying no memory or no time (or only a fused
// optimizer) to another one, or swaps in a variant neither faster nor smaller, is folded into it.
// How a search runs: `cancelled`, when given, is polled between combinations (once it is set the
// search stops and returns nothing: an app drops a search whose scenario has changed); `threads`
// caps the threads it uses, the caller's included (0: every hardware thread).
struct FitSearchOptions
{
    const std::atomic<bool> *cancelled = nullptr;
    unsigned threads = 0;
};
std::vector<FitSuggestion> suggestFits(const EstimateInput &input,
                                       const GpuSpec &gpu,
                                       int limit = 8,
                                       const FitSearchOptions &options = {});

// The order suggestions are shown in: those that keep the experiment (speed and memory trades only)
// before those that change what is trained; within each, fastest first by the modelled time per
// token on the GPU (docs/throughput-model.md) in steps of 1%, then fewer changes, then less memory.
void rankSuggestions(std::vector<FitSuggestion> &suggestions);

} // namespace membudget
