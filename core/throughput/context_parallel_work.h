// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// What context parallelism (core/model/context_parallel.h) does to the time of a micro-batch: each
// of the cp GPUs sharing a sequence runs 1/cp of its tokens through the linear layers and, with
// load-balanced causal chunks, 1/cp of its attention; ring attention adds kernels and traffic.

#include "model/memory_estimator.h"
#include "throughput/device_model.h"
#include "throughput/step_work.h"

namespace membudget {

// Tokens of a micro-batch on one GPU: b x s, shared by the context-parallel group.
double tokensPerGpu(const EstimateInput &input);

// The share of the whole-sequence `work` one GPU of the context-parallel group does, with the ring
// rounds' kernels and the memory traffic of their fp32 merges and accumulations.
MicroBatchWork contextParallelShare(const MicroBatchWork &work,
                                    const EstimateInput &input,
                                    const DeviceModel &device);

struct RingTraffic
{
    double total = 0;   // seconds of ring collectives per micro-batch
    double exposed = 0; // what attention's compute does not hide
};

// Ring attention's traffic per micro-batch on one GPU, for `work` already shared.
RingTraffic ringAttentionTraffic(const EstimateInput &input,
                                 const MicroBatchWork &work,
                                 double bandwidth);

} // namespace membudget
