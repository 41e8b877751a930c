// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/step_timeline_builder.h"

#include "model/attention_shape.h"
#include "model/context_parallel.h"
#include "model/graph_precision.h"
#include "model/graph_timeline.h"
#include "model/model_ends_graph.h"
#include "model/stack_profile.h"
#include "model/torch_release.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <numeric>
#include <string_view>

namespace membudget {

namespace {

// FSDP allocates all-gathered parameters on its unshard stream and reduce-scattered gradients on
// its post-backward stream (torch/distributed/fsdp/_runtime_utils.py: _unshard, _post_backward
// hooks); DeepSpeed ZeRO-3 likewise gathers on a stream of its own. The caching allocator reuses a
// freed block only on the stream it was allocated on.
constexpr std::uint8_t kGatherStream = 1;
constexpr std::uint8_t kReduceStream = 2;

SizeExpr bytes(double b)
{
    return SizeExpr::constant(std::max(0.0, b));
}

// Bytes per element that one tensor's optimizer step allocates beyond its states, for states of
// `stateBytes` per element: torch's AdamW makes the square root (and before 2.1 its quotient too;
// torch/optim/adamw.py), Lion two update tensors, Adafactor three fp32 factors; the fused, 8-bit
// and paged kernels and SGD update in place. (AdamW over many tensors at once: adamWWorkspace.)
double oneTensorStepBytes(Optimizer opt, AdamWWorkspace adamW, double stateBytes)
{
    switch (opt) {
    case Optimizer::AdamW:
        return (adamW == AdamWWorkspace::OneList ? 1 : 2) * stateBytes;
    case Optimizer::Lion:
        return 2 * stateBytes;
    case Optimizer::Adafactor:
        return 3 * 4;
    default:
        return 0;
    }
}

// Assembles a step from the op graphs of the embedding, the decoder layers and the head, plus what
// lives outside the graphs: resident states, shared tables, sharding buffers, the optimizer.
class StepBuilder
{
public:
    StepBuilder(const EstimateInput &in, const ModelStates &states, const StepGraphs &graphs)
        : m_in(in)
        , m_s(states)
        , m_g(graphs)
        , m_p(graphPrecision(graphTrainingConfig(in)))
        , m_layers(static_cast<int>(in.arch.layers))
    {
        // FSDP SHARD_GRAD_OP keeps each unit gathered from its forward to its backward; FULL_SHARD
        // and ZeRO-3 free it after use and prefetch the next one.
        m_keepGathered = m_p.train && states.sharding == Sharding::FsdpGradOp && states.gathers;
        m_prefetch = states.gathers && !m_keepGathered;
        m_tl.layers = m_layers;
        m_tl.training = m_p.train;
        m_tl.lazy_optimizer_states = lazyOptimizerStates();
    }

    StepTimeline build()
    {
        makeGraphs();
        resident();
        forward();
        if (m_p.train) {
            backward();
            optimizerStep();
        } else if (m_in.training.inference.generated_tokens > 0) {
            decode();
        }
        return std::move(m_tl);
    }

private:
    // Whole layers run inside torch.utils.checkpoint (full, or with an op-level policy).
    bool checkpointFull() const
    {
        return m_p.train && checkpointedLayers(m_in.training, m_in.arch.layers) > 0;
    }
    // FSDP's MixedPrecision(param_dtype) casts a unit's shard before gathering it, so the gathered
    // unit is 16-bit where the stored fp32 weights are cast (FSDP2 _fsdp_param.py
    // all_gather_inputs; FSDP1 _flat_param.py, the low-precision shard): graphTrainingConfig.
    double gatheredScale() const
    {
        const bool cast = graphTrainingConfig(m_in).precision != m_in.training.precision
                          && m_in.training.quantization == Quantization::None;
        return cast ? 0.5 : 1.0;
    }
    bool eagerMask() const
    {
        const ModelFamily f = m_in.arch.family;
        return m_in.training.attention == Attention::Eager
               && (f == ModelFamily::Llama || f == ModelFamily::Gemma);
    }
    // The explicit mask [b, 1, s, keys]: eager Llama attention adds it in the compute dtype; SDPA
    // with a static cache gets a boolean one (transformers masking_utils sdpa_mask).
    bool explicitMask() const { return eagerMask() || attentionShape(m_in.training).mask; }
    double maskBytes() const
    {
        return eagerMask() || !attentionShape(m_in.training).mask_bool ? m_p.stream : 1;
    }
    // Until backward: the checkpoints' recomputation reads it, or SDPA kept the additive mask
    // itself (transformers before 4.53 made it in the compute dtype).
    bool maskKeptForBackward() const
    {
        const AttentionShape shape = attentionShape(m_in.training);
        const bool sdpaKeeps = m_p.train && m_in.training.attention == Attention::Sdpa && shape.mask
                               && !shape.mask_bool && m_p.stream == m_p.compute;
        return checkpointFull() || sdpaKeeps;
    }
    // A tensor of `size` bytes in all, made of `copies` equal tensors.
    int tensor(const char *name,
               SizeExpr size,
               Component c,
               bool perLayer,
               double copies = 1,
               std::uint8_t stream = 0)
    {
        TimelineTensor t;
        t.name = name;
        t.size = size * (1.0 / std::max(1.0, copies));
        t.component = c;
        t.origin = TensorOrigin::State;
        t.per_layer = perLayer;
        t.copies = std::max(1.0, copies);
        t.stream = stream;
        return m_tl.addTensor(t);
    }
    static void alloc(TimelineBlock &b, int t, int layer = 0, bool absolute = false)
    {
        b.events.push_back({t, layer, true, absolute});
    }
    static void release(TimelineBlock &b, int t, int layer = 0, bool absolute = false)
    {
        b.events.push_back({t, layer, false, absolute});
    }

