// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/activation_model.h"

#include "model/graph_executor.h"
#include "model/graph_precision.h"
#include "model/parameter_layout.h"

#include <algorithm>

namespace membudget {

namespace {

struct Kept
{
    double linear = 0; // bytes per token
    double score = 0;  // bytes per token per position
};

bool isActivation(const GraphTensor &t)
{
    return (t.kind == GraphTensorKind::Value || t.kind == GraphTensorKind::Input)
           && t.use == TensorUse::Activation;
}

// What a graph keeps for backward: activations only (not weight copies, logits or targets).
// `recompute`: what it keeps when its checkpointed layer runs again in backward.
Kept keptBy(const OpGraph &g, const GraphAnalysis &a, bool recompute)
{
    Kept k;
    for (std::size_t t = 0; t < g.tensors.size(); ++t) {
        const GraphTensor &x = g.tensors[t];
        const bool kept = recompute ? a.recompute_saved_count[t] > 0
                                    : a.saved_count[t] > 0 || a.region_kept[t] > 0;
        if (!kept || !isActivation(x))
            continue;
        k.linear += x.size.per_token;
        k.score += x.size.per_token_seq;
    }
    return k;
}

// The loss's live logits-sized bytes per token, at their highest in forward and in backward.
struct LogitsPeaks
{
    double forward = 0;
    double backward = 0;
};

bool isLogits(const GraphTensor &t)
{
    return t.use == TensorUse::Logits && t.element_bytes != 8; // int64 targets count apart
}

double logitsDelta(const OpGraph &g, const GraphEvent &e)
{
    if (e.kind == GraphEventKind::AllocWorkspace || e.kind == GraphEventKind::FreeWorkspace) {
        const GraphOp &op = g.ops[static_cast<std::size_t>(e.tensor)];
        const bool logitsOp = !op.inputs.empty()
                              && isLogits(g.tensors[static_cast<std::size_t>(op.inputs[0])]);
        const double v = logitsOp ? op.backward_workspace.per_token : 0;
        return e.kind == GraphEventKind::AllocWorkspace ? v : -v;
    }
    const GraphTensor &t = g.tensors[static_cast<std::size_t>(e.tensor)];
    if (!isLogits(t) || e.kind == GraphEventKind::AllocParamGrad
        || e.kind == GraphEventKind::AllocParamGradPart
        || e.kind == GraphEventKind::FreeParamGradPart)
        return 0;
    const bool alloc = e.kind == GraphEventKind::AllocValue
                       || e.kind == GraphEventKind::AllocRecomputed
                       || e.kind == GraphEventKind::AllocGrad
                       || e.kind == GraphEventKind::AllocGradPart;
    return alloc ? t.size.per_token : -t.size.per_token;
}

LogitsPeaks logitsPeaks(const OpGraph &head)
{
    const GraphAnalysis a = analyzeGraph(head, true);
    std::vector<GraphEvent> events;
    forwardEvents(head, a, events);
    // When forward returns, the model output (the 16-bit logits) is dropped unless the loss kept it.
    for (std::size_t t = 0; t < head.tensors.size(); ++t)
        if (head.tensors[t].hold == Hold::ForwardEnd && a.saved_count[t] == 0
            && head.tensors[t].kind == GraphTensorKind::Value)
            events.push_back({static_cast<std::int32_t>(t), -1, GraphEventKind::FreeValue});
    const std::size_t forwardCount = events.size();
    backwardEvents(head, a, false, events);
    LogitsPeaks p;
    double live = 0;
    for (std::size_t i = 0; i < events.size(); ++i) {
        live += logitsDelta(head, events[i]);
        (i < forwardCount ? p.forward : p.backward) = std::max(i < forwardCount ? p.forward
                                                                                : p.backward,
                                                               live);
    }
    return p;
}

} // namespace

ActivationProfile activationProfile(const ModelArchitecture &arch,
                                    const TrainingConfig &training,
                                    const StepGraphs &graphs,
                                    TensorParallelPlan tensorParallel)
{
    const GraphPrecision p = graphPrecision(training);
    ActivationProfile out;
    out.compute_bytes = p.compute;
    out.stream_bytes = p.stream;
    const GraphAnalysis body = analyzeGraph(graphs.body, graphs.train);
    // A checkpointed body recomputes its set; with checkpointing on every N-th layer the body is a
    // layer that keeps it.
    const bool opSelective = graphs.train && training.checkpointing == Checkpointing::OpSelective;
    const bool full = (graphs.train && training.checkpointing == Checkpointing::Full
                       && graphs.checkpoint_every == 1)
                      || opSelective;
    const Kept layer = keptBy(graphs.body, body, full);
    out.layer_linear = layer.linear;
    out.layer_score = layer.score;
    // What a checkpointed layer keeps through forward: its input; with an op-level policy also
    // the outputs it saves.
    out.layer_checkpoint = opSelective ? keptBy(graphs.body, body, false).linear
                                       : p.stream * static_cast<double>(arch.hidden_size)
                                             * tensorParallel.sequenceShare();
    if (graphs.first_differs) {
        const Kept first = keptBy(graphs.first, analyzeGraph(graphs.first, graphs.train), full);
        out.first_layer_linear = layer.linear - first.linear;
        out.first_layer_score = layer.score - first.score;
    }
    const Kept embed = keptBy(graphs.embed, analyzeGraph(graphs.embed, graphs.train), false);
    const Kept head = keptBy(graphs.head, analyzeGraph(graphs.head, graphs.train), false);
    out.model_level = embed.linear + head.linear;
    if (arch.positions == PositionKind::Rotary)
        out.model_per_position = 2 * static_cast<double>(arch.head_dim) * p.stream;
    const bool llamaStyle = isLlamaStyle(arch);
    if (llamaStyle && training.attention == Attention::Eager && full)
        out.checkpoint_mask = p.stream;
    if (graphs.train) {
        const double vocab = static_cast<double>(arch.vocab_size) / tensorParallel.ranks();
        const LogitsPeaks lp = logitsPeaks(graphs.head);
        out.logits_forward = lp.forward / vocab;
        out.logits_backward = lp.backward / vocab;
    }
    return out;
}

ActivationProfile activationProfile(const ModelArchitecture &arch,
                                    const TrainingConfig &training,
                                    TensorParallelPlan tensorParallel)
{
    const ParameterLayout layout = parameterLayout(arch);
    return activationProfile(arch,
                             training,
                             stepGraphs(arch, training, layout, tensorParallel),
                             tensorParallel);
}

} // namespace membudget
