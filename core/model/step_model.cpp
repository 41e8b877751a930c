// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/step_model.h"

#include "model/graph_executor.h"
#include "model/model_ends_graph.h"
#include "model/pipeline_parallel.h"
#include "model/stack_profile.h"
#include "model/step_timeline_builder.h"
#include "model/timeline_peaks.h"

#include <algorithm>

namespace membudget {

namespace {

// With pipeline parallelism, the input of the stage to model (pipeline_parallel.h), and the
// micro-batches whose activations it holds at once.
std::pair<EstimateInput, double> stageInput(const EstimateInput &input)
{
    const bool sliced = !input.arch.holds_embedding || !input.arch.holds_head; // a stage's own
    if (input.parallelism.pipeline_parallel <= 1 || sliced)
        return {input, 1.0};
    const std::int64_t stage = input.pipeline_stage >= 0 ? input.pipeline_stage
                                                         : pipelineWorstStage(input);
    EstimateInput s = pipelineStageInput(input, stage);
    const std::int64_t m = input.training.gradient_accumulation_steps;
    const double inFlight = pipelineInFlight(input.parallelism, m, stage);
    // No gradients of earlier micro-batches while it runs forward: the step's peaks are those of
    // one micro-batch whose gradients are born in its backward (gradient accumulation off).
    if (!pipelineGradientsInForward(input.parallelism, m, stage))
        s.training.gradient_accumulation_steps = 1;
    return {s, inFlight};
}

} // namespace

StepModel::StepModel(const EstimateInput &input)
    : StepModel(stageInput(input), input)
{}

StepModel::StepModel(std::pair<EstimateInput, double> stage, const EstimateInput &whole)
    : m_input(resolveStackChoices(stage.first))
    , m_inFlight(stage.second)
{
    const ModelArchitecture &a = m_input.arch;
    m_valid = a.layers >= 1 && a.hidden_size >= 1 && a.head_dim >= 1 && a.attention_heads >= 1
              && a.kv_heads >= 1 && a.vocab_size >= 1 && a.intermediate_size >= 1;
    if (!m_valid)
        return;
    const TensorParallelPlan tp = tensorParallelPlan(m_input.parallelism, m_input.training.stack);
    const TrainingConfig graphTraining = graphTrainingConfig(m_input);
    m_layout = parameterLayout(a);
    m_states = modelStates(m_input, m_layout);
    m_graphs = stepGraphs(a, graphTraining, m_layout, tp);
    m_timeline = buildStepTimeline(m_input, m_states, m_graphs);
    m_profile = activationProfile(a, graphTraining, m_graphs, tp);
    m_model = {m_layout.total, m_layout.active, m_states.trainable_all};
    if (m_input.parallelism.pipeline_parallel > 1) {
        const std::int64_t m = whole.training.gradient_accumulation_steps;
        const SizeExpr boundary = pipelineBoundaryBytes(a, graphTraining, tp);
        const std::int64_t buffers = pipelineReceiveBufferCount(m_input, m);
        const bool inputsInBuffers = buffers > 0 && m_graphs.train
                                     && keepsInput(m_graphs.body,
                                                   analyzeGraph(m_graphs.body, m_graphs.train));
        addPipelineInFlight(m_timeline,
                            pipelineInFlightExtra(m_timeline,
                                                  m_input,
                                                  m,
                                                  m_inFlight,
                                                  boundary,
                                                  inputsInBuffers),
                            m_inFlight);
        addPipelineReceiveBuffers(m_timeline,
                                  boundary,
                                  buffers,
                                  inputsInBuffers && !a.holds_embedding);
        const PipelineKeptTensors kept
            = pipelineKeptTensors(m_input, m, boundary, pipelineLogitsBytes(a, graphTraining, tp));
        addPipelineKeptTensors(m_timeline, kept.outputs + kept.input_grads, m_inFlight, m);
        addPipelineMergedOutput(m_timeline, kept.merged);
        const EstimateInput model = resolveStackChoices(whole);
        const ParameterLayout layout = parameterLayout(model.arch);
        m_model = {layout.total, layout.active, modelStates(model, layout).trainable_all};
    }
}

StepModel::StepModel(const EstimateInput &input, double assumedReserveRatio)
    : StepModel(input)
{
    m_assumedRatio = std::max(1.0, assumedReserveRatio);
}

MemoryEstimate StepModel::estimate() const
{
    return estimate(m_input.training.micro_batch_size, m_input.training.sequence_length);
}

MemoryEstimate StepModel::estimate(std::int64_t microBatch, std::int64_t sequence) const
{
    return estimateWithRatio(microBatch, sequence, reserveRatio());
}

MemoryEstimate StepModel::allocatedEstimate() const
{
    return estimateWithRatio(m_input.training.micro_batch_size, m_input.training.sequence_length, 1);
}

MemoryEstimate StepModel::replayedEstimate(std::int64_t microBatch, std::int64_t sequence) const
{
    if (m_input.overheads.allocator_reserve_fraction || !m_valid || microBatch < 1 || sequence < 1)
        return estimate(microBatch, sequence);
    const StepReplay r = replay(microBatch, sequence, allocatorSettings());
    return estimateWithRatio(microBatch, sequence, ratioOf(r, microBatch, sequence));
}

MemoryEstimate StepModel::estimateWithRatio(std::int64_t microBatch,
                                            std::int64_t sequence,
                                            double ratio) const
{
    MemoryEstimate est;
    if (!m_valid || microBatch < 1 || sequence < 1)
        return est;
    const double seq = static_cast<double>(sequence);
    const double tokens = static_cast<double>(microBatch) * seq;
    const std::array<PhasePeak, kPhaseCount> peaks = timelinePeaks(m_timeline, tokens, seq);
    const bool train = m_input.training.mode == Mode::Train;
    const OverheadConfig &o = m_input.overheads;
    const double communicator = m_input.parallelism.gpus > 1 ? static_cast<double>(o.nccl_bytes)
                                                             : 0.0;
    int peak = 0;
    // The caching allocator never gives memory back during a step (unless a cudaMalloc fails), so
    // what a phase holds is the most any phase so far allocated, times the reserved-to-allocated
    // ratio of the replay.
    Bytes reserved = 0, mostAllocated = 0;
    for (int i = 0; i < (train ? kPhaseCount : 1); ++i) {
        const auto pi = static_cast<std::size_t>(i);
        Breakdown &ph = est.phases[pi];
        ph = peaks[pi].breakdown;
        est.moments[pi] = peaks[pi].at;
        const Bytes allocated = ph.allocated();
        mostAllocated = std::max(mostAllocated, allocated);
        const Bytes held = std::max(allocated, toBytes(static_cast<double>(mostAllocated) * ratio));
        ph[Component::CudaContext] = toBytes(static_cast<double>(o.cuda_context_bytes));
        ph[Component::Communicator] = toBytes(communicator);
        // The reserve of a saturated total is saturated too (not a finite figure, nor 0).
        ph[Component::AllocatorReserve] = isSaturated(allocated) ? kBytesMax : held - allocated;
        reserved = std::max(reserved, held);
        if (allocated > est.phases[static_cast<std::size_t>(peak)].allocated())
            peak = i;
    }
    est.training = train;
    est.peak_phase = static_cast<Phase>(peak);
    est.components = est.phases[static_cast<std::size_t>(peak)];
    est.peak_allocated = est.components.allocated();
    // torch's max_memory_reserved may peak in another phase than max_memory_allocated; the peak
    // phase's reserve is what lies between the two peaks.
    est.peak_reserved = std::max(reserved, est.peak_allocated);
    est.components[Component::AllocatorReserve] = isSaturated(est.peak_allocated)
                                                      ? kBytesMax
                                                      : est.peak_reserved - est.peak_allocated;
    est.reserve_replayed = !o.allocator_reserve_fraction.has_value();
    est.device_total = addSat(addSat(est.peak_reserved, est.components[Component::CudaContext]),
                              est.components[Component::Communicator]);
    fillDerivation(est, tokens, seq);
    est.derivation.saved_activation_bytes = static_cast<double>(
        peaks[0].at_end[Component::Activations]);
    est.too_large = isSaturated(est.device_total);
    return est;
}

void StepModel::fillDerivation(MemoryEstimate &est, double tokens, double seq) const
{
    // With context parallelism a GPU holds 1/cp of each sequence (context_parallel.h).
    const double cp = static_cast<double>(
        std::max<std::int64_t>(1, m_input.parallelism.context_parallel));
    const double T = tokens / cp;
    const double s = seq / cp;
    const ModelStates &st = m_states;
    const ActivationProfile &p = m_profile;
    const TrainingConfig &tr = m_input.training;
    const bool train = tr.mode == Mode::Train;
    const bool full = tr.method == Method::Full;
    Derivation &d = est.derivation;
    est.parameters = toCount(m_model.parameters); // saturating: past int64 the cast is undefined
    est.trainable_parameters = toCount(m_model.trainable);
    d.parameters = m_model.parameters;
    d.active_parameters = m_model.active;
    d.trainable_parameters = m_model.trainable;
    const ParallelismConfig &par = m_input.parallelism;
    d.pipeline_stages = std::max<std::int64_t>(1, par.pipeline_parallel);
    d.pipeline_stage = std::max<std::int32_t>(0, m_input.pipeline_stage);
    d.stage_layers = m_input.arch.layers;
    d.pipeline_in_flight = m_inFlight;
    d.params_per_gpu = st.params;
    d.trainable_per_gpu = st.trainable;
    d.weight_bytes_full = st.weights;
    d.weight_bytes_per_param = st.params > 0 ? st.weights / (st.params + (full ? 0 : st.trainable))
                                             : 0;
    d.grad_bytes_per_param = st.grad_bytes_per_param;
    d.master_bytes_per_param = st.master_bytes_per_param;
    d.optimizer_bytes_per_param = st.trainable > 0 ? st.states / st.trainable : 0;
    d.weight_shard = st.weight_shard;
    d.grad_shard = st.grad_shard;
    d.state_shard = st.state_shard;
    d.data_parallel = static_cast<std::int64_t>(st.data_parallel);
    d.tokens = tokens;
    d.context_parallel = cp;
    d.layer_activation_per_token = p.layer_linear;
    d.layer_attention_score_per_token = p.layer_score;
    d.layer_saved_bytes = T * (p.layer_linear + p.layer_score * s);
    d.layer_checkpoint_bytes = T * p.layer_checkpoint;
    d.embedding_activation_bytes = T * p.model_level + s * p.model_per_position
                                   + T * s * p.checkpoint_mask;
    const double vocab = static_cast<double>(m_input.arch.vocab_size)
                         / static_cast<double>(
                             std::max<std::int64_t>(1, m_input.parallelism.tensor_parallel));
    d.logits_forward_bytes = T * vocab * p.logits_forward;
    d.logits_backward_bytes = T * vocab * p.logits_backward;
    d.logits_bytes_per_token = p.logits_backward;
    d.kv_cache_bytes = static_cast<double>(est.phases[0][Component::KvCache]);
    d.cpu_offload_bytes = train ? st.cpu_offload_bytes : 0;
    // Activation offloading keeps every checkpointed layer's input in pinned CPU RAM.
    d.offloaded_activation_bytes = train && tr.activation_offloading
                                       ? static_cast<double>(m_input.arch.layers)
                                             * d.layer_checkpoint_bytes
                                       : 0;
    d.cpu_offload_bytes += d.offloaded_activation_bytes;
    d.grads_live_in_forward = train && tr.gradient_accumulation_steps > 1;
    d.paged_optimizer = tr.optimizer == Optimizer::PagedAdamW
                        || tr.optimizer == Optimizer::PagedAdamW8bit;
    est.cpu_offload_bytes = toBytes(d.cpu_offload_bytes);
    est.paged_optimizer_bytes = train ? toBytes(st.paged_state_bytes) : 0;
    est.cpu_offload_total = toBytes(d.cpu_offload_bytes
                                    * static_cast<double>(m_input.parallelism.gpus));
}

} // namespace membudget