    void makeGraphs();
    void resident();
    void forward();
    void forwardLayers();
    void forwardEnd();
    void decode();
    void decodeLogits();
    void decodeAttentionCopies(TimelineBlock &b, SizeExpr cacheEntry);
    void catCacheEntries(TimelineBlock &b, SizeExpr size, int oldKeys, int oldValues);
    void backward();
    double reduceBucketBytes() const;
    void backwardLayers();
    void layerGradients(TimelineBlock &b, const GraphTimeline &g, std::size_t from, int layer = 0);
    void accumulateUnsharded(TimelineBlock &b, const GraphTimeline &g, std::size_t from, int layer);
    bool replaceParamGrads(const TimelineBlock &b,
                           std::size_t from,
                           int with,
                           int layer,
                           std::vector<TimelineEvent> &kept) const;
    // Bytes, in the model's gradient dtype (ModelStates), of the weights' .grad tensors `b` makes
    // from event `from` on (the graphs make them in GraphPrecision::grad); only those of the
    // parameter named `only` when given.
    double paramGradBytes(const TimelineBlock &b,
                          std::size_t from,
                          std::string_view only = {}) const;
    void reduceScatter(std::vector<TimelineEvent> &kept,
                       int unsharded,
                       int input,
                       int layer,
                       double unit,
                       bool perLayer);
    void holdRootGradients(TimelineBlock &b, std::size_t from, bool head);
    double wholeVocabularyExtra(const TimelineBlock &b, std::size_t from) const;
    void reduceRootGradients(TimelineBlock &b);
    void reduceDeferredGradients();
    // torch.optim and bitsandbytes make their states in the first step() (optim/adamw.py
    // `_init_group`); DeepSpeed's ZeRO optimizers at engine initialisation, and an optimizer
    // stepped in backward per parameter while the backward runs (left as resident).
    bool lazyOptimizerStates() const
    {
        const bool deepSpeed = m_in.training.stack.name == Stack::DeepSpeed
                               || isDeepSpeed(m_s.sharding);
        return m_p.train && m_s.resident_states > 0 && !deepSpeed
               && !m_in.training.optimizer_in_backward;
    }
    bool stepsInBackward() const { return m_p.train && m_in.training.optimizer_in_backward; }
    bool accumulates() const { return m_p.train && m_in.training.gradient_accumulation_steps > 1; }
    // torch's optimizers make a parameter's states when they first step it, parameter by
    // parameter in the model's order (the layout's: Llama's registration order; GPT-2's and
    // Falcon's norms, fused QKV biases and MoE routers come in group order), each state a tensor
    // of the parameter's shape (torch/optim/adamw.py, _init_group: exp_avg, then exp_avg_sq;
    // sgd.py: momentum_buffer; Lion likewise). Which cached blocks those land in decides the next
    // steps' fragmentation, so unsharded states are laid out tensor by tensor; other optimizers'
    // states (8-bit, paged, factored) and flat shards stay one equal share per tensor.
    double statesPerParameter() const
    {
        switch (m_in.training.optimizer) {
        case Optimizer::AdamW:
        case Optimizer::AdamWFused:
            return 2;
        case Optimizer::SgdMomentum:
        case Optimizer::Lion:
            return 1;
        default:
            return 0;
        }
    }
    bool statesPerTensor() const
    {
        return lazyOptimizerStates() && m_s.state_shard == 1 && !m_s.gathers
               && m_s.weight_shard == 1 && m_s.paged_states == 0 && statesPerParameter() > 0
               && !m_s.trainable_order_layer.empty();
    }
    // The states of `elements` (one tensor each, in order) in `b`: their share, by elements, of
    // the states of one layer (perLayer) or of the tensors outside the layers.
    void allocStates(TimelineBlock &b, const std::vector<double> &elements, bool perLayer)
    {
        const auto elementsOf = [](const std::vector<double> &v) {
            return std::accumulate(v.begin(), v.end(), 0.0);
        };
        const double total = perLayer ? m_s.layer_states / static_cast<double>(m_layers)
                                      : m_s.states - m_s.layer_states;
        const double sum = perLayer ? elementsOf(m_s.trainable_order_layer)
                                    : elementsOf(m_s.trainable_order_before)
                                          + elementsOf(m_s.trainable_order_after);
        for (const double e : elements)
            alloc(b,
                  tensor("optimizer states",
                         bytes(total * e / std::max(1.0, sum)),
                         Component::OptimizerStates,
                         perLayer,
                         statesPerParameter()));
    }
    // Other GPUs hold this GPU's layers (not the other stages of a pipeline).
    bool layersOnSeveralGpus() const
    {
        const ParallelismConfig &par = m_in.parallelism;
        return par.gpus / std::max<std::int64_t>(1, par.pipeline_parallel) > 1;
    }
    bool zero2Partitions() const
    {
        return m_p.train && m_s.sharding == Sharding::Zero2 && layersOnSeveralGpus();
    }
    // DeepSpeed ZeRO-2 without optimizer offload (see resident()).
    bool partitionsGradientsEachBackward() const
    {
        return zero2Partitions() && !m_in.training.offload.optimizer;
    }
    // What the head's modules use of the root's `root` (bytes or elements): the final norm and
    // lm_head (`head`), and the embedding too where lm_head shares its weight.
    double headPart(double root, double head) const
    {
        return m_in.arch.tied_embeddings ? root : head;
    }
    // torch.distributed.pipelining runs every backward of a stage's FSDP2 module with gradient
    // sync and resharding off and reduces once after the stage's last backward (stage.py,
    // backward_maybe_with_nosync and run_post_backward, pytorch PR #134052; at the end of step()
    // since PR #165106): the torchtitan stack with a pipeline and sharded gradients.
    // FSDP2's fully_shard: torchtitan, and torchtune's distributed recipes.
    bool usesFsdp2() const
    {
        const Stack s = m_in.training.stack.name;
        return s == Stack::Torchtitan || s == Stack::Torchtune;
    }
    bool shardsWithFsdp2() const
    {
        return usesFsdp2() && shardsGradients(m_s.sharding) && !isDeepSpeed(m_s.sharding);
    }
    // FSDP2 gathers a unit into a flat output on its all-gather copy-in stream and copies it out
    // into the parameters' own storage on the current stream (_fsdp_collectives.py
    // foreach_all_gather, foreach_all_gather_copy_out; _fsdp_param.py alloc_all_gather_outputs).
    // Forward keeps the flat output until the next unit's wait (comm_ctx.all_gather_state), the
    // last one until the root's post-forward; backward frees it once copied and prefetches the
    // next unit after the copy (_fsdp_param_group.py wait_for_unshard, pre_backward). The root's
    // own parameters stay unsharded from forward to the end of backward (_fsdp_state.py
    // _lazy_init: post_forward_mesh_info = None). Without a pipeline, whose units stay gathered.
    bool gathersWithFsdp2() const
    {
        return m_prefetch && usesFsdp2() && !isDeepSpeed(m_s.sharding)
               && m_in.parallelism.pipeline_parallel <= 1;
    }
    // Before torch 2.5 FSDP2 allocated the reduce-scatter input on its reduce-scatter stream, a
    // pool whose cached blocks the compute stream cannot reuse; pytorch PR #129721 (2024-06-27,
    // after 2.4's branch cut) moved the copy-in to the current stream "to avoid fragmenting that
    // memory across stream memory pools". The output stays on the reduce-scatter stream.
    // FSDP2 before torch 2.5 made its reduce-scatter input on the reduce-scatter stream; FSDP1
    // casts the .grad to reduce_dtype inside its post-backward stream's context
    // (_runtime_utils.py _post_backward_hook: `with state._device_handle.stream(
    // state._post_backward_stream)`, then `flat_param.grad.to(handle._reduce_dtype)`).
    std::uint8_t reduceScatterInputStream() const
    {
        if (!shardsWithFsdp2())
            return usesFsdp1() ? kReduceStream : 0;
        const bool before25 = torchRelease(m_in.training.stack) < LibraryVersion{2, 5, 0};
        return before25 ? kReduceStream : 0;
    }
    bool shardsWithFsdp() const
    {
        return m_s.sharding == Sharding::FsdpFull || m_s.sharding == Sharding::FsdpGradOp;
    }
    bool usesFsdp1() const { return shardsWithFsdp() && !usesFsdp2(); }
    // FSDP1 registers a frozen unit's post-backward reshard as a multi-grad hook on the inputs of
    // its first forward with grad enabled (_runtime_utils.py,
    // _register_post_backward_reshard_only_hook) and removes it at the end of backward
    // (_finalize_params). The hook keeps the inputs' grad_fn or AccumulateGrad nodes
    // (torch/autograd/graph.py, register_multi_grad_hook). A decoder layer is such a unit under
    // LoRA (PEFT's fsdp_auto_wrap_policy gives the adapters units of their own), and under
    // reentrant checkpointing its first forward with grad is the recomputation, whose input is a
    // detached leaf: that leaf and the .grad the checkpoint reads from it stay until backward
    // ends, two hidden states per layer.
    bool holdsRecomputedInputs() const
    {
        const TrainingConfig &t = m_in.training;
        const bool frozenUnits = (t.method == Method::Lora || t.method == Method::Qlora)
                                 && !t.lora.use_dora;
        return m_p.train && usesFsdp1() && m_in.parallelism.gpus > 1 && frozenUnits
               && t.checkpointing == Checkpointing::Full && m_g.checkpoint_every == 1
               && stackCheckpointsReentrant(t.stack);
    }
    // From torch 2.5 FSDP2 keeps a unit's reduce-scatter input (made on the compute stream) in
    // comm_ctx.reduce_scatter_state until the next unit's post-backward has waited for it, which
    // frees it before making its own; the last one lives until the final callback
    // (_fsdp_param_group.py post_backward, _fsdp_state.py _root_post_backward_final_callback;
    // pytorch PR #129721).
    bool holdsReduceScatterState() const
    {
        const bool from25 = torchRelease(m_in.training.stack) >= LibraryVersion{2, 5, 0};
        return shardsWithFsdp2() && from25 && !defersGradientSync();
    }
    // DeepSpeed ZeRO-3 frees a module's gathered parameters after it runs unless the recorded
    // trace uses them again within stage3_max_reuse_distance elements (1e9;
    // partitioned_param_coordinator.py, release_sub_module and __params_to_release, read at
    // v0.10.0 and 0.19). The embedding's next use, its backward, lies past every layer: it is
    // freed after its forward and gathered again by its pre-backward hook, then kept to the end of
    // backward (its input ids need no gradient, so no post-backward hook frees it). The final norm
    // and lm_head are used again at once by their backward and stay gathered through the loss.
    bool releasesRootAfterUse() const
    {
        return m_p.train && m_s.gathers && m_s.sharding == Sharding::Zero3;
    }
    // FSDP's root unit (embeddings, final norm, lm_head) reduces once, after the embedding's
    // backward: FSDP1's post-backward hook waits for the flat parameter's gradient, which autograd
    // assembles from every view's gradient (_runtime_utils.py _post_backward_hook); FSDP2's root
    // gets no post-backward hook from its integer inputs and reduces in the final callback
    // (_fsdp_state.py _root_post_backward_final_callback). Until then the lm_head's gradient is held
    // from the head's backward and the embedding's from its own. DeepSpeed reduces each gradient
    // as it is made (bucketed).
    bool holdsRootGradients() const
    {
        return m_p.train && shardsGradients(m_s.sharding) && !isDeepSpeed(m_s.sharding)
               && m_in.parallelism.gpus > 1 && !defersGradientSync();
    }
    bool defersGradientSync() const
    {
        return m_p.train && shardsWithFsdp() && m_s.grad_shard > 1 && !stepsInBackward()
               && m_in.parallelism.pipeline_parallel > 1
               && m_in.training.stack.name == Stack::Torchtitan;
    }
    // torchtitan does not reshard the last transformer block after forward, since backward
    // gathers it first (parallelize_llama's apply_fsdp: reshard_after_forward = layer_id <
    // n_layers - 1, without a pipeline): its gathered parameters stay through the loss.
    // DeepSpeed ZeRO-3 keeps it when the trace uses it again within stage3_max_reuse_distance
    // (releasesRootAfterUse): its backward (or recomputation) follows the head's forward and
    // backward, so when p + 2 x the head's elements stay under 1e9, DeepSpeed's default. The
    // layers before it come back only after three passes of the later layers: about
    // (1e9 - head - p) / 3p of them are kept too, which is not modelled (memory-model.md).
    bool keepsLastLayerGathered() const
    {
        const bool torchtitan = m_in.training.stack.name == Stack::Torchtitan
                                && m_s.sharding == Sharding::FsdpFull;
        const double head = headPart(m_s.root_params, m_s.head_params);
        const bool deepSpeed = releasesRootAfterUse()
                               && m_s.layer_params / m_layers + 2 * head < kDeepSpeedReuseDistance;
        return m_prefetch && m_p.train && (torchtitan || deepSpeed)
               && m_in.parallelism.pipeline_parallel <= 1;
    }
    // Bytes of `gradBytes` of gradients (in the model's gradient dtype) as FSDP2 holds them
    // unsharded: .grad in param_dtype, and the accumulator of a step whose sync is off in
    // reduce_dtype where it differs (_fsdp_param.py, to_accumulated_grad_if_needed, PR #125191).
    double inParamDtype(double gradBytes) const;
    double inAccumulatorDtype(double gradBytes) const;
    // Every layer's input offloaded to CPU RAM (validateInput: full checkpointing on every layer).
    bool offloadsActivations() const
    {
        return m_p.train && m_in.training.activation_offloading
               && checkpointedLayers(m_in.training, m_in.arch.layers) == m_in.arch.layers;
    }
    void stepInBackward(TimelineBlock &b,
                        std::size_t from,
                        const std::vector<std::int32_t> &ops,
                        bool deferTiedHead = false);
    // The graph ops of the events a graph's backward appends (for stepInBackward), or none.
    std::vector<std::int32_t> *opsOf(std::vector<std::int32_t> &ops)
    {
        ops.clear();
        return stepsInBackward() ? &ops : nullptr;
    }
    void stepParameter(std::vector<TimelineEvent> &events, const TimelineEvent &grad);
    // Consecutive decoder layers that repeat alike: `layers` run one after the other (layer
    // first + r * step + j * sign(step) for the j-th), the whole run `repeat` times.
    struct LayerRun
    {
        int first = 0, step = 1, repeat = 1;
        std::vector<GraphTimeline *> layers;
    };
    std::vector<LayerRun> layerRuns(bool backward) const;
    // The forward runs, split where a layer's input starts to leave the GPU during forward.
    std::vector<LayerRun> forwardRuns() const;
    // The binding of a run's j-th layer, `at` layers from the block's: the input of a checkpointed
    // layer among kept ones is a tensor of its own (kept as its checkpoint).
    StreamBinding runBinding(const LayerRun &run, std::size_t j, int at) const;
    void optimizerStep();
    void adamWWorkspace(TimelineBlock &b);
    void deepSpeedMasterGradients(TimelineBlock &b);
    void zeroGrad(TimelineBlock &b);

