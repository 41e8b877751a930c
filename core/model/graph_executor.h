// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/op_graph.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace membudget {

// What autograd decides for a graph before it runs: which tensors require a gradient, which ops are
// recorded, how many ops keep each tensor for backward, and each tensor's last reader.
struct GraphAnalysis
{
    std::vector<std::uint8_t> requires_grad; // per tensor
    std::vector<std::uint8_t> recorded;      // per op: some input requires a gradient
    std::vector<int> saved_count;            // per tensor: saves by recorded ops outside regions
    std::vector<int> recompute_saved_count;  // per tensor: saves by recorded ops inside regions
    std::vector<int> region_kept;            // per tensor: regions that keep it (an input, or an
                                             // output an op-level policy keeps from forward)
    std::vector<int> producer;               // per tensor: the op that makes it, or -1
    std::vector<int> last_use;               // per tensor: the last op reading (or making) it
    // (op, tensor), sorted: a tensor a name keeps past its last reader, and the op after which it
    // goes (GraphTensor::held_through_op).
    std::vector<std::pair<int, int>> name_held;
};

// `grad_enabled` false: inference (torch.no_grad), nothing requires a gradient or is kept.
GraphAnalysis analyzeGraph(const OpGraph &graph, bool gradEnabled = true);

// Whether the graph's input stays for backward: saved by an op or kept by a recompute region.
bool keepsInput(const OpGraph &graph, const GraphAnalysis &analysis);

enum class GraphEventKind : std::uint8_t {
    AllocValue, // an op's output (tensor)
    FreeValue,
    AllocRecomputed, // a value made again inside backward by a recomputation region (tensor)
    FreeRecomputed,
    AllocGrad,     // the buffer of an activation gradient (tensor whose gradient it is)
    FreeGrad,      // (tensor that allocated the buffer: for the graph output, made outside)
    AllocGradPart, // a further contribution to a gradient, added in place, then freed (tensor)
    FreeGradPart,
    AllocParamGrad,     // a trainable weight's .grad, kept until the optimizer step (tensor)
    AllocParamGradPart, // a contribution to an existing .grad (accumulation), then freed
    FreeParamGradPart,
    AllocWorkspace, // scratch of an op's backward (op)
    FreeWorkspace,
};

struct GraphEvent
{
    std::int32_t tensor = -1; // or the op, for workspace events
    std::int32_t op = -1;     // the op running when it happens
    GraphEventKind kind = GraphEventKind::AllocValue;
};

// Forward of a graph (with autograd on unless the analysis says otherwise): outputs are allocated
// as ops run; a value is freed after its last reader unless an op keeps it for backward.
void forwardEvents(const OpGraph &graph, const GraphAnalysis &a, std::vector<GraphEvent> &out);

// Backward of a graph whose output gradient was allocated outside: ops in reverse, each allocating
// its inputs' gradients, then releasing what it kept and its output's gradient. Regions run again
// first. `paramGradsExist`: every .grad already exists (a later micro-batch of accumulation).
// Returns how the input's gradient ends up: -1 none, `graph.input` a buffer allocated here, or
// `graph.output` the output gradient's own buffer passed through (residual connections).
int backwardEvents(const OpGraph &graph,
                   const GraphAnalysis &a,
                   bool paramGradsExist,
                   std::vector<GraphEvent> &out);

} // namespace membudget