namespace membudget {

AllocatorSettings StepModel::allocatorSettings(Bytes capacity) const
{
    AllocatorSettings s;
    std::string ignored; // the scenario reader refused bad text already
    parseAllocatorConf(m_input.overheads.allocator_conf, s, ignored);
    s.capacity = capacity;
    return s;
}

StepReplay StepModel::replay(std::int64_t microBatch,
                             std::int64_t sequence,
                             const AllocatorSettings &settings) const
{
    if (!m_valid || microBatch < 1 || sequence < 1)
        return {};
    const double seq = static_cast<double>(sequence);
    return replayStep(m_timeline,
                      static_cast<double>(microBatch) * seq,
                      seq,
                      settings,
                      &resident(settings));
}

// Built outside the lock: a replay of the resident tensors takes milliseconds, and a GUI thread
// asking for one setting's state must not wait behind a worker building another's.
const ResidentAllocatorState &StepModel::resident(const AllocatorSettings &settings) const
{
    AllocatorSettings key = settings;
    key.capacity = kBytesMax;
    const std::string text = allocatorConfText(key);
    const auto find = [&]() -> const ResidentAllocatorState * {
        for (const auto &[conf, state] : m_resident)
            if (conf == text)
                return state.get();
        return nullptr;
    };
    {
        const std::lock_guard<std::mutex> lock(m_residentMutex);
        if (const ResidentAllocatorState *state = find())
            return *state;
    }
    auto built = std::make_shared<const ResidentAllocatorState>(residentState(m_timeline, key));
    const std::lock_guard<std::mutex> lock(m_residentMutex);
    if (const ResidentAllocatorState *state = find()) // another thread was quicker
        return *state;
    m_resident.emplace_back(text, std::move(built));
    return *m_resident.back().second;
}

// Played from the expanded events, kept with the reserved bytes after each: the timeline view
// draws the same replay instead of playing the step again (timelineSeries).
const StepReplay &StepModel::referenceReplay() const
{
    std::call_once(m_referenceOnce, [this] {
        const std::int64_t b = m_input.training.micro_batch_size;
        const std::int64_t s = m_input.training.sequence_length;
        if (m_valid && b >= 1 && s >= 1) {
            const double seq = static_cast<double>(s);
            m_referenceEvents = expandTimeline(m_timeline,
                                               static_cast<double>(b) * seq,
                                               seq,
                                               residentBlocks(m_timeline));
            m_referenceStart.emplace(
                stepStart(m_timeline, m_referenceEvents, resident(allocatorSettings())));
            m_reference = replayFrom(m_timeline,
                                     m_referenceEvents,
                                     *m_referenceStart,
                                     kBytesMax,
                                     &m_referenceReservedAfter);
        }
        m_ratio = ratioOf(m_reference, b, s);
    });
    return m_reference;
}

StepReplay StepModel::referenceReplayAgainst(const AllocatorSettings &settings) const
{
    referenceReplay();
    AllocatorSettings unlimited = settings;
    unlimited.capacity = kBytesMax;
    const bool sameConf = allocatorConfText(unlimited) == allocatorConfText(allocatorSettings());
    if (m_referenceStart && sameConf
        && m_referenceStart->state.model.stats().reserved.peak <= settings.capacity)
        return replayFrom(m_timeline, m_referenceEvents, *m_referenceStart, settings.capacity);
    return replay(m_input.training.micro_batch_size, m_input.training.sequence_length, settings);
}

const std::vector<ExpandedEvent> &StepModel::referenceEvents() const
{
    referenceReplay();
    return m_referenceEvents;
}

const std::vector<Bytes> &StepModel::referenceReservedAfter() const
{
    referenceReplay();
    return m_referenceReservedAfter;
}

// Reserved over allocated at the peak of a replay at shape (b, s).
double StepModel::ratioOf(const StepReplay &r, std::int64_t b, std::int64_t s) const
{
    const double seq = static_cast<double>(s);
    double allocated = 0;
    for (const PhasePeak &p : timelinePeaks(m_timeline, static_cast<double>(b) * seq, seq))
        allocated = std::max(allocated, p.allocated);
    const double reserved = static_cast<double>(r.peak_reserved);
    return allocated > 0 ? std::max(1.0, reserved / allocated) : 1.0;
}

// Reserved over allocated at the peak: the scenario's override, or the replay's.
double StepModel::reserveRatio() const
{
    if (const auto f = m_input.overheads.allocator_reserve_fraction)
        return 1 + *f;
    if (m_assumedRatio > 0)
        return m_assumedRatio;
    referenceReplay();
    return m_ratio;
}

} // namespace membudget
