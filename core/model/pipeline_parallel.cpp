// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/pipeline_parallel.h"

#include "model/step_model.h"
#include "model/torch_release.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <utility>
#include <vector>

namespace membudget {

namespace {

std::int64_t stages(const ParallelismConfig &p)
{
    return std::max<std::int64_t>(1, p.pipeline_parallel);
}

bool interleaved(const ParallelismConfig &p)
{
    return p.pipeline_schedule == PipelineSchedule::Interleaved1F1B;
}

std::int64_t chunksPerGpu(const ParallelismConfig &p)
{
    return interleaved(p) ? std::max<std::int64_t>(1, p.pipeline_virtual_stages) : 1;
}

// Forwards (chunk forwards with interleaving) stage `index` runs before its first backward, not
// counting the one in flight: 1F1B p - index - 1; interleaved Megatron-LM's 2 (p - index - 1) +
// (v - 1) p (forward_backward_pipelining_with_interleaving); GPipe every one.
std::int64_t warmupForwards(const ParallelismConfig &p,
                            std::int64_t microBatches,
                            std::int64_t index)
{
    const std::int64_t n = stages(p);
    const std::int64_t all = microBatches * chunksPerGpu(p);
    switch (p.pipeline_schedule) {
    case PipelineSchedule::GPipe:
        return all;
    case PipelineSchedule::OneFOneB:
        return std::min(n - index - 1, all);
    case PipelineSchedule::Interleaved1F1B:
        break;
    }
    return std::min(2 * (n - index - 1) + (chunksPerGpu(p) - 1) * n, all);
}

// The most pieces a pipeline's held tensors are allocated in: each piece is an allocator event in
// every replay.
constexpr double kMaxPieces = 4096;

} // namespace

std::int64_t pipelineStageLayers(std::int64_t layers, std::int64_t stageCount, std::int64_t index)
{
    const std::int64_t n = std::max<std::int64_t>(1, stageCount);
    return layers / n + (index < layers % n ? 1 : 0);
}

std::int64_t pipelineStageLayers(const EstimateInput &input, std::int64_t index)
{
    const ParallelismConfig &p = input.parallelism;
    const std::vector<std::int64_t> &set = p.pipeline_layers;
    if (static_cast<std::int64_t>(set.size()) == stages(p) && index >= 0 && index < stages(p))
        return set[static_cast<std::size_t>(index)];
    return pipelineStageLayers(input.arch.layers, stages(p), index);
}

double pipelineInFlight(const ParallelismConfig &p, std::int64_t microBatches, std::int64_t index)
{
    const std::int64_t m = std::max<std::int64_t>(1, microBatches);
    if (stages(p) == 1)
        return 1;
    // The warm-up forwards and the one in flight, in units of the stage's whole share of layers.
    const std::int64_t v = chunksPerGpu(p);
    const std::int64_t held = std::min(warmupForwards(p, m, index) + 1, m * v);
    return static_cast<double>(held) / static_cast<double>(v);
}

bool pipelineGradientsInForward(const ParallelismConfig &p,
                                std::int64_t microBatches,
                                std::int64_t index)
{
    const std::int64_t m = std::max<std::int64_t>(1, microBatches);
    if (stages(p) == 1)
        return m > 1;
    return m * chunksPerGpu(p) - warmupForwards(p, m, index) >= 2;
}

double pipelineBubbleFraction(const ParallelismConfig &p, std::int64_t microBatches)
{
    const std::int64_t n = stages(p);
    if (n == 1)
        return 0;
    const double m = static_cast<double>(std::max<std::int64_t>(1, microBatches));
    return static_cast<double>(n - 1) / (static_cast<double>(chunksPerGpu(p)) * m);
}

EstimateInput pipelineStageInput(const EstimateInput &input, std::int64_t index)
{
    EstimateInput s = input;
    const std::int64_t n = stages(input.parallelism);
    s.pipeline_stage = static_cast<std::int32_t>(std::clamp<std::int64_t>(index, 0, n - 1));
    if (n == 1)
        return s;
    ModelArchitecture &a = s.arch;
    a.layers = pipelineStageLayers(input, s.pipeline_stage);
    a.holds_embedding = s.pipeline_stage == 0;
    a.holds_head = s.pipeline_stage == n - 1;
    if (!a.holds_embedding || !a.holds_head)
        a.tied_embeddings = false; // each end holds its own copy
    if (input.training.stack.name == Stack::Torchtitan
        && s.parallelism.sharding == Sharding::FsdpFull)
        s.parallelism.sharding = Sharding::FsdpGradOp;
    return s;
}

std::vector<std::int64_t> pipelineCandidateStages(const EstimateInput &input)
{
    const std::int64_t n = stages(input.parallelism);
    if (n == 1)
        return {0};
    if (input.parallelism.pipeline_layers.empty())
        return {0, n - 1};
    std::vector<std::int64_t> all(static_cast<std::size_t>(n));
    std::iota(all.begin(), all.end(), std::int64_t(0));
    return all;
}

std::vector<PipelineStagePeak> pipelineStagePeaks(const EstimateInput &input)
{
    const std::int64_t n = stages(input.parallelism);
    std::vector<PipelineStagePeak> out;
    for (std::int64_t index = 0; n > 1 && index < n; ++index) {
        EstimateInput stage = input;
        stage.pipeline_stage = static_cast<std::int32_t>(index);
        const MemoryEstimate est = StepModel(stage).allocatedEstimate();
        out.push_back({index,
                       est.derivation.stage_layers,
                       est.derivation.pipeline_in_flight,
                       est.peak_allocated});
    }
    return out;
}

std::int64_t worstStage(const std::vector<PipelineStagePeak> &peaks)
{
    const auto worst = std::max_element(peaks.begin(),
                                        peaks.end(),
                                        [](const PipelineStagePeak &a, const PipelineStagePeak &b) {
                                            return a.peak_allocated < b.peak_allocated;
                                        });
    return worst == peaks.end() ? 0 : worst->stage;
}

std::int64_t pipelineWorstStage(const EstimateInput &input)
{
    return worstStage(pipelineStagePeaks(input));
}

ForwardEndParts forwardEndParts(const StepTimeline &tl)
{
    std::vector<double> live(tl.tensors.size(), 0);
    std::vector<bool> byLoss(tl.tensors.size(), false);
    for (const TimelineBlock &b : tl.blocks) {
        if (b.stage == Stage::Resident)
            continue;
        if (b.phase != Phase::Forward)
            break;
        for (const TimelineEvent &e : b.events) {
            const auto t = static_cast<std::size_t>(e.tensor);
            live[t] += e.alloc ? b.repeat : -b.repeat;
            if (e.alloc && b.stage == Stage::Loss)
                byLoss[t] = true;
        }
    }
    ForwardEndParts parts;
    for (std::size_t t = 0; t < live.size(); ++t) {
        const TimelineTensor &tensor = tl.tensors[t];
        const bool perMicroBatch = tensor.component == Component::Activations
                                   || tensor.component == Component::Logits;
        if (!perMicroBatch || live[t] <= 0)
            continue;
        const SizeExpr bytes = tensor.size * (live[t] * tensor.copies);
        (byLoss[t] ? parts.head : tensor.per_layer ? parts.layers : parts.pass) += bytes;
    }
    return parts;
}

std::vector<std::int64_t> interleavedPeakPasses(const ParallelismConfig &p,
                                                std::int64_t microBatches,
                                                std::int64_t index,
                                                const std::vector<double> &weight)
{
    const std::int64_t n = stages(p), v = chunksPerGpu(p);
    const std::int64_t total = std::max<std::int64_t>(1, microBatches) * v;
    const std::int64_t warm = warmupForwards(p, microBatches, index);
    const auto chunk = [&](std::int64_t k) { return static_cast<std::size_t>((k % (n * v)) / n); };
    // The warm-up only adds passes, so its end holds the most of it: whole rounds of p passes per
    // chunk, then the part round.
    std::vector<std::int64_t> held(static_cast<std::size_t>(v), 0);
    double value = 0;
    for (std::int64_t c = 0; c < v; ++c) {
        const std::int64_t part = std::clamp<std::int64_t>(warm % (n * v) - c * n, 0, n);
        held[static_cast<std::size_t>(c)] = warm / (n * v) * n + part;
        value += static_cast<double>(held[static_cast<std::size_t>(c)])
                 * weight[static_cast<std::size_t>(c)];
    }
    std::vector<std::int64_t> most = held;
    double mostValue = value;
    // Then one forward and one backward in turn. Both orders repeat every p v passes and a period
    // runs each chunk p times either way, so what is held repeats after one period.
    for (std::int64_t k = warm; k < std::min(total, warm + n * v); ++k) {
        const std::size_t f = chunk(k), b = static_cast<std::size_t>(v - 1) - chunk(k - warm);
        ++held[f];
        value += weight[f];
        if (value > mostValue) {
            mostValue = value;
            most = held;
        }
        --held[b];
        value -= weight[b];
    }
    return most;
}

SizeExpr pipelineInFlightExtra(const StepTimeline &tl,
                               const EstimateInput &stage,
                               std::int64_t microBatches,
                               double inFlight,
                               const SizeExpr &boundary,
                               bool inputsInBuffers)
{
    const ForwardEndParts parts = forwardEndParts(tl);
    const SizeExpr one = parts.layers + parts.pass + parts.head;
    const ParallelismConfig &p = stage.parallelism;
    // A pass's received input, where it lives in a receive buffer rather than among its tensors.
    const auto buffered = [&](bool receives) {
        return inputsInBuffers && receives ? boundary : SizeExpr{};
    };
    const SizeExpr modelledInput = buffered(!stage.arch.holds_embedding);
    if (!interleaved(p))
        return (one - modelledInput) * std::max(0.0, inFlight - 1);
    const std::int64_t v = chunksPerGpu(p), layers = std::max<std::int64_t>(1, stage.arch.layers);
    // One pass of each chunk: its share of the layers, a pass's own tensors and its output (a
    // chunk's output is its own tensor, kept for its backward; inside the whole stage it is the
    // next layer's saved input, in parts.layers); the loss only in the last stage's last chunk.
    std::vector<SizeExpr> pass;
    std::vector<double> weight;
    const double tokens = static_cast<double>(stage.training.micro_batch_size)
                          * static_cast<double>(stage.training.sequence_length);
    const double seq = static_cast<double>(stage.training.sequence_length);
    for (std::int64_t c = 0; c < v; ++c) {
        const double share = static_cast<double>(pipelineStageLayers(layers, v, c))
                             / static_cast<double>(layers);
        SizeExpr bytes = parts.layers * share + parts.pass + boundary * (1 - share)
                         - buffered(stage.pipeline_stage > 0 || c > 0);
        if (stage.arch.holds_head && c == v - 1)
            bytes += parts.head;
        pass.push_back(bytes);
        weight.push_back(bytes.at(tokens, seq));
    }
    const std::vector<std::int64_t> held
        = interleavedPeakPasses(p, microBatches, stage.pipeline_stage, weight);
    SizeExpr sum;
    for (std::size_t c = 0; c < pass.size(); ++c)
        sum += pass[c] * static_cast<double>(held[c]);
    return sum - (one - modelledInput);
}

namespace {

// Allocates `t` as the first event of the step's first forward block and frees it in a new block
// `free` makes; false where the timeline has no forward block (nothing is added then).
template<typename MakeFreeBlock>
bool holdFromFirstForward(StepTimeline &tl, const TimelineTensor &t, MakeFreeBlock free)
{
    const auto forward = std::find_if(tl.blocks.begin(), tl.blocks.end(), [](const auto &b) {
        return b.stage != Stage::Resident;
    });
    if (forward == tl.blocks.end() || forward->repeat != 1)
        return false;
    const int id = tl.addTensor(t);
    forward->events.insert(forward->events.begin(), TimelineEvent{id, 0, true, false});
    free(tl).events.push_back(TimelineEvent{id, 0, false, false});
    return true;
}

bool isOptimizerStep(const TimelineBlock &b)
{
    return b.phase == Phase::OptimizerStep;
}

bool hasOptimizerStep(const StepTimeline &tl)
{
    return std::any_of(tl.blocks.begin(), tl.blocks.end(), isOptimizerStep);
}

// A new backward block after the last backward, just before the optimizer step (which exists).
TimelineBlock &insertDrainedBlock(StepTimeline &tl)
{
    TimelineBlock drained;
    drained.stage = Stage::Backward;
    drained.phase = Phase::Backward;
    const auto step = std::find_if(tl.blocks.begin(), tl.blocks.end(), isOptimizerStep);
    return *tl.blocks.insert(step, std::move(drained));
}

// A new block at the very end of the step, after the optimizer step.
TimelineBlock &appendStepEndBlock(StepTimeline &tl)
{
    return tl.addBlock(Stage::OptimizerStep, Phase::OptimizerStep);
}

} // namespace

void addPipelineInFlight(StepTimeline &tl, const SizeExpr &extra, double inFlight)
{
    if (inFlight <= 1 || extra.isZero() || !hasOptimizerStep(tl))
        return;
    TimelineTensor t;
    t.name = "activations of the other micro-batches in flight (pipeline)";
    // As many tensors as layer-sized pieces, so that the allocator model sees pieces of the size
    // one micro-batch's layer allocates rather than one block (they come and go layer by layer).
    t.copies = std::clamp(std::round((inFlight - 1) * std::max(1, tl.layers)), 1.0, kMaxPieces);
    t.size = extra * (1.0 / t.copies);
    t.component = Component::Activations;
    t.origin = TensorOrigin::Value;
    holdFromFirstForward(tl, t, insertDrainedBlock); // freed once the last backward is done
}

std::int64_t pipelineReceiveBufferCount(const EstimateInput &stage, std::int64_t microBatches)
{
    const ParallelismConfig &p = stage.parallelism;
    if (stage.training.stack.name != Stack::Torchtitan || stages(p) == 1)
        return 0;
    const std::int64_t v = chunksPerGpu(p), index = stage.pipeline_stage;
    // Stage objects index + c p: the pipeline's first (0) receives no activations, its last
    // (p v - 1) no gradients.
    const std::int64_t activations = v - (index == 0 ? 1 : 0);
    const std::int64_t gradients = v - (index == stages(p) - 1 ? 1 : 0);
    return std::max<std::int64_t>(1, microBatches) * (activations + gradients);
}

void addPipelineReceiveBuffers(StepTimeline &tl,
                               const SizeExpr &boundary,
                               std::int64_t count,
                               bool modelledInputIsBuffer)
{
    if (count < 1 || boundary.isZero())
        return;
    TimelineTensor t;
    t.size = boundary;
    t.component = Component::Temporaries;
    t.origin = TensorOrigin::Value;
    if (modelledInputIsBuffer && hasOptimizerStep(tl)) {
        --count; // between the modelled micro-batch's forward and backward: its received input
        t.name = "pipeline receive buffer of this micro-batch (its input until its backward)";
        const int id = tl.addTensor(t);
        insertDrainedBlock(tl).events.push_back(TimelineEvent{id, 0, true, false});
        appendStepEndBlock(tl).events.push_back(TimelineEvent{id, 0, false, false});
        if (count < 1)
            return;
    }
    t.name = "pipeline receive buffers (torch.distributed.pipelining)";
    // One allocation per buffer, up to kMaxPieces (then fewer, larger ones: a million
    // micro-batches must not make a million allocator events).
    t.copies = std::min(static_cast<double>(count), kMaxPieces);
    t.size = boundary * (static_cast<double>(count) / t.copies);
    holdFromFirstForward(tl, t, appendStepEndBlock);
}

PipelineKeptTensors pipelineKeptTensors(const EstimateInput &stage,
                                        std::int64_t microBatches,
                                        const SizeExpr &boundary,
                                        const SizeExpr &logits)
{
    const ParallelismConfig &p = stage.parallelism;
    LibraryVersion torch;
    const std::string &release = torchReleaseText(stage.training.stack);
    if (stage.training.stack.name != Stack::Torchtitan || stages(p) == 1 || release.empty()
        || !parseLibraryVersion(release, torch) || torch >= LibraryVersion{2, 10, 0})
        return {};
    const double m = static_cast<double>(std::max<std::int64_t>(1, microBatches));
    const std::int64_t v = chunksPerGpu(p), index = stage.pipeline_stage;
    const bool holdsLast = index == stages(p) - 1; // its chunk v - 1 is the pipeline's last
    PipelineKeptTensors kept;
    if (holdsLast) {
        kept.outputs = logits * m;
        kept.merged = logits * m;
    }
    if (torch < LibraryVersion{2, 8, 0})
        kept.outputs += boundary * (m * static_cast<double>(v - (holdsLast ? 1 : 0)));
    kept.input_grads = boundary * (m * static_cast<double>(v - (index == 0 ? 1 : 0)));
    return kept;
}

void addPipelineKeptTensors(StepTimeline &tl,
                            const SizeExpr &kept,
                            double inFlight,
                            std::int64_t microBatches)
{
    if (kept.isZero() || !hasOptimizerStep(tl))
        return;
    const double m = static_cast<double>(std::max<std::int64_t>(1, microBatches));
    const double done = std::clamp((m - inFlight) / m, 0.0, 1.0);
    TimelineTensor t;
    t.component = Component::Activations;
    t.origin = TensorOrigin::Value;
    t.copies = std::clamp(std::round(m * done), 1.0, kMaxPieces);
    t.size = kept * (done / t.copies);
    t.name = "outputs and input gradients of finished micro-batches (torch pipelining)";
    if (done > 0 && !holdFromFirstForward(tl, t, appendStepEndBlock))
        return;
    // The rest are made as the last micro-batches finish: when the last backward is done.
    t.copies = std::clamp(std::round(m * (1 - done)), 1.0, kMaxPieces);
    t.size = kept * ((1 - done) / t.copies);
    const int id = tl.addTensor(t);
    insertDrainedBlock(tl).events.push_back(TimelineEvent{id, 0, true, false});
    appendStepEndBlock(tl).events.push_back(TimelineEvent{id, 0, false, false});
}

void addPipelineMergedOutput(StepTimeline &tl, const SizeExpr &merged)
{
    if (merged.isZero() || !hasOptimizerStep(tl))
        return;
    TimelineTensor t;
    t.name = "merged output of the pipeline's step() (torch.cat of the kept logits)";
    t.size = merged;
    t.component = Component::Temporaries;
    t.origin = TensorOrigin::Value;
    const int id = tl.addTensor(t);
    insertDrainedBlock(tl).events = {TimelineEvent{id, 0, true, false},
                                     TimelineEvent{id, 0, false, false}};
}

std::string pipelineStageSummary(const ParallelismConfig &p, const Derivation &d)
{
    if (d.pipeline_stages <= 1)
        return {};
    const bool first = d.pipeline_stage == 0;
    const bool last = d.pipeline_stage == d.pipeline_stages - 1;
    std::string out = "stage " + std::to_string(d.pipeline_stage + 1) + " of "
                      + std::to_string(d.pipeline_stages) + ": ";
    out += first ? "the embedding and " : "";
    out += std::to_string(d.stage_layers)
           + (d.stage_layers == 1 ? " decoder layer" : " decoder layers");
    out += last ? ", the final norm, lm_head and the loss" : "";
    char inFlight[32];
    std::snprintf(inFlight, sizeof inFlight, "%g", std::round(d.pipeline_in_flight * 100) / 100);
    out += std::string(", ") + inFlight + " micro-batch"
           + (d.pipeline_in_flight == 1 ? "'s" : "es'") + " activations at once ("
           + pipelineScheduleName(p.pipeline_schedule);
    if (p.pipeline_schedule == PipelineSchedule::Interleaved1F1B)
        out += ", " + std::to_string(p.pipeline_virtual_stages) + " chunks per GPU";
    return out + ")";
}

namespace {

// What is wrong with a split set by hand: a count per stage, each stage at least a layer per
// chunk, and the model's layers in all.
std::string handSplitProblem(const EstimateInput &in)
{
    const ParallelismConfig &p = in.parallelism;
    const std::vector<std::int64_t> &set = p.pipeline_layers;
    if (set.empty())
        return {};
    if (static_cast<std::int64_t>(set.size()) != stages(p))
        return "pipeline_layers gives " + std::to_string(set.size()) + " stage"
               + (set.size() == 1 ? "" : "s") + " for pipeline_parallel "
               + std::to_string(stages(p)) + ": one count per stage, first to last";
    std::int64_t sum = 0;
    for (std::size_t i = 0; i < set.size(); ++i) {
        if (set[i] < chunksPerGpu(p))
            return "pipeline_layers: stage " + std::to_string(i + 1) + " has "
                   + std::to_string(set[i]) + " layers; each stage needs at least "
                   + std::to_string(chunksPerGpu(p)) + " (one per chunk)";
        sum += set[i];
    }
    if (sum != in.arch.layers)
        return "pipeline_layers adds up to " + std::to_string(sum) + " layers; the model has "
               + std::to_string(in.arch.layers);
    return {};
}

} // namespace

std::string validatePipelineParallel(const EstimateInput &in, std::string *key)
{
    const ParallelismConfig &p = in.parallelism;
    if (p.pipeline_parallel <= 1)
        return {};
    const char *where = "parallelism.pipeline_parallel";
    std::string problem;
    const std::int64_t chunks = p.pipeline_parallel * chunksPerGpu(p);
    if (in.training.mode != Mode::Train)
        problem
            = "pipeline parallelism is modelled for training: pipeline_parallel 1 for inference";
    else if (std::string hand = handSplitProblem(in); !hand.empty()) {
        where = "parallelism.pipeline_layers";
        problem = std::move(hand);
    } else if (in.arch.layers < chunks)
        problem = "each pipeline stage needs at least one decoder layer per chunk: layers ("
                  + std::to_string(in.arch.layers) + ") must be at least " + std::to_string(chunks);
    else if (interleaved(p) && p.pipeline_virtual_stages < 2) {
        where = "parallelism.pipeline_virtual_stages";
        problem = "interleaved 1F1B gives each GPU at least 2 chunks of layers";
    } else if (interleaved(p) && in.training.gradient_accumulation_steps % p.pipeline_parallel) {
        // Megatron-LM (schedules.py) and torch's ScheduleInterleaved1F1B ask for it.
        where = "training.gradient_accumulation_steps";
        problem = "interleaved 1F1B runs the micro-batches in rounds of pipeline_parallel: "
                  "gradient_accumulation_steps must be a multiple of it";
    } else if (p.sharding == Sharding::Zero2 || p.sharding == Sharding::Zero3) {
        // deepspeed/runtime/pipe/engine.py asserts zero_optimization_stage() < 2.
        where = "parallelism.sharding";
        problem = "DeepSpeed's pipeline engine runs with ZeRO-0 or ZeRO-1 only";
    }
    if (!problem.empty() && key)
        *key = where;
    return problem;
}

} // namespace membudget
