// SPDX-License-Identifier: GPL-3.0-or-later
#include "advice/fit_advisor.h"

#include "throughput/throughput_model.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace membudget {

namespace {

struct Option
{
    std::string label;
    void (*apply)(EstimateInput &, int) = nullptr;
    int arg = 0;
};

// What each technique costs or saves in time is not a fixed factor: every candidate's step is
// modelled on the GPU (core/throughput), so checkpointing costs what recomputing the forward costs
// at this size, offload what the PCIe copies take, and so on.
std::vector<std::vector<Option>> techniqueGroups(const EstimateInput &in)
{
    std::vector<std::vector<Option>> groups;
    const TrainingConfig &t = in.training;
    if (t.mode != Mode::Train)
        return groups;
    if (t.precision == Precision::Fp32 || isAmp(t.precision)) {
        groups.push_back(
            {{"precision: bf16 (pure)",
              [](EstimateInput &e, int) { e.training.precision = Precision::Bf16; },
              0},
             {"precision: mixed-bf16 (fp32 master)",
              [](EstimateInput &e, int) { e.training.precision = Precision::MixedBf16; },
              0}});
    }
    if (t.attention != Attention::Flash)
        groups.push_back({{"attention: flash",
                           [](EstimateInput &e, int) { e.training.attention = Attention::Flash; },
                           0}});
    if (t.optimizer == Optimizer::AdamW || t.optimizer == Optimizer::PagedAdamW
        || t.optimizer == Optimizer::AdamWFused) {
        std::vector<Option> g;
        if (t.optimizer != Optimizer::AdamWFused)
            g.push_back({"optimizer: adamw-fused (no foreach temporaries)",
                         [](EstimateInput &e, int) { e.training.optimizer = Optimizer::AdamWFused; },
                         0});
        g.push_back({"optimizer: adamw-8bit",
                     [](EstimateInput &e, int) { e.training.optimizer = Optimizer::AdamW8bit; },
                     0});
        g.push_back({"optimizer: paged-adamw-8bit",
                     [](EstimateInput &e, int) { e.training.optimizer = Optimizer::PagedAdamW8bit; },
                     0});
        groups.push_back(g);
    }
    if (t.loss != LossImplementation::Chunked)
        groups.push_back(
            {{"loss: chunked cross-entropy (no whole fp32 logits)",
              [](EstimateInput &e, int) { e.training.loss = LossImplementation::Chunked; },
              0}});
    if (t.checkpointing != Checkpointing::Full) {
        std::vector<Option> g;
        if (t.checkpointing == Checkpointing::None)
            g.push_back(
                {"gradient checkpointing: selective",
                 [](EstimateInput &e, int) { e.training.checkpointing = Checkpointing::Selective; },
                 0});
        g.push_back({"gradient checkpointing: full",
                     [](EstimateInput &e, int) { e.training.checkpointing = Checkpointing::Full; },
                     0});
        groups.push_back(g);
    }
    if (t.micro_batch_size > 1) {
        std::vector<Option> g;
        for (int div = 2; div <= t.micro_batch_size && div <= 64; div *= 2) {
            g.push_back({"micro-batch "
                             + std::to_string(std::max<std::int64_t>(1, t.micro_batch_size / div))
                             + " x " + std::to_string(t.gradient_accumulation_steps * div)
                             + " accumulation steps",
                         [](EstimateInput &e, int d) {
                             e.training.micro_batch_size
                                 = std::max<std::int64_t>(1, e.training.micro_batch_size / d);
                             e.training.gradient_accumulation_steps *= d;
                         },
                         div});
        }
        groups.push_back(g);
    }
    if (t.method == Method::Full) {
        groups.push_back({{"method: LoRA r16 on all linear layers",
                           [](EstimateInput &e, int) {
                               e.training.method = Method::Lora;
                               e.training.lora.rank = 16;
                               e.training.lora.targets = TargetAllLinear;
                           },
                           0},
                          {"method: QLoRA (NF4) r16 on all linear layers",
                           [](EstimateInput &e, int) {
                               e.training.method = Method::Qlora;
                               e.training.quantization = Quantization::Nf4;
                               e.training.lora.rank = 16;
                               e.training.lora.targets = TargetAllLinear;
                               if (e.training.precision == Precision::Fp32
                                   || isAmp(e.training.precision))
                                   e.training.precision = Precision::Bf16;
                           },
                           0}});
    } else if (t.method == Method::Lora) {
        groups.push_back({{"method: QLoRA (NF4)",
                           [](EstimateInput &e, int) {
                               e.training.method = Method::Qlora;
                               e.training.quantization = Quantization::Nf4;
                           },
                           0}});
    }
    if (in.parallelism.gpus > 1 && in.parallelism.sharding == Sharding::None) {
        groups.push_back(
            {{"sharding: zero2",
              [](EstimateInput &e, int) { e.parallelism.sharding = Sharding::Zero2; },
              0},
             {"sharding: fsdp-full",
              [](EstimateInput &e, int) { e.parallelism.sharding = Sharding::FsdpFull; },
              0}});
    }
    if (!t.offload.optimizer) {
        std::vector<Option> g;
        g.push_back({"CPU offload of optimizer states",
                     [](EstimateInput &e, int) { e.training.offload.optimizer = true; },
                     0});
        g.push_back({"CPU offload of optimizer states and parameters (ZeRO-3)",
                     [](EstimateInput &e, int) {
                         e.training.offload.optimizer = true;
                         e.training.offload.parameters = true;
                         if (e.parallelism.sharding != Sharding::FsdpFull)
                             e.parallelism.sharding = Sharding::Zero3;
                     },
                     0});
        groups.push_back(g);
    }
    return groups;
}

bool isSubset(const std::vector<int> &a, const std::vector<int> &b)
{
    // a and b hold, per group, the chosen option index + 1 (0 = untouched).
    for (std::size_t i = 0; i < a.size(); ++i)
        if (a[i] != 0 && a[i] != b[i])
            return false;
    return true;
}

} // namespace

