// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/graph_timeline.h"

namespace membudget {

namespace {

TensorOrigin originOf(int role)
{
    constexpr TensorOrigin origins[] = {TensorOrigin::Value,
                                        TensorOrigin::Recomputed,
                                        TensorOrigin::Grad,
                                        TensorOrigin::GradPart,
                                        TensorOrigin::ParamGrad,
                                        TensorOrigin::ParamGradPart,
                                        TensorOrigin::Workspace};
    return origins[role];
}

} // namespace

GraphTimeline::GraphTimeline(StepTimeline &timeline,
                             const OpGraph &graph,
                             bool gradEnabled,
                             bool perLayer)
    : m_timeline(timeline)
    , m_graph(graph)
    , m_analysis(analyzeGraph(graph, gradEnabled))
    , m_perLayer(perLayer)
{
    for (int r = 0; r < RoleCount; ++r)
        m_tensors[static_cast<std::size_t>(r)].assign(r == Workspace ? graph.ops.size()
                                                                     : graph.tensors.size(),
                                                      -1);
}

bool GraphTimeline::keepsInput() const
{
    return membudget::keepsInput(m_graph, m_analysis);
}

std::vector<int> GraphTimeline::paramGradTensors() const
{
    std::vector<int> out;
    for (int t : m_tensors[ParamGrad])
        if (t >= 0)
            out.push_back(t);
    return out;
}

Component GraphTimeline::valueComponent(int t) const
{
    const auto ti = static_cast<std::size_t>(t);
    switch (m_graph.tensors[ti].use) {
    case TensorUse::Activation:
        return m_analysis.saved_count[ti] > 0 || m_analysis.region_kept[ti] > 0
                   ? Component::Activations
                   : Component::Temporaries;
    case TensorUse::WeightCopy:
        return Component::Temporaries;
    case TensorUse::Logits:
        return Component::Logits;
    case TensorUse::KvCache:
        return Component::KvCache;
    }
    return Component::Temporaries;
}

int GraphTimeline::tensorFor(Role role, int index) const
{
    int &slot = m_tensors[static_cast<std::size_t>(role)][static_cast<std::size_t>(index)];
    if (slot >= 0)
        return slot;
    TimelineTensor t;
    t.origin = originOf(role);
    t.per_layer = m_perLayer;
    t.component = Component::Temporaries;
    if (role == Workspace) {
        const GraphOp &op = m_graph.ops[static_cast<std::size_t>(index)];
        t.name = op.name;
        t.copies = std::max<double>(1, op.workspace_buffers);
        t.size = op.backward_workspace * (1.0 / t.copies);
        const bool logits = !op.inputs.empty()
                            && m_graph.tensors[static_cast<std::size_t>(op.inputs[0])].use
                                   == TensorUse::Logits;
        if (logits)
            t.component = Component::Logits; // a chunked loss's per-chunk gradient chain
    } else {
        const GraphTensor &g = m_graph.tensors[static_cast<std::size_t>(index)];
        t.name = g.name;
        t.size = (role == ParamGrad || role == ParamGradPart) ? g.grad_size : g.size;
        if (role == Value)
            t.component = valueComponent(index);
        else if (role == ParamGrad)
            t.component = Component::Gradients;
        else if (g.use == TensorUse::Logits && role != ParamGradPart)
            t.component = Component::Logits; // the loss's gradient chain counts with the logits
    }
    slot = m_timeline.addTensor(t);
    return slot;
}

TimelineEvent GraphTimeline::map(const GraphEvent &e) const
{
    const bool alloc = e.kind == GraphEventKind::AllocValue
                       || e.kind == GraphEventKind::AllocRecomputed
                       || e.kind == GraphEventKind::AllocGrad
                       || e.kind == GraphEventKind::AllocGradPart
                       || e.kind == GraphEventKind::AllocParamGrad
                       || e.kind == GraphEventKind::AllocParamGradPart
                       || e.kind == GraphEventKind::AllocWorkspace;
    const int t = e.tensor;
    const bool isInput = t == m_graph.input && m_bind.bind_input && m_bind.stream >= 0;
    const bool isOutput = t == m_graph.output && m_bind.bind_output && m_bind.stream >= 0;
    switch (e.kind) {
    case GraphEventKind::AllocValue:
    case GraphEventKind::FreeValue:
        if (isInput)
            return {m_bind.stream, m_bind.input_layer, alloc, m_bind.input_absolute};
        if (isOutput)
            return {m_bind.output_stream >= 0 ? m_bind.output_stream : m_bind.stream,
                    m_bind.output_layer,
                    alloc,
                    m_bind.output_absolute};
        return {tensorFor(Value, t), m_bind.layer, alloc, false};
    case GraphEventKind::AllocRecomputed:
    case GraphEventKind::FreeRecomputed:
        return {tensorFor(Recomputed, t), m_bind.layer, alloc, false};
    case GraphEventKind::AllocGrad:
    case GraphEventKind::FreeGrad:
        if (isInput)
            return {m_bind.grad_stream, m_bind.input_layer, alloc, m_bind.input_absolute};
        if (isOutput)
            return {m_bind.grad_stream,
                    m_bind.output_grad_layer,
                    alloc,
                    m_bind.output_grad_absolute};
        return {tensorFor(Grad, t), m_bind.layer, alloc, false};
    case GraphEventKind::AllocGradPart:
    case GraphEventKind::FreeGradPart:
        return {tensorFor(GradPart, t), m_bind.layer, alloc, false};
    case GraphEventKind::AllocParamGrad:
        return {tensorFor(ParamGrad, t), m_bind.layer, true, false};
    case GraphEventKind::AllocParamGradPart:
    case GraphEventKind::FreeParamGradPart:
        return {tensorFor(ParamGradPart, t), m_bind.layer, alloc, false};
    case GraphEventKind::AllocWorkspace:
    case GraphEventKind::FreeWorkspace:
        return {tensorFor(Workspace, t), m_bind.layer, alloc, false};
    }
    return {};
}

void GraphTimeline::forward(TimelineBlock &block, const TimelineEvent *atModelOutput) const
{
    std::vector<GraphEvent> events;
    forwardEvents(m_graph, m_analysis, events);
    const bool insert = atModelOutput && m_graph.model_output_op >= 0;
    bool inserted = false;
    for (const GraphEvent &e : events) {
        if (insert && !inserted && e.op > m_graph.model_output_op) {
            block.events.push_back(*atModelOutput);
            inserted = true;
        }
        if (m_bind.keep_input && e.kind == GraphEventKind::FreeValue && e.tensor == m_graph.input)
            continue;
        block.events.push_back(map(e));
    }
    if (insert && !inserted)
        block.events.push_back(*atModelOutput);
}

int GraphTimeline::backward(TimelineBlock &block,
                            bool paramGradsExist,
                            std::vector<std::int32_t> *ops) const
{
    std::vector<GraphEvent> events;
    const int inputGrad = backwardEvents(m_graph, m_analysis, paramGradsExist, events);
    for (const GraphEvent &e : events) {
        block.events.push_back(map(e));
        if (ops)
            ops->push_back(e.op);
    }
    return inputGrad;
}

void GraphTimeline::releaseOutput(TimelineBlock &block) const
{
    if (m_graph.output >= 0)
        block.events.push_back(map({m_graph.output, -1, GraphEventKind::FreeValue}));
}

void GraphTimeline::releaseHeld(TimelineBlock &block, Hold hold) const
{
    for (std::size_t t = 0; t < m_graph.tensors.size(); ++t) {
        const GraphTensor &g = m_graph.tensors[t];
        if (g.kind != GraphTensorKind::Value || g.hold != hold || m_analysis.producer[t] < 0)
            continue;
        const bool kept = m_analysis.saved_count[t] > 0 || m_analysis.region_kept[t] > 0;
        if (hold == Hold::ForwardEnd && kept)
            continue; // freed by the op that keeps it, in backward
        block.events.push_back(map({static_cast<std::int32_t>(t), -1, GraphEventKind::FreeValue}));
    }
}

} // namespace membudget