    const EstimateInput &m_in;
    const ModelStates &m_s;
    const StepGraphs &m_g;
    GraphPrecision m_p;
    int m_layers;
    StepTimeline m_tl;

    std::unique_ptr<GraphTimeline> m_embed, m_first, m_body, m_checkpointed, m_head;
    bool m_firstDiffers = false;
    bool m_keepGathered = false, m_prefetch = false;

    int m_stream = -1, m_gradStream = -1, m_checkpointInput = -1, m_cos = -1, m_sin = -1,
        m_mask = -1;
    int m_heldInput = -1, m_heldInputGrad = -1; // holdsRecomputedInputs
    int m_gathered = -1, m_rootGathered = -1, m_unitGrad = -1, m_gradShard = -1;
    int m_allGatherOutput = -1, m_rootAllGatherOutput = -1; // FSDP2's flat outputs
    int m_embedGathered = -1, m_headGathered = -1; // DeepSpeed ZeRO-3's, releasesRootAfterUse()
    int m_bucket = -1;
    int m_unitReduceInput = -1;
    bool m_reduceStateHeld = false;   // a unit's reduce-scatter input kept (torch >= 2.5)
    std::vector<int> m_heldRootGrads; // the root unit's gradients until it reduces ...
    double m_heldRootBytes = 0;       // ... and their bytes in the model's gradient dtype
    int m_accumulated = -1;      // gradients kept from earlier micro-batches: outside the layers
    int m_accumulatedLayer = -1; // ... of each decoder layer
    int m_partition = -1;        // ZeRO-2's partitioned gradient buffer
    int m_paramDtypeGrad = -1;   // a layer's .grad under deferred sync, folded into ...
    std::vector<int> m_rootAccumulators; // ... the accumulators the step's backwards make
    std::vector<int> m_rootShards;
    std::vector<TimelineEvent> m_deferredSteps; // the tied lm_head: stepped after the embedding
    std::map<int, int> m_stepWorkspace;         // a gradient's tensor -> its step's temporaries
    double m_stepBytesPerGradByte = -1;         // of one parameter's step (-1: not yet known)
    int m_liveGradLayer = 0; // the layer whose stream-gradient buffer is live in backward
};

void StepBuilder::makeGraphs()
{
    m_firstDiffers = m_g.first_differs;
    const double h = static_cast<double>(m_in.arch.hidden_size)
                     * tensorParallelPlan(m_in.parallelism, m_in.training.stack).sequenceShare();
    TimelineTensor stream;
    stream.name = "hidden states";
    stream.size = SizeExpr::perToken(h * m_p.stream);
    stream.per_layer = true;
    m_stream = m_tl.addTensor(stream);
    stream.name = "hidden states";
    stream.origin = TensorOrigin::Grad;
    m_gradStream = m_tl.addTensor(stream);
    if (m_g.checkpoint_every > 1) {
        stream.name = "checkpointed layer input";
        stream.origin = TensorOrigin::Value;
        stream.component = Component::Activations;
        m_checkpointInput = m_tl.addTensor(stream);
    }
    if (holdsRecomputedInputs()) {
        stream.component = Component::Activations;
        stream.origin = TensorOrigin::Value;
        stream.name = "recomputed layer input, kept by FSDP's reshard hook";
        m_heldInput = m_tl.addTensor(stream);
        stream.name = "its .grad, kept by FSDP's reshard hook";
        m_heldInputGrad = m_tl.addTensor(stream);
    }

    m_embed = std::make_unique<GraphTimeline>(m_tl, m_g.embed, m_p.train, false);
    m_body = std::make_unique<GraphTimeline>(m_tl, m_g.body, m_p.train, true);
    if (m_firstDiffers)
        m_first = std::make_unique<GraphTimeline>(m_tl, m_g.first, m_p.train, true);
    if (m_g.checkpoint_every > 1)
        m_checkpointed = std::make_unique<GraphTimeline>(m_tl, m_g.checkpointed, m_p.train, true);
    m_head = std::make_unique<GraphTimeline>(m_tl, m_g.head, m_p.train, false);
    m_tl.tensors[static_cast<std::size_t>(m_stream)].component = m_body->keepsInput()
                                                                     ? Component::Activations
                                                                     : Component::Temporaries;
}

// Before the step: weights (the local shards when sharded), the master copy and optimizer states
// (unless offloaded), gradients kept from earlier micro-batches, DDP's gradient buckets.
void StepBuilder::resident()
{
    const double L = static_cast<double>(m_layers);
    const bool flat = m_s.gathers || m_s.weight_shard > 1;
    const bool perTensor = statesPerTensor();
    if (perTensor && !m_s.trainable_order_before.empty()) // the embeddings' come first
        allocStates(m_tl.addBlock(Stage::Resident, Phase::Forward),
                    m_s.trainable_order_before,
                    false);
    TimelineBlock &b = m_tl.addBlock(Stage::Resident, Phase::Forward, 0, 1, m_layers);
    const double layerWeights = m_s.resident_weights
                                * (m_s.layer_weights / std::max(1.0, m_s.weights));
    alloc(b,
          tensor("weights",
                 bytes(layerWeights / L),
                 Component::Weights,
                 true,
                 flat ? 1 : m_s.layer_tensors));
    if (m_s.resident_master > 0)
        alloc(b,
              tensor("fp32 master weights",
                     bytes(m_s.layer_master / m_s.state_shard / L),
                     Component::MasterWeights,
                     true,
                     m_s.trainable_layer_tensors));
    if (perTensor)
        allocStates(b, m_s.trainable_order_layer, true);
    else if (m_s.resident_states > 0)
        alloc(b,
              tensor("optimizer states",
                     bytes(m_s.layer_states / m_s.state_shard / L),
                     Component::OptimizerStates,
                     true,
                     m_s.trainable_layer_tensors));
    // With gradient accumulation the modelled (last) micro-batch starts with the .grad tensors of
    // the earlier ones: one per trainable tensor as autograd made them (a flat one per unit when
    // sharded), which the allocator places one by one; unsharded, one per parameter, when the
    // sync is deferred.
    const bool deferred = defersGradientSync();
    const bool gradsPerTensor = !flat || deferred;
    const double rootGrads = m_s.grads - m_s.layer_grads;
    const double layerAccumulated = deferred ? inAccumulatorDtype(m_s.layer_grads)
                                             : m_s.resident_grads
                                                   * (m_s.layer_grads / std::max(1.0, m_s.grads));
    if (accumulates() && layerAccumulated > 0) {
        m_accumulatedLayer = tensor("gradients of earlier micro-batches",
                                    bytes(layerAccumulated / L),
                                    Component::Gradients,
                                    true,
                                    gradsPerTensor ? m_s.trainable_layer_tensors : 1);
        alloc(b, m_accumulatedLayer);
    }

    TimelineBlock &root = m_tl.addBlock(Stage::Resident, Phase::Forward);
    alloc(root,
          tensor("weights",
                 bytes(m_s.resident_weights - layerWeights),
                 Component::Weights,
                 false,
                 flat ? 1 : m_s.root_tensors));
    if (m_s.resident_master > 0)
        alloc(root,
              tensor("fp32 master weights",
                     bytes((m_s.master - m_s.layer_master) / m_s.state_shard),
                     Component::MasterWeights,
                     false,
                     m_s.trainable_root_tensors));
    if (perTensor)
        allocStates(root, m_s.trainable_order_after, false);
    else if (m_s.resident_states > 0)
        alloc(root,
              tensor("optimizer states",
                     bytes((m_s.states - m_s.layer_states) / m_s.state_shard),
                     Component::OptimizerStates,
                     false,
                     m_s.trainable_root_tensors));
    if (m_in.overheads.extra_resident_bytes > 0) // measured from a snapshot (Calibrate)
        alloc(root,
              tensor("extra resident buffers (overheads.extra_resident)",
                     bytes(static_cast<double>(m_in.overheads.extra_resident_bytes)),
                     Component::Temporaries,
                     false));
    if (m_p.train && m_s.sharding == Sharding::None && layersOnSeveralGpus())
        alloc(root, // gradient_as_bucket_view=False
              tensor("DDP gradient buckets", bytes(m_s.grads), Component::Temporaries, false));
    // ZeRO-1/2 with the optimizer offloaded keep a GPU buffer of the largest trainable parameter's
    // size in its dtype for gradients on their way to the CPU (stage_1_and_2.py,
    // temp_grad_buffer_for_gpu_offload, made once in __init__).
    if (deepSpeedOffloadedMasterBytes(m_in) > 0 && isZeroStage12(m_s.sharding))
        alloc(root,
              tensor("ZeRO-Offload gradient staging buffer",
                     bytes(m_s.largest_trainable * m_s.grad_bytes_per_param),
                     Component::Temporaries,
                     false));
    // DeepSpeedZeroOptimizer (stage_1_and_2.py, read at v0.10.0 and 0.19 by a helper): every
    // micro-batch's backward copies the gradients of this rank's partition into a new buffer
    // (copy_grads_in_partition, at the first reduction), freed by the epilogue
    // (_release_ipg_buffers). The first micro-batch's is kept, through views, as the accumulator;
    // a later one is added into it. The step lets go of it once cast to fp32. With the optimizer
    // offloaded the partition is kept from the start.
    if (partitionsGradientsEachBackward() || (zero2Partitions() && !accumulates()))
        m_partition = tensor(accumulates() ? "this micro-batch's gradient partition"
                                           : "partitioned gradients",
                             bytes(m_s.resident_grads),
                             Component::Gradients,
                             false);
    if (accumulates()) {
        m_accumulated = tensor("gradients of earlier micro-batches",
                               bytes(deferred ? inAccumulatorDtype(rootGrads)
                                              : m_s.resident_grads - layerAccumulated),
                               Component::Gradients,
                               false,
                               gradsPerTensor ? std::max(1.0, m_s.trainable_root_tensors) : 1);
        alloc(root, m_accumulated);
    } else if (zero2Partitions() && !partitionsGradientsEachBackward()) {
        alloc(root, m_partition);
    }
}

// Forward: the embedding, then cos/sin and the eager mask (HF computes both once per forward and
// hands them to every layer), the layers, the head; ZeRO-3 / FSDP gather each layer's parameters
// before it runs and prefetch the next layer's (Zhao et al. 2023, arXiv:2304.11277, section 3.2).
void StepBuilder::forward()
{
    const Stage stage = m_p.train ? Stage::Forward : Stage::Prefill;
    TimelineBlock &b = m_tl.addBlock(stage, Phase::Forward);
    const double d = static_cast<double>(m_in.arch.head_dim);
    const std::uint8_t unsharded = gathersWithFsdp2() ? 0 : kGatherStream;
    if (releasesRootAfterUse()) {
        // TRL's chunked loss gathers lm_head inside each chunk instead (the head graph's copy).
        const double perChunk = m_in.training.head_gathered_per_chunk ? m_s.lm_head_weights : 0;
        const double head = headPart(m_s.root_weights, m_s.head_weights) - perChunk;
        m_embedGathered = tensor("gathered embedding parameters",
                                 bytes((m_s.root_weights - m_s.head_weights) * gatheredScale()),
                                 Component::Temporaries,
                                 false,
                                 1,
                                 kGatherStream);
        m_headGathered = tensor("gathered final norm and lm_head parameters",
                                bytes(head * gatheredScale()),
                                Component::Temporaries,
                                false,
                                1,
                                kGatherStream);
        alloc(b, m_embedGathered);
    } else if (m_s.gathers) {
        const SizeExpr root = bytes(m_s.root_weights * gatheredScale());
        if (gathersWithFsdp2()) {
            m_rootAllGatherOutput = tensor("all-gather output (embedding and head)",
                                           root,
                                           Component::Temporaries,
                                           false,
                                           1,
                                           kGatherStream);
            alloc(b, m_rootAllGatherOutput);
        }
        m_rootGathered = tensor("gathered embedding and head parameters",
                                root,
                                Component::Temporaries,
                                false,
                                1,
                                unsharded);
        alloc(b, m_rootGathered);
    }
    m_embed->bind({m_stream, m_gradStream, false, true, 0, false, 0, true, 0, true});
    m_embed->forward(b);
    if (m_embedGathered >= 0)
        release(b, m_embedGathered);
    if (m_in.arch.positions == PositionKind::Rotary) {
        m_cos = tensor("rotary cos",
                       SizeExpr::perPosition(d * m_p.stream),
                       Component::Activations,
                       false);
        m_sin = tensor("rotary sin",
                       SizeExpr::perPosition(d * m_p.stream),
                       Component::Activations,
                       false);
        alloc(b, m_cos);
        alloc(b, m_sin);
    }
    if (explicitMask()) {
        const Component c = maskKeptForBackward() ? Component::Activations : Component::Temporaries;
        const SizeExpr size = attentionShape(m_in.training).scores * maskBytes();
        m_mask = tensor("causal mask [b, 1, s, keys]", size, c, false);
        alloc(b, m_mask);
    }
    const SizeExpr unit = bytes(m_s.layer_weights / m_layers * gatheredScale());
    if (m_s.gathers)
        m_gathered
            = tensor("gathered layer parameters", unit, Component::Temporaries, true, 1, unsharded);
    if (gathersWithFsdp2()) {
        m_allGatherOutput
            = tensor("all-gather output", unit, Component::Temporaries, true, 1, kGatherStream);
        alloc(b, m_allGatherOutput, 0, true);
        release(b, m_rootAllGatherOutput); // layer 0's wait frees the root's
    } else if (m_prefetch) {
        alloc(b, m_gathered, 0, true);
    }
    forwardLayers();
    TimelineBlock &head = m_tl.addBlock(m_p.train ? Stage::Loss : stage, Phase::Forward);
    if (gathersWithFsdp2())
        release(head, m_allGatherOutput, m_layers, true); // freed at the root's post-forward
    else if (m_prefetch)
        release(head, m_gathered, m_layers, true); // the prefetch past the last layer
    if (keepsLastLayerGathered())
        alloc(head, m_gathered, m_layers - 1, true); // not resharded: the same block again
    // The final norm packs its saved tensors (five in torchtune's RMSNorm: x in fp32 twice, the
    // inverse RMS twice, the normalized x), which push the last layers' inputs out of the stash.
    if (offloadsActivations())
        for (int l = std::max(0, m_layers - kActivationOffloadStash); l < m_layers; ++l)
            release(head, m_stream, l, true);
    m_head->bind({m_stream, m_gradStream, true, false, m_layers, true, 0, false, 0, false});
    if (m_headGathered >= 0)
        alloc(head, m_headGathered);
    const TimelineEvent inputsEmbeds{m_stream, 0, false, true}; // see forwardLayers
    m_head->forward(head, m_p.train ? nullptr : &inputsEmbeds);
    forwardEnd();
}

// Forward order: the first layer when it differs, then the alike ones; with checkpointing on
// every N-th layer, groups of N - 1 layers that keep their activations and one checkpointed layer,
// then the layers left over.
std::vector<StepBuilder::LayerRun> StepBuilder::layerRuns(bool backward) const
{
    std::vector<LayerRun> runs;
    const int every = m_g.checkpoint_every <= m_layers ? static_cast<int>(m_g.checkpoint_every) : 0;
    const int groups = every > 1 ? m_layers / every : 0;
    if (m_firstDiffers) {
        runs.push_back({0, 1, 1, {m_first.get()}});
        runs.push_back({1, 1, m_layers - 1, {m_body.get()}});
    } else if (groups > 0) {
        LayerRun group{0, every, groups, std::vector<GraphTimeline *>(every - 1, m_body.get())};
        group.layers.push_back(m_checkpointed.get());
        runs.push_back(group);
        if (m_layers > groups * every)
            runs.push_back({groups * every, 1, m_layers - groups * every, {m_body.get()}});
    } else {
        runs.push_back({0, 1, m_layers, {m_body.get()}});
    }
    if (!backward)
        return runs;
    std::reverse(runs.begin(), runs.end());
    for (LayerRun &run : runs) {
        const int count = static_cast<int>(run.layers.size());
        run.first += (run.repeat - 1) * run.step + count - 1; // the run's last layer
        run.step = -run.step;
        std::reverse(run.layers.begin(), run.layers.end());
    }
    return runs;
}

StreamBinding StepBuilder::runBinding(const LayerRun &run, std::size_t j, int at) const
{
    StreamBinding s{m_stream, m_gradStream, true, true, at, false, at + 1, false, at + 1, false, at};
    const auto checkpointed = [&](std::size_t k) {
        return k < run.layers.size() && run.layers[k] == m_checkpointed.get();
    };
    if (run.layers.size() < 2 || m_checkpointInput < 0)
        return s;
    const std::size_t above = run.step > 0 ? j + 1 : j - 1; // the next layer in forward order
    if (checkpointed(j)) {
        s.stream = m_checkpointInput; // its input; its output is the plain stream
        s.output_stream = m_stream;
    } else if ((run.step > 0 || j > 0) && checkpointed(above)) {
        s.output_stream = m_checkpointInput;
    }
    return s;
}

// With activation offloading (torchtune OffloadActivations, use_streams): a layer's input is
// packed when its checkpoint has run and copied to CPU on a side stream; the GPU tensor stays in
// the forward stash until kActivationOffloadStash more tensors are packed, so layer l's input is
// freed after layer l + 5 has run. Runs of one layer (full checkpointing on every layer) are split
// there so that every repetition of a block does the same.
std::vector<StepBuilder::LayerRun> StepBuilder::forwardRuns() const
{
    std::vector<LayerRun> runs = layerRuns(false);
    if (!m_p.train && !runs.empty() && runs[0].first == 0 && runs[0].repeat > 1
        && runs[0].layers.size() == 1) { // the first layer's input outlives it (forwardLayers)
        LayerRun rest = runs[0];
        runs[0].repeat = 1;
        rest.first = 1;
        rest.repeat -= 1;
        runs.insert(runs.begin() + 1, rest);
    }
    if (!offloadsActivations())
        return runs;
    std::vector<LayerRun> split;
    for (const LayerRun &run : runs) {
        const int end = run.first + run.repeat;
        if (run.layers.size() == 1 && run.step == 1 && run.first < kActivationOffloadStash
            && end > kActivationOffloadStash) {
            split.push_back({run.first, 1, kActivationOffloadStash - run.first, run.layers});
            split.push_back({kActivationOffloadStash, 1, end - kActivationOffloadStash, run.layers});
        } else {
            split.push_back(run);
        }
    }
    return split;
}

void StepBuilder::forwardLayers()
{
    const Stage stage = m_p.train ? Stage::Forward : Stage::Prefill;
    for (const LayerRun &run : forwardRuns()) {
        TimelineBlock &b = m_tl.addBlock(stage, Phase::Forward, run.first, run.step, run.repeat);
        b.decoder_layer = true;
        for (std::size_t j = 0; j < run.layers.size(); ++j) {
            const int at = static_cast<int>(j);
            GraphTimeline &g = *run.layers[j];
            if (m_keepGathered || gathersWithFsdp2()) // FSDP2: copied out of its flat output
                alloc(b, m_gathered, at);
            else if (m_prefetch)
                alloc(b, m_gathered, at + 1);
            StreamBinding binding = runBinding(run, j, at);
            // generate()'s forward: LlamaModel.forward's `inputs_embeds` keeps the first layer's
            // input to the model's end (StepBuilder::forward frees it after the final norm).
            binding.keep_input = !m_p.train && run.first == 0 && run.repeat == 1 && j == 0;
            g.bind(binding);
            g.forward(b);
            if (m_prefetch)
                release(b, m_gathered, at);
            if (gathersWithFsdp2()) { // the next unit's all-gather, then its wait
                alloc(b, m_allGatherOutput, at + 1);
                release(b, m_allGatherOutput, at);
            }
            if (offloadsActivations() && run.first >= kActivationOffloadStash)
                release(b, m_stream, at - kActivationOffloadStash); // out of the stash
        }
    }
}

// When forward returns: autocast's weight cache is cleared, the model output is dropped, HF's mask
// goes out of scope (kept by checkpoints), inference drops its shared tables.
void StepBuilder::forwardEnd()
{
    const Stage stage = m_p.train ? Stage::Loss : Stage::Prefill;
    for (const LayerRun &run : layerRuns(false)) {
        TimelineBlock &all = m_tl.addBlock(stage, Phase::Forward, run.first, run.step, run.repeat);
        for (std::size_t j = 0; j < run.layers.size(); ++j) {
            const int at = static_cast<int>(j);
            run.layers[j]->bind(runBinding(run, j, at));
            run.layers[j]->releaseHeld(all, Hold::ForwardEnd);
        }
    }
    TimelineBlock &b = m_tl.addBlock(stage, Phase::Forward);
    m_head->releaseHeld(b, Hold::ForwardEnd);
    m_embed->releaseHeld(b, Hold::ForwardEnd);
    if (m_mask >= 0 && !maskKeptForBackward())
        release(b, m_mask);
    if (!m_p.train) {
        // The last position's fp32 logits, handed to sampling; generate()'s next_token_logits
        // keeps them through the next step's forward (decodeLogits).
        if (m_in.training.inference.generated_tokens == 0)
            m_head->releaseOutput(b);
        if (m_cos >= 0) {
            release(b, m_cos);
            release(b, m_sin);
        }
        if (m_rootGathered >= 0)
            release(b, m_rootGathered);
    }
}

// generate()'s decode steps after the prefill, taken at the last one, where the cache is largest:
// every layer's cache grown by g - 1 positions per sequence, then the step's update layer by layer
// (transformers cache_utils.py). DynamicLayer.update re-makes keys and values with torch.cat, so
// for a moment a layer holds its old and its new keys (then values). StaticLayer writes in place.
// QuantizedLayer keeps up to residual_length positions in full precision and, every step,
// dequantizes the layer's whole cache and cats it with the residual for attention: four
// full-precision copies of the layer's cache in flight. The layers' own work on one token per
// sequence is small (b x intermediate) and not counted; the step's logits are.
void StepBuilder::decode()
{
    const InferenceConfig &inf = m_in.training.inference;
    const double tp = static_cast<double>(
        std::max<std::int64_t>(1, m_in.parallelism.tensor_parallel));
    const double width = std::max(1.0, static_cast<double>(m_in.arch.kv_heads) / tp)
                         * static_cast<double>(m_in.arch.head_dim);
    const double full = m_p.compute;
    const double e = inf.kv_cache_dtype == KvCacheDtype::Fp8 ? 1 : full;
    const double g = static_cast<double>(inf.generated_tokens);
    if (inf.kv_cache == KvCacheKind::Static) {
        decodeLogits();
        return;
    }
    const bool quantized = inf.kv_cache == KvCacheKind::Quantized;
    const double stored = quantized ? quantizedKvBytesPerElement(inf, full) : e;
    // The positions b (s + g - 1) before the last step, b (s + g) after it.
    const SizeExpr before = (SizeExpr::perToken(1) + SizeExpr::perSequence(g - 1)) * width;
    const SizeExpr after = before + SizeExpr::perSequence(width);
    const int grownKeys = tensor("key cache", before * stored, Component::KvCache, true);
    const int grownValues = tensor("value cache", before * stored, Component::KvCache, true);
    TimelineBlock &grow = m_tl.addBlock(Stage::Decode, Phase::Forward, 0, 1, m_layers);
    grow.decoder_layer = true;
    // As torch.cat goes: the grown keys, the prefill's keys freed, then the same for the values.
    alloc(grow, grownKeys);
    m_body->releaseHeld(grow, Hold::StepEnd); // the prefill's entries for this layer
    const auto values = grow.events.size() > 2 ? grow.events.begin() + 2 : grow.events.end();
    grow.events.insert(values, {grownValues, 0, true, false});
    TimelineBlock &last = m_tl.addBlock(Stage::Decode, Phase::Forward, 0, 1, m_layers);
    last.decoder_layer = true;
    if (quantized) {
        const double residual = static_cast<double>(inf.kv_residual_length);
        const int tail = tensor("full-precision residual",
                                SizeExpr::perSequence(2 * residual * width * full),
                                Component::KvCache,
                                true);
        const int copies = tensor("dequantized cache and cat for attention",
                                  after * (4 * full),
                                  Component::Temporaries,
                                  true);
        alloc(last, tail);
        alloc(last, copies);
        decodeAttentionCopies(last, after * full); // over the dequantized cache
        release(last, copies);
    } else if (inf.kv_cache == KvCacheKind::Legacy) {
        // The step's input tuple keeps every layer's old keys and values until the step is over
        // (Qwen v1 modeling_qwen.py: key = torch.cat((past_key, key), dim=1), present = (key,
        // value); the caller holds past_key_values): the cache twice over at the end.
        catCacheEntries(last, after * e, -1, -1);
        decodeLogits();
        TimelineBlock &old = m_tl.addBlock(Stage::Decode, Phase::Forward, 0, 1, m_layers);
        old.decoder_layer = true;
        release(old, grownKeys);
        release(old, grownValues);
        return;
    } else {
        catCacheEntries(last, after * e, grownKeys, grownValues);
        if (inf.kv_cache_dtype == KvCacheDtype::Model)
            decodeAttentionCopies(last, after * e);
    }
    decodeLogits();
}

// A decode step's attention over the whole cache: eager attention copies each layer's grown keys,
// then values, to every query head (transformers repeat_kv) for the moment of the layer's
// attention; SDPA does so where it does in the prefill (sdpaRepeatsKv: the stack's model repeats
// whatever the mask, torch before 2.5, or a padded batch's mask). Without padding a decode step
// passes SDPA no mask (masking_utils, _ignore_causal_mask_sdpa with one query position). The
// query's scores ([b, heads, 1, keys]) are small and not counted.
void StepBuilder::decodeAttentionCopies(TimelineBlock &b, SizeExpr cacheEntry)
{
    const TrainingConfig &t = m_in.training;
    const bool llama = isLlamaStyle(m_in.arch);
    // Heads on this rank, as the layer graph counts them (decoder_layer_graph.cpp).
    const double tp = static_cast<double>(
        std::max<std::int64_t>(1, m_in.parallelism.tensor_parallel));
    const double heads = static_cast<double>(m_in.arch.attention_heads) / tp;
    const double groups = heads / std::max(1.0, static_cast<double>(m_in.arch.kv_heads) / tp);
    const bool repeats = llama && (t.attention == Attention::Eager || sdpaRepeatsKv(t));
    if (!repeats || groups <= 1)
        return;
    const int keys = tensor("repeat_kv keys", cacheEntry * groups, Component::Temporaries, true);
    const int values = tensor("repeat_kv values", cacheEntry * groups, Component::Temporaries, true);
    alloc(b, keys);
    alloc(b, values);
    release(b, keys);
    release(b, values);
}

// A layer's keys, then values, re-made one position longer by torch.cat; the old ones are freed
// as each new one exists (`oldKeys` / `oldValues` < 0: someone else still holds them).
void StepBuilder::catCacheEntries(TimelineBlock &b, SizeExpr size, int oldKeys, int oldValues)
{
    const int keys = tensor("torch.cat keys", size, Component::KvCache, true);
    const int values = tensor("torch.cat values", size, Component::KvCache, true);
    alloc(b, keys);
    if (oldKeys >= 0)
        release(b, oldKeys);
    alloc(b, values);
    if (oldValues >= 0)
        release(b, oldValues);
}

// The decode step's head: the last hidden state of each sequence through lm_head, in the compute
// dtype, then cast to fp32 for sampling (generate(): outputs.logits[:, -1, :].float()).
void StepBuilder::decodeLogits()
{
    const TensorParallelPlan plan = tensorParallelPlan(m_in.parallelism, m_in.training.stack);
    // Unless the logits stay split over the tensor-parallel ranks, each rank gathers them whole.
    const double vocab = static_cast<double>(m_in.arch.vocab_size)
                         / (plan.loss_parallel ? plan.ranks() : 1.0);
    TimelineBlock &b = m_tl.addBlock(Stage::Decode, Phase::Forward);
    const int logits = tensor("decode logits",
                              SizeExpr::perSequence(vocab * m_p.compute),
                              Component::Logits,
                              false);
    const int fp32
        = tensor("decode logits fp32", SizeExpr::perSequence(vocab * 4), Component::Logits, false);
    alloc(b, logits);
    alloc(b, fp32);
    m_head->releaseOutput(b); // the previous step's (the prefill's stands for it), now replaced
    release(b, logits);       // del outputs
    release(b, fp32);
}

// Backward: loss.backward() from the head down to the embedding. Each layer's trainable weights
// get their .grad as its backward produces them; with ZeRO-3 / FSDP the layer is gathered again
// (the previous one prefetched), its gradients are made unsharded and reduce-scattered into a
// shard when it is done; ZeRO-1/2 reduce through the stage's gradient buckets.
// DeepSpeedZeroOptimizer.backward (deepspeed/runtime/zero/stage_1_and_2.py) allocates, with
// contiguous_gradients, one reduce_bucket_size buffer in the gradients' dtype and a second one with
// overlap_comm (double buffering); the stack profile fills the sizes (stack_profile.cpp). ZeRO-3
// keeps the same two buckets here as an approximation of its own reduce buffers.
double StepBuilder::reduceBucketBytes() const
{
    const DeepSpeedConfig &d = m_in.parallelism.deepspeed;
    const double h = static_cast<double>(m_in.arch.hidden_size);
    const double elements = d.reduce_bucket_size.value_or(h * h);
    const double buffers = d.overlap_comm.value_or(true) ? 2 : 1;
    return buffers * elements * m_s.grad_bytes_per_param;
}

void StepBuilder::backward()
{
    TimelineBlock &b = m_tl.addBlock(Stage::Loss, Phase::Backward);
    if (isDeepSpeed(m_s.sharding) && m_in.parallelism.gpus > 1) {
        m_bucket
            = tensor("reduce buckets", bytes(reduceBucketBytes()), Component::Temporaries, false);
        alloc(b, m_bucket);
    }
    if (m_g.head.output >= 0 && m_g.head.output == m_g.head.input) {
        // A stage before the last: its backward starts from the gradient of its output, which the
        // next stage sends back (the send graph's output is the last layer's output itself).
        alloc(b, m_gradStream, m_layers, true);
    } else {
        alloc(b, m_head->gradTensor(m_g.head.output));
    }
    const bool accumulating = m_in.training.gradient_accumulation_steps > 1;
    const std::size_t from = b.events.size();
    std::vector<std::int32_t> ops;
    m_head->backward(b, accumulating, opsOf(ops));
    if (partitionsGradientsEachBackward()) // lm_head's gradient is the first reduced
        alloc(b, m_partition);
    layerGradients(b, *m_head, from);
    stepInBackward(b, from, ops, m_in.arch.tied_embeddings);
    if (m_headGathered >= 0)
        release(b, m_headGathered);
    m_liveGradLayer = m_layers;
    if (m_prefetch && !keepsLastLayerGathered()) {
        if (gathersWithFsdp2())
            alloc(b, m_allGatherOutput, m_layers - 1, true);
        alloc(b, m_gathered, m_layers - 1, true);
        if (gathersWithFsdp2())
            release(b, m_allGatherOutput, m_layers - 1, true);
    }
    backwardLayers();

    TimelineBlock &end = m_tl.addBlock(Stage::Backward, Phase::Backward);
    if (gathersWithFsdp2()) // the unit past the first layer: none to copy out
        release(end, m_gathered, -1, true);
    if (m_cos >= 0) {
        release(end, m_cos);
        release(end, m_sin);
    }
    if (m_mask >= 0 && maskKeptForBackward())
        release(end, m_mask);
    m_embed->bind({m_stream, m_gradStream, false, true, 0, false, 0, true, m_liveGradLayer, true});
    const std::size_t embedFrom = end.events.size();
    if (m_embedGathered >= 0)
        alloc(end, m_embedGathered);
    m_embed->backward(end, accumulating, opsOf(ops));
    layerGradients(end, *m_embed, embedFrom);
    stepInBackward(end, embedFrom, ops);
    for (const TimelineEvent &e : m_deferredSteps)
        stepParameter(end.events, e);
    if (holdsRootGradients())
        reduceRootGradients(end);
    m_head->releaseHeld(end, Hold::StepEnd);
    m_head->releaseOutput(end); // the loss, once the training loop lets it go
    if (m_prefetch && !gathersWithFsdp2())
        release(end, m_gathered, -1, true); // the prefetch past the first layer
    if (m_rootGathered >= 0)
        release(end, m_rootGathered);
    if (m_embedGathered >= 0)
        release(end, m_embedGathered);
    if (partitionsGradientsEachBackward() && accumulates())
        release(end, m_partition); // added into the earlier micro-batches' partition
    if (m_bucket >= 0)
        release(end, m_bucket);
    if (defersGradientSync())
        reduceDeferredGradients();
    if (m_heldInput >= 0) { // the final callback removes the hooks
        TimelineBlock &hooks = m_tl.addBlock(Stage::Backward, Phase::Backward, 0, 1, m_layers);
        release(hooks, m_heldInput);
        release(hooks, m_heldInputGrad);
    }
}

void StepBuilder::backwardLayers()
{
    const bool accumulating = m_in.training.gradient_accumulation_steps > 1;
    std::vector<std::int32_t> ops;
    std::vector<LayerRun> runs = layerRuns(true);
    // The first unit to reduce has no earlier reduce-scatter input to let go: a block of its own.
    if (holdsReduceScatterState() && runs.front().repeat > 1) {
        LayerRun rest = runs.front();
        runs.front().repeat = 1;
        rest.first += rest.step;
        rest.repeat -= 1;
        runs.insert(runs.begin() + 1, rest);
    }
    for (const LayerRun &run : runs) {
        TimelineBlock &b
            = m_tl.addBlock(Stage::Backward, Phase::Backward, run.first, run.step, run.repeat);
        b.decoder_layer = true;
        for (std::size_t j = 0; j < run.layers.size(); ++j) {
            const int at = -static_cast<int>(j);
            GraphTimeline &g = *run.layers[j];
            if (gathersWithFsdp2()) // prefetched after this unit's copy-out
                alloc(b, m_allGatherOutput, at - 1);
            else if (m_prefetch)
                alloc(b, m_gathered, at - 1);
            const int layer = run.first + at; // of the first repetition
            const bool relative = run.repeat > 1 || m_liveGradLayer == layer + 1;
            StreamBinding s = runBinding(run, j, at);
            if (!relative) {
                s.output_grad_layer = m_liveGradLayer;
                s.output_grad_absolute = true;
            }
            g.bind(s);
            if (offloadsActivations()) // copied back when the checkpoint unpacks it
                alloc(b, m_stream, at);
            const std::size_t from = b.events.size();
            const int inputGrad = g.backward(b, accumulating, opsOf(ops));
            layerGradients(b, g, from, at);
            stepInBackward(b, from, ops);
            if (m_s.gathers && !defersGradientSync()) // else resharded after the last backward
                release(b, m_gathered, at);
            if (gathersWithFsdp2()) { // the next unit's pre-backward copies it out
                alloc(b, m_gathered, at - 1);
                release(b, m_allGatherOutput, at - 1);
            }
            if (inputGrad == g.graph().input)
                m_liveGradLayer = layer + (run.repeat - 1) * run.step;
            if (m_heldInput >= 0) {
                alloc(b, m_heldInput, at);
                alloc(b, m_heldInputGrad, at);
            }
        }
    }
}

// `b`'s events into `kept`, those from `from` on without the weights' .grad events, the first of
// which becomes the allocation of `with`; whether there was one.
bool StepBuilder::replaceParamGrads(const TimelineBlock &b,
                                    std::size_t from,
                                    int with,
                                    int layer,
                                    std::vector<TimelineEvent> &kept) const
{
    kept.assign(b.events.begin(), b.events.begin() + static_cast<long>(from));
    bool seen = false;
    for (std::size_t i = from; i < b.events.size(); ++i) {
        const TimelineEvent &e = b.events[i];
        const bool paramGrad = m_tl.tensors[static_cast<std::size_t>(e.tensor)].origin
                               == TensorOrigin::ParamGrad;
        if (!paramGrad)
            kept.push_back(e);
        else if (!seen)
            kept.push_back({with, layer, true, false});
        seen = seen || paramGrad;
    }
    return seen;
}

double StepBuilder::paramGradBytes(const TimelineBlock &b,
                                   std::size_t from,
                                   std::string_view only) const
{
    double sum = 0;
    for (std::size_t i = from; i < b.events.size(); ++i) {
        const TimelineEvent &e = b.events[i];
        const TimelineTensor &t = m_tl.tensors[static_cast<std::size_t>(e.tensor)];
        if (e.alloc && t.origin == TensorOrigin::ParamGrad && (only.empty() || t.name == only))
            sum += t.size.fixed * t.copies;
    }
    return m_p.grad > 0 ? sum / m_p.grad * m_s.grad_bytes_per_param : 0;
}

// With ZeRO-2/3 and FSDP a layer's gradients exist unsharded only until reduce-scatter: its
// weights' .grad events become one transient unsharded buffer, then a shard is kept (ZeRO-2 keeps
// its partition in a buffer allocated up front).
void StepBuilder::layerGradients(TimelineBlock &b,
                                 const GraphTimeline &g,
                                 std::size_t from,
                                 int layer)
{
    const bool sharded = m_p.train && shardsGradients(m_s.sharding) && m_in.parallelism.gpus > 1;
    if (!sharded)
        return;
    if (defersGradientSync()) {
        accumulateUnsharded(b, g, from, layer);
        return;
    }
    const bool perLayer = g.graph().input >= 0 && &g != m_head.get();
    if (!perLayer && holdsRootGradients()) {
        holdRootGradients(b, from, &g == m_head.get());
        return;
    }
    const double unit = perLayer ? m_s.layer_grads / m_layers : paramGradBytes(b, from);
    int rootUnsharded = -1, rootInput = -1;
    int &unsharded = perLayer ? m_unitGrad : rootUnsharded;
    if (unsharded < 0)
        unsharded = tensor(perLayer ? "unsharded layer gradients" : "unsharded gradients",
                           bytes(inParamDtype(unit)),
                           Component::Temporaries,
                           perLayer);
    // FSDP's mixed precision: autograd's .grad in param_dtype, copied into a reduce_dtype input
    // where that differs, the .grad freed once copied. FSDP2 copies into a flat input even where
    // the dtypes agree (_fsdp_collectives.py foreach_reduce, foreach_reduce_scatter_copy_in);
    // reduceScatterInputStream says on which stream.
    int &input = perLayer ? m_unitReduceInput : rootInput;
    if (input < 0 && (shardsWithFsdp2() || inAccumulatorDtype(unit) != inParamDtype(unit)))
        input = tensor("reduce-scatter input",
                       bytes(inAccumulatorDtype(unit)),
                       Component::Temporaries,
                       perLayer,
                       1,
                       reduceScatterInputStream());
    std::vector<TimelineEvent> kept;
    if (replaceParamGrads(b, from, unsharded, layer, kept)) {
        if (perLayer && input >= 0 && m_reduceStateHeld) // the previous unit's, waited for
            kept.push_back({input, layer + 1, false, false});
        reduceScatter(kept, unsharded, input, layer, unit, perLayer);
        if (perLayer && input >= 0 && holdsReduceScatterState()) {
            kept.pop_back(); // kept until the next unit's post-backward
            m_reduceStateHeld = true;
        }
    }
    b.events = std::move(kept);
}

// After `unsharded` (a unit's gradients in param_dtype) is allocated: the copy into the
// reduce-scatter input where there is one, the shard kept, and the frees; the last event appended
// frees the input (or the unsharded gradients where there is none).
void StepBuilder::reduceScatter(std::vector<TimelineEvent> &kept,
                                int unsharded,
                                int input,
                                int layer,
                                double unit,
                                bool perLayer)
{
    if (input >= 0) {
        kept.push_back({input, layer, true, false});
        kept.push_back({unsharded, layer, false, false});
    }
    if (m_partition < 0 && m_accumulated < 0) {
        int shard;
        if (perLayer) {
            if (m_gradShard < 0)
                m_gradShard = tensor("gradient shard",
                                     bytes(unit / m_s.grad_shard),
                                     Component::Gradients,
                                     true,
                                     1,
                                     kReduceStream);
            shard = m_gradShard;
        } else {
            shard = tensor("gradient shard",
                           bytes(unit / m_s.grad_shard),
                           Component::Gradients,
                           false,
                           1,
                           kReduceStream);
            m_rootShards.push_back(shard);
        }
        kept.push_back({shard, layer, true, false});
    }
    kept.push_back({input >= 0 ? input : unsharded, layer, false, false});
}

// The root unit's gradients of one end of the model (the head's, then the embedding's), held in
// param_dtype until the unit reduces (holdsRootGradients).
void StepBuilder::holdRootGradients(TimelineBlock &b, std::size_t from, bool head)
{
    const double share = paramGradBytes(b, from);
    const double extra = head ? 0 : wholeVocabularyExtra(b, from);
    const int held = tensor(head ? "unsharded gradients (head)" : "unsharded gradients (embedding)",
                            bytes(inParamDtype(share + extra)),
                            Component::Gradients,
                            false);
    std::vector<TimelineEvent> kept;
    if (replaceParamGrads(b, from, held, 0, kept)) {
        m_heldRootGrads.push_back(held);
        // FSDP2 before pytorch PR #136237 (2024-09-17, in 2.6) reduces the replicated gradient's
        // local tensor as it is: the flat input and the shard it keeps are sized from it
        // (_fsdp_param.py _get_grad_inner_tensor redistributes a Partial gradient only;
        // _fsdp_collectives.py foreach_reduce sizes the input from the gradients). From 2.6 it
        // redistributes to the parameter's Shard(0) first, a local chunk.
        const bool chunked = torchRelease(m_in.training.stack) >= LibraryVersion{2, 6, 0};
        m_heldRootBytes += share + (chunked ? 0 : extra);
    }
    b.events = std::move(kept);
}

// The bytes (in the model's gradient dtype) by which the embedding's gradient exceeds its
// parameter's share under tensor parallelism with FSDP2: DTensor has no vocabulary-sharded
// strategy for embedding_dense_backward (replicate, column-wise, batch or partial only;
// torch/distributed/tensor/_ops/_embedding_ops.py, the same in mid-2024 and 2026), so behind a
// RowwiseParallel embedding the gradient is made for the whole vocabulary on every rank.
double StepBuilder::wholeVocabularyExtra(const TimelineBlock &b, std::size_t from) const
{
    const double tp = static_cast<double>(m_in.parallelism.tensor_parallel);
    if (tp <= 1 || !shardsWithFsdp2() || m_in.arch.tied_embeddings)
        return 0;
    return paramGradBytes(b, from, kEmbeddingWeight) * (tp - 1);
}

// The root unit's post-backward once the embedding's backward is done: resharded, the previous
// unit's reduce-scatter input let go, FSDP1's flat gradient assembled from the held ones (FSDP2
// copies them into its flat input directly), then the reduce-scatter as for a layer.
void StepBuilder::reduceRootGradients(TimelineBlock &b)
{
    if (m_rootGathered >= 0)
        release(b, m_rootGathered);
    m_rootGathered = -1;
    if (m_reduceStateHeld)
        release(b, m_unitReduceInput, 0, true);
    m_reduceStateHeld = false;
    if (m_heldRootGrads.empty())
        return;
    const double unit = m_heldRootBytes;
    const auto freeHeld = [&] {
        for (int t : m_heldRootGrads)
            release(b, t);
        m_heldRootGrads.clear();
    };
    int unsharded = -1, input = -1;
    if (!shardsWithFsdp2()) {
        unsharded = tensor("unsharded gradients",
                           bytes(inParamDtype(unit)),
                           Component::Temporaries,
                           false);
        alloc(b, unsharded);
        freeHeld();
    }
    if (shardsWithFsdp2() || inAccumulatorDtype(unit) != inParamDtype(unit))
        input = tensor("reduce-scatter input",
                       bytes(inAccumulatorDtype(unit)),
                       Component::Temporaries,
                       false,
                       1,
                       reduceScatterInputStream());
    if (unsharded < 0) { // FSDP2: the held gradients themselves are copied in
        alloc(b, input);
        freeHeld();
        unsharded = input;
        input = -1;
    }
    reduceScatter(b.events, unsharded, input, 0, unit, false);
    m_heldRootBytes = 0;
}

double StepBuilder::inParamDtype(double gradBytes) const
{
    const auto param = m_in.parallelism.fsdp_param_dtype;
    const double bytes = param ? paramDtypeBytes(*param) : m_s.grad_bytes_per_param;
    return gradBytes / std::max(1.0, m_s.grad_bytes_per_param) * bytes;
}

double StepBuilder::inAccumulatorDtype(double gradBytes) const
{
    const auto reduce = m_in.parallelism.fsdp_reduce_dtype;
    if (!reduce || reduce == m_in.parallelism.fsdp_param_dtype)
        return inParamDtype(gradBytes);
    return gradBytes / std::max(1.0, m_s.grad_bytes_per_param) * paramDtypeBytes(*reduce);
}

// A unit's backward with its sync off: autograd's .grad of the unit's parameters in param_dtype,
// which FSDP2's post_backward folds into the unit's accumulators and frees (the step's first
// backward makes them, to_accumulated_grad_if_needed; later ones add to them,
// accumulate_unsharded_grad_if_needed).
void StepBuilder::accumulateUnsharded(TimelineBlock &b,
                                      const GraphTimeline &g,
                                      std::size_t from,
                                      int layer)
{
    const bool perLayer = g.graph().input >= 0 && &g != m_head.get();
    const double unit = perLayer ? m_s.layer_grads / m_layers : m_s.grads - m_s.layer_grads;
    const double tensors = perLayer ? m_s.trainable_layer_tensors
                                    : std::max(1.0, m_s.trainable_root_tensors);
    const auto make = [&](const char *name, double size, Component c) {
        return tensor(name, bytes(size), c, perLayer, tensors);
    };
    if (perLayer && m_paramDtypeGrad < 0)
        m_paramDtypeGrad = make("unsharded layer gradients",
                                inParamDtype(unit),
                                Component::Temporaries);
    // The embedding's whole-vocabulary gradient under tensor parallelism (wholeVocabularyExtra),
    // chunked to the parameter's share as it is accumulated (torch >= 2.6; before, the
    // accumulator would be whole too: not modelled).
    const double whole = perLayer ? unit : unit + wholeVocabularyExtra(b, from);
    const int grad = perLayer
                         ? m_paramDtypeGrad
                         : make("unsharded gradients", inParamDtype(whole), Component::Temporaries);
    std::vector<TimelineEvent> kept;
    if (!replaceParamGrads(b, from, grad, layer, kept)) {
        b.events = std::move(kept);
        return;
    }
    if (!accumulates()) { // the step's first backward of this unit makes its accumulators
        const char *name = "unsharded gradients (sync deferred)";
        if (perLayer && m_accumulatedLayer < 0)
            m_accumulatedLayer = make(name, inAccumulatorDtype(unit), Component::Gradients);
        if (!perLayer)
            m_rootAccumulators.push_back(make(name, inAccumulatorDtype(unit), Component::Gradients));
        kept.push_back(
            {perLayer ? m_accumulatedLayer : m_rootAccumulators.back(), layer, true, false});
    }
    kept.push_back({grad, layer, false, false});
    b.events = std::move(kept);
}

// After the stage's last backward (run_post_backward): each unit resharded and its accumulated
// gradients reduce-scattered (FSDP2 _fsdp_collectives.py, foreach_reduce: one flat reduce_dtype
// input of the unit's size on the current stream, the accumulators freed once copied into it,
// the sharded gradient kept from the reduce-scatter stream), the root unit first (FSDPState
// order), then the layers in order.
void StepBuilder::reduceDeferredGradients()
{
    TimelineBlock &root = m_tl.addBlock(Stage::Backward, Phase::Backward);
    std::vector<int> accumulators = m_rootAccumulators;
    if (m_accumulated >= 0)
        accumulators.push_back(m_accumulated);
    const double rootUnit = inAccumulatorDtype(m_s.grads - m_s.layer_grads);
    const int input = rootUnit > 0 ? tensor("reduce-scatter input",
                                            bytes(rootUnit),
                                            Component::Temporaries,
                                            false,
                                            1,
                                            reduceScatterInputStream())
                                   : -1;
    if (input >= 0)
        alloc(root, input);
    for (int t : accumulators) // once copied into the input
        release(root, t);
    if (input >= 0) {
        m_rootShards.push_back(tensor("gradient shard",
                                      bytes(rootUnit / m_s.grad_shard),
                                      Component::Gradients,
                                      false,
                                      1,
                                      kReduceStream));
        alloc(root, m_rootShards.back());
        release(root, input);
    }
    m_accumulated = -1;
    m_rootAccumulators.clear();
    TimelineBlock &b = m_tl.addBlock(Stage::Backward, Phase::Backward, 0, 1, m_layers);
    const double unit = inAccumulatorDtype(m_s.layer_grads / m_layers);
    if (m_gathered >= 0)
        release(b, m_gathered);
    if (m_accumulatedLayer < 0 || unit <= 0)
        return;
    const int layerInput = tensor("reduce-scatter input",
                                  bytes(unit),
                                  Component::Temporaries,
                                  true,
                                  1,
                                  reduceScatterInputStream());
    m_gradShard = tensor("gradient shard",
                         bytes(unit / m_s.grad_shard),
                         Component::Gradients,
                         true,
                         1,
                         kReduceStream);
    alloc(b, layerInput);
    release(b, m_accumulatedLayer);
    alloc(b, m_gradShard);
    release(b, layerInput);
    m_accumulatedLayer = -1;
}

// The optimizer step in backward (torchtune optimizer_in_bwd, recipes/full_finetune_single_device.py
// and torchtune/training/memory.py): each parameter has an optimizer of its own, stepped by a
// post-accumulate-grad hook once its .grad is complete, then zero_grad(set_to_none=True) frees the
// gradient. The hook runs once the node that made the gradient has finished (AccumulateGrad is
// ready next), after that node's incoming gradient is freed; autograd sums every contribution first,
// so a tied lm_head / embedding weight steps after the embedding's backward. The step's temporaries
// are those of one tensor.
void StepBuilder::stepInBackward(TimelineBlock &b,
                                 std::size_t from,
                                 const std::vector<std::int32_t> &ops,
                                 bool deferTiedHead)
{
    if (!stepsInBackward())
        return;
    std::vector<TimelineEvent> out(b.events.begin(), b.events.begin() + static_cast<long>(from));
    std::vector<TimelineEvent> pending; // stepped when their op's events end
    std::int32_t pendingOp = -1;
    const auto flush = [&] {
        for (const TimelineEvent &g : pending)
            stepParameter(out, g);
        pending.clear();
    };
    for (std::size_t i = from; i < b.events.size(); ++i) {
        const TimelineEvent e = b.events[i];
        const std::int32_t op = ops[i - from];
        if (op != pendingOp)
            flush();
        out.push_back(e);
        const TimelineTensor &t = m_tl.tensors[static_cast<std::size_t>(e.tensor)];
        if (!e.alloc || t.origin != TensorOrigin::ParamGrad)
            continue;
        if (deferTiedHead && std::strcmp(t.name, "lm_head") == 0) {
            m_deferredSteps.push_back(e);
            continue;
        }
        pending.push_back(e);
        pendingOp = op;
    }
    flush();
    b.events = std::move(out);
}

// States, gradients and parameters share a dtype in torch's optimizers: the step's temporaries
// scale with the gradient's bytes.
void StepBuilder::stepParameter(std::vector<TimelineEvent> &events, const TimelineEvent &grad)
{
    if (m_stepBytesPerGradByte < 0) {
        const AdamWWorkspace adamW = membudget::adamWWorkspace(torchRelease(m_in.training.stack));
        m_stepBytesPerGradByte = oneTensorStepBytes(m_in.training.optimizer,
                                                    adamW,
                                                    m_s.trainable_state_bytes)
                                 / std::max(1e-9, m_s.grad_bytes_per_param);
    }
    const double perByte = m_stepBytesPerGradByte;
    if (perByte > 0) {
        auto [it, added] = m_stepWorkspace.try_emplace(grad.tensor, -1);
        if (added) {
            const TimelineTensor &g = m_tl.tensors[static_cast<std::size_t>(grad.tensor)];
            TimelineTensor w;
            w.name = "optimizer step of one parameter (in backward)";
            w.size = g.size * perByte;
            w.per_layer = g.per_layer;
            w.copies = g.copies;
            it->second = m_tl.addTensor(w);
        }
        events.push_back({it->second, grad.layer, true, grad.absolute});
        events.push_back({it->second, grad.layer, false, grad.absolute});
    }
    events.push_back({grad.tensor, grad.layer, false, grad.absolute});
}

// The optimizer step on this GPU's trainable parameters, then zero_grad(set_to_none=True).
//  - torch's foreach AdamW allocates sqrt(exp_avg_sq) for the whole parameter group at once, one
//    state-sized list (torch/optim/adamw.py, _multi_tensor_adamw; measured in torchtune PR #389),
//    two in torch 2.0, and before 2.0 it loops tensor by tensor (adamWWorkspace below);
//    the fused and 8-bit kernels and DeepSpeed's Adam update in place;
//  - Lion and Adafactor loop per tensor with tensor-sized temporaries;
//  - mixed precision first makes fp32 copies of the gradients for the master update.
void StepBuilder::optimizerStep()
{
    TimelineBlock &b = m_tl.addBlock(Stage::OptimizerStep, Phase::OptimizerStep);
    if (stepsInBackward())
        return; // every parameter was stepped, and its gradient freed, in backward
    const TrainingConfig &t = m_in.training;
    const double trainable = m_s.trainable / m_s.state_shard;
    if (!t.offload.optimizer) {
        if (deepSpeedStepsOnGpu(m_in)) {
            deepSpeedMasterGradients(b);
        } else if (isMixedMaster(t.precision)) {
            const int fp32 = tensor("fp32 gradients for the master update",
                                    bytes(4 * trainable),
                                    Component::Temporaries,
                                    false,
                                    m_s.trainable_layer_tensors * m_layers
                                        + m_s.trainable_root_tensors);
            alloc(b, fp32);
            release(b, fp32);
        }
        double temp = 0, parts = 1;
        const char *name = "optimizer working copies";
        switch (t.optimizer) {
        case Optimizer::AdamW: // bitsandbytes' paged AdamW updates tensor by tensor in one kernel
            if (!isDeepSpeed(m_s.sharding) && !isMixedMaster(t.precision)) {
                adamWWorkspace(b);
                zeroGrad(b);
                return;
            }
            break;
        case Optimizer::Lion: // tensor by tensor
        case Optimizer::Adafactor:
            temp = oneTensorStepBytes(t.optimizer, AdamWWorkspace::OneList, m_s.state_bytes)
                   * m_s.largest_trainable;
            break;
        default:
            break;
        }
        if (temp > 0) {
            const int working = tensor(name, bytes(temp), Component::Temporaries, false, parts);
            alloc(b, working);
            release(b, working);
        }
    }
    zeroGrad(b);
}

// DeepSpeed's ZeRO step (deepspeed/runtime/zero/stage3.py and stage_1_and_2.py, step(), read at
// v0.10.0 and 0.19 by helper sessions, stage_1_and_2.py again at 0.19 on 2026-12-07):
//  - ZeRO-3 checks the 16-bit gradient partition for overflow where it does (isinf, then isnan: a
//    bool per element each, one after the other; has_overflow);
//  - the gradient norm makes a float64 copy of one gradient at a time (get_grad_norm_direct): of
//    its partition under ZeRO-3, of a whole parameter's under ZeRO-1/2 (views of whole tensors);
//  - then group by group (ZeRO-3: sub-group by sub-group, sub_group_size) the gradients are
//    flattened (torch.cat: a copy) and cast to the master's dtype: with fp32 masters of 16-bit
//    weights a new fp32 gradient, the 16-bit copy freed after the cast; with masters in the
//    gradients' dtype (fp32 and AMP training, pure bf16's bf16 masters) `.to()` returns the flat
//    copy itself. What the cast returns lives through the in-place update
//    (_prepare_fp32_grad_for_sub_group / step: freed before the next group).
void StepBuilder::deepSpeedMasterGradients(TimelineBlock &b)
{
    const double partition = m_s.trainable / m_s.state_shard;
    const bool zero3 = m_s.sharding == Sharding::Zero3;
    const auto transient = [&](const char *name, double size) {
        const int t = tensor(name, bytes(size), Component::Temporaries, false);
        alloc(b, t);
        release(b, t);
    };
    if (zero3 && deepSpeedZero3ChecksOverflow(m_in.training))
        transient("ZeRO-3 overflow check (isinf, then isnan, of the gradients)", partition);
    const double normed = zero3 ? m_s.largest_trainable / m_s.state_shard
                                : std::min(m_s.largest_trainable, partition);
    transient("gradient norm's float64 copy of one gradient", 8 * normed);
    const double n = m_s.largest_step_group;
    if (!isMixedMaster(m_in.training.precision)) {
        transient("a ZeRO optimizer group's flattened gradients (stepped as they are)",
                  m_s.grad_bytes_per_param * n);
        return;
    }
    const int flat = tensor("a ZeRO optimizer group's flattened 16-bit gradients",
                            bytes(m_s.grad_bytes_per_param * n),
                            Component::Temporaries,
                            false);
    const int fp32 = tensor(zero3 ? "fp32 gradients of one ZeRO-3 sub-group"
                                  : "fp32 gradients for the master update",
                            bytes(4 * n),
                            Component::Temporaries,
                            false);
    alloc(b, flat);
    alloc(b, fp32);
    release(b, flat);
    release(b, fp32);
}

// torch.optim.AdamW's temporaries as the scenario's torch release makes them (model/torch_release.h).
void StepBuilder::adamWWorkspace(TimelineBlock &b)
{
    const AdamWWorkspace kind = membudget::adamWWorkspace(torchRelease(m_in.training.stack));
    if (kind == AdamWWorkspace::PerTensor) {
        // denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps): a square root and its
        // quotient, while the previous tensor's denom stays bound until the loop rebinds it: in a
        // layer 2 x a tensor plus the one before it (gate then up, LoRA's A then B: three times
        // the largest; IA3's down_proj vector after v_proj's); the embedding comes first and
        // lm_head after a norm: two (measured on CPU).
        const double elements = std::max(2 * m_s.largest_trainable, m_s.layer_step_window);
        const int t = tensor("AdamW square root, quotient and the previous denominator",
                             bytes(m_s.trainable_state_bytes * elements),
                             Component::Temporaries,
                             false,
                             2);
        alloc(b, t);
        release(b, t);
        return;
    }
    // One tensor per parameter (a flat parameter per unit when sharded).
    const double parts = m_s.state_shard > 1
                             ? m_layers + 1.0
                             : m_s.trainable_layer_tensors * m_layers + m_s.trainable_root_tensors;
    const double list = m_s.states / m_s.state_shard / 2; // the size of exp_avg_sq
    const int roots = tensor("foreach AdamW sqrt(exp_avg_sq)",
                             bytes(list),
                             Component::Temporaries,
                             false,
                             parts);
    alloc(b, roots);
    if (kind == AdamWWorkspace::TwoLists) {
        const int denom = tensor("foreach AdamW denominators (torch 2.0)",
                                 bytes(list),
                                 Component::Temporaries,
                                 false,
                                 parts);
        alloc(b, denom);
        release(b, denom);
    }
    release(b, roots);
}

// zero_grad(set_to_none=True) frees every .grad (or FSDP's gradient shards); DeepSpeed ZeRO-2 keeps
// its partition buffer.
void StepBuilder::zeroGrad(TimelineBlock &root)
{
    if (m_accumulated >= 0) {
        release(root, m_accumulated);
        if (m_accumulatedLayer >= 0)
            release(m_tl.addBlock(Stage::OptimizerStep, Phase::OptimizerStep, 0, 1, m_layers),
                    m_accumulatedLayer);
        return;
    }
    if (m_partition >= 0) {
        if (partitionsGradientsEachBackward())
            release(root, m_partition);
        return;
    }
    const bool sharded = m_gradShard >= 0;
    for (int g : m_rootShards)
        release(root, g);
    if (!sharded) {
        for (const GraphTimeline *g : {m_head.get(), m_embed.get()})
            for (int t : g->paramGradTensors())
                release(root, t);
    }
    auto layerGrads = [&](const GraphTimeline &g, int first, int repeat) {
        TimelineBlock &b
            = m_tl.addBlock(Stage::OptimizerStep, Phase::OptimizerStep, first, 1, repeat);
        if (sharded)
            release(b, m_gradShard);
        else
            for (int t : g.paramGradTensors())
                release(b, t);
    };
    if (m_firstDiffers) {
        layerGrads(*m_first, 0, 1);
        layerGrads(*m_body, 1, m_layers - 1);
    } else if (sharded || !m_checkpointed) {
        layerGrads(*m_body, 0, m_layers);
    } else { // every N-th layer checkpointed: its .grad tensors are the checkpointed graph's
        for (const LayerRun &run : layerRuns(false)) {
            TimelineBlock &b = m_tl.addBlock(Stage::OptimizerStep,
                                             Phase::OptimizerStep,
                                             run.first,
                                             run.step,
                                             run.repeat);
            for (std::size_t j = 0; j < run.layers.size(); ++j)
                for (int t : run.layers[j]->paramGradTensors())
                    release(b, t, static_cast<int>(j));
        }
    }
}

} // namespace

StepTimeline buildStepTimeline(const EstimateInput &input,
                               const ModelStates &states,
                               const StepGraphs &graphs)
{
    StepTimeline timeline = StepBuilder(input, states, graphs).build();
    shardSequence(timeline,
                  static_cast<double>(
                      std::max<std::int64_t>(1, input.parallelism.context_parallel)));
    return timeline;
}

} // namespace membudget
