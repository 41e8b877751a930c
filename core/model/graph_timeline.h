// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/graph_executor.h"
#include "model/step_timeline.h"

#include <array>
#include <vector>

namespace membudget {

// Where a graph's residual stream sits in the timeline: the per-layer "hidden states" tensor and its
// gradient, and the layers (relative to the block's layer, or absolute) of the graph's input, its
// output and the buffer that holds the output's gradient when backward reaches the graph.
struct StreamBinding
{
    int stream = -1;
    int grad_stream = -1;
    bool bind_input = true;  // the graph's input is the stream (decoder layers, the head)
    bool bind_output = true; // the graph's output is the stream (decoder layers, the embedding)
    int input_layer = 0;
    bool input_absolute = false;
    int output_layer = 1;
    bool output_absolute = false;
    int output_grad_layer = 1;
    bool output_grad_absolute = false;
    int layer = 0; // the layer of the graph's own per-layer tensors, relative to the block's
    int output_stream = -1;  // >= 0: the output is this tensor rather than `stream`
    bool keep_input = false; // the caller frees the bound input later (generate()'s inputs_embeds)
};

// Turns the events of one op graph into timeline events, making one timeline tensor per graph tensor
// and role (value, recomputed value, gradient, ...), named and sized after the graph's.
class GraphTimeline
{
public:
    GraphTimeline(StepTimeline &timeline, const OpGraph &graph, bool gradEnabled, bool perLayer);

    const OpGraph &graph() const { return m_graph; }
    const GraphAnalysis &analysis() const { return m_analysis; }
    void bind(const StreamBinding &binding) { m_bind = binding; }

    // `atModelOutput`, where given, goes right after the graph's model_output_op.
    void forward(TimelineBlock &block, const TimelineEvent *atModelOutput = nullptr) const;
    // Returns how the input's gradient ends up (see backwardEvents). `ops`, when given, receives the
    // graph op running at each event appended to the block.
    int backward(TimelineBlock &block,
                 bool paramGradsExist,
                 std::vector<std::int32_t> *ops = nullptr) const;
    // Frees what autocast's weight cache (or the model output) held past forward, if no op kept it.
    void releaseHeld(TimelineBlock &block, Hold hold) const;
    // Frees the graph's output when it is not the residual stream (the loss, the logits).
    void releaseOutput(TimelineBlock &block) const;
    // The timeline tensor of a graph tensor's gradient (the loss's, allocated by loss.backward()).
    int gradTensor(int graphTensor) const { return tensorFor(Grad, graphTensor); }
    // Whether an op of the graph keeps its input for backward.
    bool keepsInput() const;
    // The timeline tensors of the weights' .grad made by backward so far.
    std::vector<int> paramGradTensors() const;

private:
    enum Role { Value, Recomputed, Grad, GradPart, ParamGrad, ParamGradPart, Workspace, RoleCount };
    int tensorFor(Role role, int graphIndex) const;
    TimelineEvent map(const GraphEvent &e) const;
    Component valueComponent(int t) const;

    StepTimeline &m_timeline;
    const OpGraph &m_graph;
    GraphAnalysis m_analysis;
    bool m_perLayer;
    StreamBinding m_bind;
    mutable std::array<std::vector<int>, RoleCount> m_tensors;
};

} // namespace membudget
