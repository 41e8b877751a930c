// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Where a recorded trace's forward, loss, backward and optimizer step are. A snapshot carries no
// phase labels, but each allocation's call stack says who asked for it:
//   optimizer step  a Python frame in a folder named "optim" (torch/optim/adamw.py,
//                   bitsandbytes/optim/...) or in a file whose name contains "optim"
//                   (a hand-written optimizer.py);
//   backward        a C++ frame of autograd's engine or of a generated backward function
//                   (torch::autograd::Engine::..., torch::autograd::generated::...), or the Python
//                   frames of Tensor.backward / torch.autograd.backward (torch/_tensor.py,
//                   torch/autograd/__init__.py, torch/autograd/graph.py);
//   loss            a Python function whose name contains "loss", "cross_entropy" or "nll", or a
//                   file named loss.py or losses.py (torch/nn/modules/loss.py);
//   forward         any other stack with a Python frame.
// Allocations without such a stack (no stack recorded, or C++ frames only: autograd's worker thread
// when only Python stacks are recorded) belong to the phase before them. A step runs forward, loss,
// backward, optimizer step: a phase starts at the first allocation classified as it that comes
// after the phases before it; allocations classified as an earlier phase do not end it (activation
// checkpointing runs forward code inside backward), except that forward after the optimizer step
// starts the next step, where the first step ends.

#include "model/memory_estimate.h"
#include "snapshot/memory_snapshot.h"

#include <cstddef>
#include <vector>

namespace membudget::snapshot {

struct TracePhaseSpan
{
    Stage stage = Stage::Forward; // Forward, Loss, Backward or OptimizerStep
    std::size_t first = 0;        // trace events [first, end) of the device's trace
    std::size_t end = 0;
    std::size_t allocations = 0; // alloc events classified as this stage by their stack
};

struct TracePhases
{
    std::vector<TracePhaseSpan> spans; // in trace order; empty when no stack told anything
    bool more_steps = false;           // forward came again after the optimizer step
    std::size_t allocations = 0;       // alloc events of the device
    std::size_t classified = 0;        // of which had a telling stack

    bool found() const { return !spans.empty(); }
    const TracePhaseSpan *span(Stage stage) const;
};

TracePhases traceStages(const MemorySnapshot &snapshot, int device);

// The phase of the step a trace stage belongs to (loss: forward).
Phase phaseOfTraceStage(Stage stage);

} // namespace membudget::snapshot
