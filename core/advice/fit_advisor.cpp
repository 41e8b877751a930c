// SPDX-License-Identifier: GPL-3.0-or-later
#include "advice/fit_advisor.h"

#include "advice/gpu_verdict.h"
#include "base/parallel_for.h"
#include "model/stack_profile.h"
#include "model/step_model.h"
#include "throughput/throughput_model.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

namespace membudget {

namespace {

struct Option
{
    std::string label;
    void (*apply)(EstimateInput &, std::int64_t) = nullptr;
    std::int64_t arg = 0;
    bool changesResult = false; // trains something else (another method, shorter sequences)
    bool minor = false;         // a drop-in swap that is never worth a row of its own
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
              [](EstimateInput &e, std::int64_t) { e.training.precision = Precision::Bf16; },
              0},
             {"precision: mixed-bf16 (fp32 master)",
              [](EstimateInput &e, std::int64_t) { e.training.precision = Precision::MixedBf16; },
              0}});
    }
    if (t.attention != Attention::Flash)
        groups.push_back(
            {{"attention: flash",
              [](EstimateInput &e, std::int64_t) { e.training.attention = Attention::Flash; },
              0}});
    // torchtune's optimizer_in_bwd, where torchtune and MemBudget take it (validateInput says why
    // not elsewhere): a group of its own, as it combines with any optimizer.
    const bool inBackward = !t.optimizer_in_backward && t.gradient_accumulation_steps == 1
                            && in.parallelism.gpus == 1 && t.precision != Precision::AmpFp16
                            && !isMixedMaster(t.precision) && !t.offload.optimizer;
    const Option stepInBackward{"optimizer step in backward (frees each gradient at once)",
                                [](EstimateInput &e, std::int64_t) {
                                    e.training.optimizer_in_backward = true;
                                },
                                0};
    if (t.optimizer == Optimizer::AdamW || t.optimizer == Optimizer::PagedAdamW
        || t.optimizer == Optimizer::AdamWFused) {
        std::vector<Option> g;
        if (t.optimizer != Optimizer::AdamWFused)
            g.push_back({"optimizer: adamw-fused (no foreach temporaries)",
                         [](EstimateInput &e, std::int64_t) {
                             e.training.optimizer = Optimizer::AdamWFused;
                         },
                         0,
                         false,
                         true});
        g.push_back(
            {"optimizer: adamw-8bit",
             [](EstimateInput &e, std::int64_t) { e.training.optimizer = Optimizer::AdamW8bit; },
             0});
        g.push_back({"optimizer: paged-adamw-8bit",
                     [](EstimateInput &e, std::int64_t) {
                         e.training.optimizer = Optimizer::PagedAdamW8bit;
                     },
                     0});
        groups.push_back(g);
    }
    if (inBackward)
        groups.push_back({stepInBackward});
    std::vector<Option> losses;
    if (t.loss != LossImplementation::Chunked)
        losses.push_back(
            {"loss: chunked cross-entropy (no whole fp32 logits)",
             [](EstimateInput &e, std::int64_t) { e.training.loss = LossImplementation::Chunked; },
             0});
    // TRL's own chunked loss (SFTConfig(loss_type="chunked_nll")), the default from TRL 1.7.
    if (t.stack.name == Stack::TrlSft && t.loss != LossImplementation::TrlChunkedNll
        && t.loss != LossImplementation::LigerFused)
        losses.push_back({"loss: trl-chunked-nll (TRL's loss_type=\"chunked_nll\")",
                          [](EstimateInput &e, std::int64_t) {
                              e.training.loss = LossImplementation::TrlChunkedNll;
                          },
                          0});
    if (!losses.empty())
        groups.push_back(losses);
    // torchtune's activation offloading, which needs full checkpointing on every layer: its PCIe
    // copies are timed like the rest (communication.cpp, activationOffloadSeconds). Offered where
    // the scenario checkpoints whole layers already: every option of a group multiplies the
    // combinations searched, and from no checkpointing full checkpointing comes first.
    const Option offloadLayerInputs{"gradient checkpointing on every layer, layer inputs offloaded "
                                    "to CPU RAM (activation offloading)",
                                    [](EstimateInput &e, std::int64_t) {
                                        e.training.checkpointing = Checkpointing::Full;
                                        e.training.checkpoint_every = 1;
                                        e.training.activation_offloading = true;
                                    },
                                    0};
    // The Trainer's bf16/fp16 flag left off on 16-bit weights: with it PEFT's fp32 adapters keep
    // their inputs' 16-bit copies (graph_precision.h, adapterAutocast).
    if (trainerFlagIsAChoice(t, in.parallelism) && !trainerMixedPrecision(t)
        && t.method != Method::Full)
        groups.push_back(
            {{t.precision == Precision::Bf16
                  ? "Trainer bf16=True (autocast: fp32 adapters keep 16-bit inputs)"
                  : "Trainer fp16=True (autocast: fp32 adapters keep 16-bit inputs)",
              [](EstimateInput &e, std::int64_t) { e.training.trainer_mixed_precision = true; },
              0}});
    // Full checkpointing turns transformers' training cache off too; the selective ones do not.
    if (trainingKvCache(t))
        groups.push_back({{"use_cache: false (no KV cache in the training forward)",
                           [](EstimateInput &e, std::int64_t) { e.training.use_cache = false; },
                           0}});
    if (t.checkpointing != Checkpointing::Full || t.checkpoint_every > 1) {
        std::vector<Option> g;
        if (t.checkpointing == Checkpointing::None) {
            g.push_back({"gradient checkpointing: selective",
                         [](EstimateInput &e, std::int64_t) {
                             e.training.checkpointing = Checkpointing::Selective;
                         },
                         0});
            g.push_back({"gradient checkpointing: op-level selective (keeps matmul outputs)",
                         [](EstimateInput &e, std::int64_t) {
                             e.training.checkpointing = Checkpointing::OpSelective;
                         },
                         0});
        }
        g.push_back({t.checkpointing == Checkpointing::Full
                         ? "gradient checkpointing on every layer (checkpoint_every: 1)"
                         : "gradient checkpointing: full",
                     [](EstimateInput &e, std::int64_t) {
                         e.training.checkpointing = Checkpointing::Full;
                         e.training.checkpoint_every = 1;
                     },
                     0});
        if (t.checkpointing == Checkpointing::Full)
            g.push_back(offloadLayerInputs);
        groups.push_back(g);
    } else if (!t.activation_offloading) {
        groups.push_back({offloadLayerInputs});
    }
    if (t.micro_batch_size > 1) {
        // Only divisors of the micro-batch: micro-batch x accumulation, the effective batch, stays
        // exactly as it is (83 -> 1 x 83, never 41 x 2). At most six, the smallest splits first.
        std::vector<Option> g;
        for (std::int64_t div = 2; div <= t.micro_batch_size && g.size() < 6; ++div) {
            if (t.micro_batch_size % div != 0)
                continue;
            g.push_back({"micro-batch " + std::to_string(t.micro_batch_size / div) + " x "
                             + std::to_string(t.gradient_accumulation_steps * div)
                             + " accumulation steps (same effective batch)",
                         [](EstimateInput &e, std::int64_t d) {
                             e.training.micro_batch_size /= d;
                             e.training.gradient_accumulation_steps *= d;
                         },
                         div});
        }
        groups.push_back(g);
    }
    if (t.method == Method::Full) {
        groups.push_back({{"method: LoRA r16 on all linear layers",
                           [](EstimateInput &e, std::int64_t) {
                               e.training.method = Method::Lora;
                               e.training.lora.rank = 16;
                               e.training.lora.targets = TargetAllLinear;
                           },
                           0,
                           true},
                          {"method: QLoRA (NF4) r16 on all linear layers",
                           [](EstimateInput &e, std::int64_t) {
                               e.training.method = Method::Qlora;
                               e.training.quantization = Quantization::Nf4;
                               e.training.lora.rank = 16;
                               e.training.lora.targets = TargetAllLinear;
                               if (e.training.precision == Precision::Fp32
                                   || isAmp(e.training.precision))
                                   e.training.precision = Precision::Bf16;
                           },
                           0,
                           true}});
    } else if (t.method == Method::Lora) {
        groups.push_back({{"method: QLoRA (NF4)",
                           [](EstimateInput &e, std::int64_t) {
                               e.training.method = Method::Qlora;
                               e.training.quantization = Quantization::Nf4;
                           },
                           0,
                           true}});
    }
    // GPipe keeps every micro-batch's activations; 1F1B at most one per stage, for the same
    // bubble (pipeline_parallel.h).
    if (in.parallelism.pipeline_parallel > 1
        && in.parallelism.pipeline_schedule == PipelineSchedule::GPipe)
        groups.push_back(
            {{"pipeline schedule: 1f1b (the same bubble, fewer micro-batches in flight)",
              [](EstimateInput &e, std::int64_t) {
                  e.parallelism.pipeline_schedule = PipelineSchedule::OneFOneB;
              },
              0}});
    // Sharding divides over one stage's replicas, not over a pipeline's stages.
    if (in.parallelism.dataParallel() > 1 && in.parallelism.sharding == Sharding::None) {
        groups.push_back(
            {{"sharding: zero2",
              [](EstimateInput &e, std::int64_t) { e.parallelism.sharding = Sharding::Zero2; },
              0},
             {"sharding: fsdp-full",
              [](EstimateInput &e, std::int64_t) { e.parallelism.sharding = Sharding::FsdpFull; },
              0}});
    }
    if (!t.offload.optimizer) {
        std::vector<Option> g;
        g.push_back({"CPU offload of optimizer states",
                     [](EstimateInput &e, std::int64_t) { e.training.offload.optimizer = true; },
                     0});
        g.push_back({"CPU offload of optimizer states and parameters (ZeRO-3)",
                     [](EstimateInput &e, std::int64_t) {
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

struct Candidate
{
    std::vector<int> choice;
    FitSuggestion suggestion;
};

// Times within 1% of each other count as the same: the model is not that precise, and a technique
// that saves a fraction of a percent is not worth suggesting.
bool faster(double a, double b)
{
    return a < b * 0.99;
}

// True when `bigger` only adds changes to `smaller` (which fits too) that are not worth a row: they
// are not faster, buy no memory, or are minor swaps such as a fused optimizer.
bool addsNothing(const Candidate &bigger,
                 const Candidate &smaller,
                 const std::vector<std::vector<Option>> &groups)
{
    if (bigger.choice == smaller.choice || !isSubset(smaller.choice, bigger.choice))
        return false;
    if (!faster(bigger.suggestion.slowdown, smaller.suggestion.slowdown)
        || smaller.suggestion.device_total <= bigger.suggestion.device_total)
        return true;
    for (std::size_t g = 0; g < groups.size(); ++g)
        if (bigger.choice[g] != smaller.choice[g]
            && !groups[g][static_cast<std::size_t>(bigger.choice[g] - 1)].minor)
            return false;
    return true;
}

// True when `variant` touches the same groups as `other` and swaps one option for another
// (paged-adamw-8bit for adamw-8bit) without being faster or smaller.
bool isWorseVariant(const Candidate &variant, const Candidate &other, std::size_t groupCount)
{
    int swapped = 0;
    for (std::size_t g = 0; g < groupCount; ++g) {
        if ((variant.choice[g] == 0) != (other.choice[g] == 0))
            return false;
        swapped += variant.choice[g] != other.choice[g] ? 1 : 0;
    }
    return swapped == 1 && !faster(variant.suggestion.slowdown, other.suggestion.slowdown)
           && other.suggestion.device_total <= variant.suggestion.device_total;
}

// Drops every candidate for which `redundant(candidate, other)` holds against some other one.
template<typename Redundant>
std::vector<Candidate> withoutRedundant(const std::vector<Candidate> &all, Redundant redundant)
{
    std::vector<Candidate> kept;
    for (const Candidate &c : all)
        if (std::none_of(all.begin(), all.end(), [&](const Candidate &o) {
                return &o != &c && redundant(c, o);
            }))
            kept.push_back(c);
    return kept;
}

// Whether `input` fits `capacity` by the three-way verdict (fits, not merely tight: gpu_verdict.h);
// fills the suggestion's memory figures when it does.
bool fitsFully(const EstimateInput &input, Bytes capacity, FitSuggestion &s)
{
    const StepModel model(input);
    MemoryEstimate est;
    if (!fitsAtTheHighEnd(model, capacity, est))
        return false;
    s.input = input;
    s.device_total = est.device_total;
    s.headroom = capacity - est.device_total;
    s.cpu_offload_bytes = est.cpu_offload_total;
    return true;
}

// Only fitting combinations are timed: a few hundred throughput estimates.
void timeSuggestion(FitSuggestion &s,
                    const EstimateInput &input,
                    const GpuSpec &gpu,
                    const ThroughputEstimate &original)
{
    const ThroughputEstimate t = estimateRelativeThroughput(input, gpu.performance);
    s.step_seconds = t.step_seconds;
    s.tokens_per_second = t.tokens_per_second;
    s.slowdown = original.valid && t.valid && original.tokens_per_second > 0
                     ? original.tokens_per_second / t.tokens_per_second
                     : 1.0;
}

// PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True where the scenario runs out of memory by
// fragmentation as configured and runs with it (gpuVerdict's expandable_segments_help; the verdict
// with them may still be tight), or where it turns tight into fits. Nothing gets slower: segments
// grow by mapping more physical pages instead of allocating new ones (PyTorch docs, "CUDA
// semantics", section "Optimizing memory usage with PYTORCH_CUDA_ALLOC_CONF").
std::optional<FitSuggestion> expandableSegmentsFit(const EstimateInput &input,
                                                   const GpuSpec &gpu,
                                                   const ThroughputEstimate &original)
{
    const StepModel model(input);
    // Already on, or set off explicitly (then left to the user).
    if (model.allocatorSettings().expandable_segments
        || input.overheads.allocator_conf.find("expandable_segments") != std::string::npos)
        return std::nullopt;
    const MemoryEstimate now = model.estimate();
    if (now.too_large || memoryBand(input, now).low > gpu.memory_bytes)
        return std::nullopt;
    const GpuVerdict before = gpuVerdict(model, now, gpu.memory_bytes);
    if (before.verdict == FitVerdict::Fits)
        return std::nullopt;
    EstimateInput e = input;
    e.overheads.allocator_conf = e.overheads.allocator_conf.empty()
                                     ? std::string(kExpandableSegmentsConf)
                                     : e.overheads.allocator_conf + "," + kExpandableSegmentsConf;
    if (!validateInput(e).empty())
        return std::nullopt;
    const StepModel expandable(e);
    const MemoryEstimate est = expandable.estimate();
    const FitVerdict after = gpuVerdict(expandable, est, gpu.memory_bytes).verdict;
    if (after == FitVerdict::DoesNotFit
        || (after == FitVerdict::Tight && !before.expandable_segments_help))
        return std::nullopt;
    FitSuggestion s;
    s.changes.push_back(std::string("allocator: PYTORCH_CUDA_ALLOC_CONF=")
                        + kExpandableSegmentsConf);
    s.input = e;
    s.verdict = after;
    s.device_total = est.device_total;
    s.headroom = std::max<Bytes>(0, gpu.memory_bytes - est.device_total);
    s.cpu_offload_bytes = est.cpu_offload_total;
    timeSuggestion(s, e, gpu, original);
    return s;
}

// Every combination of one option or none per group, except none at all; each candidate's
// suggestion holds its input and the changes that make it (nothing is estimated yet).
std::vector<Candidate> candidates(const EstimateInput &input,
                                  const std::vector<std::vector<Option>> &groups)
{
    std::vector<Candidate> out;
    std::vector<int> choice(groups.size(), 0);
    while (true) {
        std::size_t g = 0; // the next combination, like an odometer
        while (g < groups.size()) {
            if (++choice[g] <= static_cast<int>(groups[g].size()))
                break;
            choice[g] = 0;
            ++g;
        }
        if (g == groups.size())
            return out;
        Candidate c{choice, {}};
        c.suggestion.input = input;
        for (std::size_t i = 0; i < groups.size(); ++i) {
            if (choice[i] == 0)
                continue;
            const Option &o = groups[i][static_cast<std::size_t>(choice[i] - 1)];
            o.apply(c.suggestion.input, o.arg);
            c.suggestion.changes.push_back(o.label);
            if (o.changesResult)
                c.suggestion.result_changes.push_back(o.label);
        }
        out.push_back(std::move(c));
    }
}

} // namespace

void rankSuggestions(std::vector<FitSuggestion> &suggestions)
{
    // Fastest first, in steps of 1% (a strict order: ties go to fewer changes, then less memory);
    // those that change what is trained after all that only trade speed.
    auto bucket = [](double slowdown) {
        return std::floor(std::log(std::max(slowdown, 1e-9)) / std::log(1.01));
    };
    std::stable_sort(suggestions.begin(),
                     suggestions.end(),
                     [&](const FitSuggestion &a, const FitSuggestion &b) {
                         if (a.changesResult() != b.changesResult())
                             return !a.changesResult();
                         const double ba = bucket(a.slowdown), bb = bucket(b.slowdown);
                         if (ba != bb)
                             return ba < bb;
                         if (a.changes.size() != b.changes.size())
                             return a.changes.size() < b.changes.size();
                         return a.device_total < b.device_total;
                     });
}

std::vector<FitSuggestion> suggestFits(const EstimateInput &input,
                                       const GpuSpec &gpu,
                                       int limit,
                                       const FitSearchOptions &options)
{
    const std::atomic<bool> *cancelled = options.cancelled;
    const auto stop = [cancelled] { return cancelled && cancelled->load(); };
    const Bytes capacity = gpu.memory_bytes;
    const ThroughputEstimate original = estimateRelativeThroughput(input, gpu.performance);
    std::vector<FitSuggestion> out;
    const auto groups = techniqueGroups(input);
    if (groups.empty() || limit <= 0)
        return out;
    // Every combination (one option or none per group, a few thousand at most) is checked; each
    // check may replay the step (milliseconds), so they run on every hardware thread.
    std::vector<Candidate> all = candidates(input, groups);
    std::vector<char> fits(all.size(), 0);
    parallelFor(
        all.size(),
        [&](std::size_t i) {
            if (stop())
                return;
            Candidate &c = all[i];
            if (validateInput(c.suggestion.input).empty()
                && fitsFully(c.suggestion.input, capacity, c.suggestion)) {
                timeSuggestion(c.suggestion, c.suggestion.input, gpu, original);
                fits[i] = 1;
            }
        },
        options.threads);
    if (stop())
        return out;
    std::vector<Candidate> fitting;
    for (std::size_t i = 0; i < all.size(); ++i)
        if (fits[i])
            fitting.push_back(std::move(all[i]));
    // Keep minimal combinations: fold any that merely adds techniques to another fitting one, then
    // variants that are no better than their sibling (among what is left, so that nothing is folded
    // into a row that is not shown).
    const auto minimal = withoutRedundant(fitting, [&](const Candidate &c, const Candidate &o) {
        return addsNothing(c, o, groups);
    });
    const auto distinct = withoutRedundant(minimal, [&](const Candidate &c, const Candidate &o) {
        return isWorseVariant(c, o, groups.size());
    });
    for (const Candidate &c : distinct)
        out.push_back(c.suggestion);
    rankSuggestions(out);
    // An environment variable: the same computation, no slower, nothing in the script changes;
    // first, ahead of any technique (even one the model finds a little faster).
    if (auto expandable = expandableSegmentsFit(input, gpu, original))
        out.insert(out.begin(), *expandable);
    if (static_cast<int>(out.size()) > limit)
        out.resize(static_cast<std::size_t>(limit));
    return out;
}

} // namespace membudget
