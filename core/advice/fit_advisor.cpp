// SPDX-License-Identifier: GPL-3.0-or-later
#include "advice/fit_advisor.h"

#include <algorithm>
#include <string>

namespace membudget {

namespace {

struct Option
{
    std::string label;
    double slowdown = 1.0;
    void (*apply)(EstimateInput &, int) = nullptr;
    int arg = 0;
};

// Relative step-time costs. Checkpointing recomputes the forward (~1/3 of a step: Chen et al. 2016,
// arXiv:1604.06174; ~20-30% measured); selective recomputation ~5% (Korthikanti et al. 2022, table 4);
// FlashAttention is faster than eager attention (Dao 2023, arXiv:2307.08691); 8-bit Adam runs at the
// speed of 32-bit Adam (Dettmers et al. 2022, arXiv:2110.02861); QLoRA's dequantization costs ~30%
// over LoRA; ZeRO-Offload / CPU offload is 2-5x slower when the step is GPU-bound.
std::vector<std::vector<Option>> techniqueGroups(const EstimateInput &in)
{
    std::vector<std::vector<Option>> groups;
    const TrainingConfig &t = in.training;
    if (t.mode != Mode::Train)
        return groups;
    if (t.precision == Precision::Fp32 || isAmp(t.precision)) {
        groups.push_back(
            {{"precision: bf16 (pure)",
              0.9,
              [](EstimateInput &e, int) { e.training.precision = Precision::Bf16; },
              0},
             {"precision: mixed-bf16 (fp32 master)",
              0.95,
              [](EstimateInput &e, int) { e.training.precision = Precision::MixedBf16; },
              0}});
    }
    if (t.attention != Attention::Flash)
        groups.push_back({{"attention: flash",
                           0.9,
                           [](EstimateInput &e, int) { e.training.attention = Attention::Flash; },
                           0}});
    if (t.optimizer == Optimizer::AdamW || t.optimizer == Optimizer::PagedAdamW
        || t.optimizer == Optimizer::AdamWFused) {
        std::vector<Option> g;
        if (t.optimizer != Optimizer::AdamWFused)
            g.push_back({"optimizer: adamw-fused (no foreach temporaries)",
                         0.97,
                         [](EstimateInput &e, int) { e.training.optimizer = Optimizer::AdamWFused; },
                         0});
        g.push_back({"optimizer: adamw-8bit",
                     1.0,
                     [](EstimateInput &e, int) { e.training.optimizer = Optimizer::AdamW8bit; },
                     0});
        g.push_back({"optimizer: paged-adamw-8bit",
                     1.02,
                     [](EstimateInput &e, int) { e.training.optimizer = Optimizer::PagedAdamW8bit; },
                     0});
        groups.push_back(g);
    }
    if (t.loss != LossImplementation::Chunked)
        groups.push_back(
            {{"loss: chunked cross-entropy (no whole fp32 logits)",
              1.02,
              [](EstimateInput &e, int) { e.training.loss = LossImplementation::Chunked; },
              0}});
    if (t.checkpointing != Checkpointing::Full) {
        std::vector<Option> g;
        if (t.checkpointing == Checkpointing::None)
            g.push_back(
                {"gradient checkpointing: selective",
                 1.05,
                 [](EstimateInput &e, int) { e.training.checkpointing = Checkpointing::Selective; },
                 0});
        g.push_back({"gradient checkpointing: full",
                     1.25,
                     [](EstimateInput &e, int) { e.training.checkpointing = Checkpointing::Full; },
                     0});
        groups.push_back(g);
    }
    if (t.micro_batch_size > 1) {
        std::vector<Option> g;
        for (int div = 2; div <= t.micro_batch_size && div <= 64; div *= 2) {
            g.push_back(
                {"micro-batch "
                     + std::to_string(std::max<std::int64_t>(1, t.micro_batch_size / div)) + " x "
                     + std::to_string(t.gradient_accumulation_steps * div) + " accumulation steps",
                 1.0 + 0.04 * static_cast<double>(__builtin_ctz(static_cast<unsigned>(div))),
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
                           0.8,
                           [](EstimateInput &e, int) {
                               e.training.method = Method::Lora;
                               e.training.lora.rank = 16;
                               e.training.lora.targets = TargetAllLinear;
                           },
                           0},
                          {"method: QLoRA (NF4) r16 on all linear layers",
                           1.05,
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
                           1.3,
                           [](EstimateInput &e, int) {
                               e.training.method = Method::Qlora;
                               e.training.quantization = Quantization::Nf4;
                           },
                           0}});
    }
    if (in.parallelism.gpus > 1 && in.parallelism.sharding == Sharding::None) {
        groups.push_back(
            {{"sharding: zero2",
              1.05,
              [](EstimateInput &e, int) { e.parallelism.sharding = Sharding::Zero2; },
              0},
             {"sharding: fsdp-full",
              1.15,
              [](EstimateInput &e, int) { e.parallelism.sharding = Sharding::FsdpFull; },
              0}});
    }
    if (!t.offload.optimizer) {
        std::vector<Option> g;
        g.push_back({"CPU offload of optimizer states",
                     2.0,
                     [](EstimateInput &e, int) { e.training.offload.optimizer = true; },
                     0});
        g.push_back({"CPU offload of optimizer states and parameters (ZeRO-3)",
                     4.0,
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

std::vector<FitSuggestion> suggestFits(const EstimateInput &input, Bytes capacity, int limit)
{
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
                s.slowdown *= o.slowdown;
                s.changes.push_back(o.label);
            }
            if (validateInput(e).empty()) {
                const MemoryEstimate est = estimateMemory(e);
                if (!est.too_large && est.device_total <= capacity) {
                    s.input = e;
                    s.device_total = est.device_total;
                    s.headroom = capacity - est.device_total;
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
    // Keep minimal combinations: drop any that merely adds techniques to another fitting one.
    std::vector<Candidate> minimal;
    for (const Candidate &c : fitting) {
        bool dominated = false;
        for (const Candidate &o : fitting) {
            if (&o != &c && o.choice != c.choice && isSubset(o.choice, c.choice)
                && o.suggestion.slowdown <= c.suggestion.slowdown) {
                dominated = true;
                break;
            }
        }
        if (!dominated)
            minimal.push_back(c);
    }
    std::sort(minimal.begin(), minimal.end(), [](const Candidate &a, const Candidate &b) {
        if (a.suggestion.slowdown != b.suggestion.slowdown)
            return a.suggestion.slowdown < b.suggestion.slowdown;
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