std::vector<FitSuggestion> suggestFits(const EstimateInput &input, const GpuSpec &gpu, int limit)
{
    const Bytes capacity = gpu.memory_bytes;
    const ThroughputEstimate original = estimateRelativeThroughput(input, gpu.performance);
    std::vector<FitSuggestion> out;
    const auto groups = techniqueGroups(input);
    if (groups.empty() || limit <= 0)
        return out;
    struct Candidate
    {
        std::vector<int> choice;
        FitSuggestion suggestion;
    };
    std::vector<Candidate> fitting;
    std::vector<int> choice(groups.size(), 0);
    // Enumerate every combination (one option or none per group): a few thousand estimates at most.
    while (true) {
        bool any = false;
        for (int c : choice)
            any = any || c != 0;
        if (any) {
            EstimateInput e = input;
            FitSuggestion s;
            for (std::size_t g = 0; g < groups.size(); ++g) {
                if (choice[g] == 0)
                    continue;
                const Option &o = groups[g][static_cast<std::size_t>(choice[g] - 1)];
                o.apply(e, o.arg);
                s.changes.push_back(o.label);
            }
            if (validateInput(e).empty()) {
                const MemoryEstimate est = estimateMemory(e);
                if (!est.too_large && est.device_total <= capacity) {
                    s.input = e;
                    s.device_total = est.device_total;
                    s.headroom = capacity - est.device_total;
                    // Only fitting combinations are timed: a few hundred throughput estimates.
                    const ThroughputEstimate t = estimateRelativeThroughput(e, gpu.performance);
                    s.step_seconds = t.step_seconds;
                    s.tokens_per_second = t.tokens_per_second;
                    s.slowdown = original.valid && t.valid && original.tokens_per_second > 0
                                     ? original.tokens_per_second / t.tokens_per_second
                                     : 1.0;
                    fitting.push_back({choice, s});
                }
            }
        }
        std::size_t g = 0;
        while (g < groups.size()) {
            if (++choice[g] <= static_cast<int>(groups[g].size()))
                break;
            choice[g] = 0;
            ++g;
        }
        if (g == groups.size())
            break;
    }
    // Times within 1% of each other count as the same: the model is not that precise, and a
    // technique that saves a fraction of a percent is not worth suggesting.
    auto faster = [](double a, double b) { return a < b * 0.99; };
    // Keep minimal combinations: drop any that merely adds techniques to another fitting one that
    // is not slower.
    std::vector<Candidate> minimal;
    for (const Candidate &c : fitting) {
        bool dominated = false;
        for (const Candidate &o : fitting) {
            if (&o != &c && o.choice != c.choice && isSubset(o.choice, c.choice)
                && !faster(c.suggestion.slowdown, o.suggestion.slowdown)) {
                dominated = true;
                break;
            }
        }
        if (!dominated)
            minimal.push_back(c);
    }
    // Fastest first, in steps of 1% (a strict order: ties go to fewer changes, then less memory).
    auto bucket = [](double slowdown) {
        return std::floor(std::log(std::max(slowdown, 1e-9)) / std::log(1.01));
    };
    std::sort(minimal.begin(), minimal.end(), [&](const Candidate &a, const Candidate &b) {
        const double ba = bucket(a.suggestion.slowdown), bb = bucket(b.suggestion.slowdown);
        if (ba != bb)
            return ba < bb;
        if (a.suggestion.changes.size() != b.suggestion.changes.size())
            return a.suggestion.changes.size() < b.suggestion.changes.size();
        return a.suggestion.device_total < b.suggestion.device_total;
    });
    for (const Candidate &c : minimal) {
        if (static_cast<int>(out.size()) >= limit)
            break;
        out.push_back(c.suggestion);
    }
    return out;
}

} // namespace membudget
