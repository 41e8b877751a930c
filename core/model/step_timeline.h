// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/memory_estimate.h"
#include "model/size_expr.h"

#include <cstdint>
#include <vector>

namespace membudget {

// How a tensor of the timeline came about (for names shown to people).
enum class TensorOrigin : std::uint8_t {
    Value,         // an op's output
    Recomputed,    // an op's output made again inside backward (checkpointing)
    Grad,          // the gradient of a value
    GradPart,      // a further contribution to a gradient, added in place
    ParamGrad,     // a weight's gradient (.grad)
    ParamGradPart, // a contribution to an existing .grad
    Workspace,     // scratch of an op's backward
    State,         // weights, master weights, optimizer states, buffers
};

// One kind of tensor of a step; `per_layer` ones exist once per decoder layer.
struct TimelineTensor
{
    const char *name = "";
    SizeExpr size;
    Component component = Component::Temporaries;
    TensorOrigin origin = TensorOrigin::Value;
    bool per_layer = false;
    double copies = 1; // identical tensors it stands for (a layer's weight tensors); size is each
    std::uint8_t stream = 0; // CUDA stream it is allocated on (0: the compute stream)
};

// An allocation or a free. For a per-layer tensor, the layer is the block's current layer plus
// `layer` (relative), or `layer` itself (absolute).
struct TimelineEvent
{
    std::int32_t tensor = 0;
    std::int32_t layer = 0;
    bool alloc = true;
    bool absolute = false;
};

// A run of events, repeated for consecutive layers (identical decoder layers make identical
// events): repetition r works on layer first_layer + r * layer_step.
struct TimelineBlock
{
    Stage stage = Stage::Forward;
    Phase phase = Phase::Forward;
    std::int32_t first_layer = 0;
    std::int32_t layer_step = 1;
    std::int32_t repeat = 1;
    bool decoder_layer = false; // each repetition runs one decoder layer
    std::vector<TimelineEvent> events;
};

// One steady-state step on one GPU (a later step: the optimizer states exist): every allocation and
// free in order, with sizes as functions of micro-batch and sequence length. Built once per
// configuration and evaluated for any (b, s) in microseconds (timeline_peaks.h), or expanded into
// the full event list (timeline_expand.h).
struct StepTimeline
{
    std::vector<TimelineTensor> tensors;
    std::vector<TimelineBlock> blocks;
    std::int32_t layers = 0;
    bool training = true;
    // The optimizer creates its states inside the first step() (torch.optim's `_init_group`,
    // bitsandbytes likewise), after that step's forward and backward have filled the cache: the
    // allocator layout later steps start from (allocator/step_replay.h, firstStep).
    bool lazy_optimizer_states = false;

    int addTensor(const TimelineTensor &t)
    {
        tensors.push_back(t);
        return static_cast<int>(tensors.size()) - 1;
    }
    TimelineBlock &addBlock(
        Stage stage, Phase phase, int firstLayer = 0, int step = 1, int repeat = 1)
    {
        blocks.emplace_back();
        TimelineBlock &b = blocks.back();
        b.stage = stage;
        b.phase = phase;
        b.first_layer = firstLayer;
        b.layer_step = step;
        b.repeat = repeat;
        return b;
    }
};

} // namespace membudget
