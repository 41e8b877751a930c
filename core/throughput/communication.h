// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Data movement between GPUs (DDP, ZeRO, FSDP, tensor parallelism) and between CPU and GPU (offload)
// for one optimizer step, and how much of it hides behind compute.

#include "model/gpu_spec.h"
#include "model/memory_estimator.h"
#include "throughput/step_work.h"

namespace membudget {

struct CommunicationTime
{
    double exposed = 0;         // seconds per step the GPUs wait on collectives
    double offload_exposed = 0; // seconds per step waiting on CPU <-> GPU copies and the CPU step
    double total = 0;           // seconds of collectives per step, hidden or not
};

// Per GPU, for one optimizer step of `input` whose micro-batches take `work` on the GPU.
CommunicationTime communicationTime(const EstimateInput &input,
                                    const GpuPerformance &gpu,
                                    const MicroBatchWork &work);

// Parameters one tensor-parallel rank holds (Megatron layout: projections, embedding and lm_head
// split), and the trainable ones among them.
double rankParameters(const ModelArchitecture &arch, std::int64_t tensorParallel);
double rankTrainableParameters(const EstimateInput &input);

} // namespace membudget
