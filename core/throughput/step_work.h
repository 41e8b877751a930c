// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The work of one micro-batch on one GPU, kernel by kernel, timed on a DeviceModel: every matmul of
// the exact architecture (attention and MLP projections, MoE experts, lm_head, LoRA adapters), the
// attention core, the memory-bound element-wise kernels, QLoRA's dequantization, and the number of
// operators the host has to launch. Derivation: docs/throughput-model.md.

#include "model/model_architecture.h"
#include "model/training_options.h"
#include "throughput/device_model.h"

#include <cstdint>

namespace membudget {

struct WorkTally
{
    double matmul = 0;      // seconds in linear layers and lm_head
    double attention = 0;   // seconds in the attention core (s x s)
    double elementwise = 0; // seconds in memory-bound kernels: norms, activations, residuals, loss
    double dequantize = 0;  // seconds dequantizing 4/8-bit weights (QLoRA)
    double flops = 0;       // FLOPs done (all matmuls and the attention core)
    double host_ops = 0;    // operators the host launches

    double gpuSeconds() const { return matmul + attention + elementwise + dequantize; }
    WorkTally &operator+=(const WorkTally &o);
    WorkTally &operator*=(double factor);
};

struct MicroBatchWork
{
    WorkTally forward;
    WorkTally backward;     // gradients (inputs always, weights when trainable)
    WorkTally recompute;    // forward work again under activation checkpointing
    double model_flops = 0; // what the method needs: forward + backward, no recompute

    double gpuSeconds() const
    {
        return forward.gpuSeconds() + backward.gpuSeconds() + recompute.gpuSeconds();
    }
    double hostOps() const { return forward.host_ops + backward.host_ops + recompute.host_ops; }
};

// One training micro-batch (or, for inference, one prefill: forward only) of micro_batch_size x
// sequence_length tokens on a tensor-parallel rank of `tensorParallel`.
MicroBatchWork microBatchWork(const ModelArchitecture &arch,
                              const TrainingConfig &training,
                              std::int64_t tensorParallel,
                              const DeviceModel &device);

// One decoding step of inference: micro_batch_size sequences each add one token to a context of
// `context` tokens (weights and the KV cache are read once per step).
WorkTally decodeStepWork(const ModelArchitecture &arch,
                         const TrainingConfig &training,
                         std::int64_t tensorParallel,
                         std::int64_t context,
                         const DeviceModel &device);

} // namespace membudget
