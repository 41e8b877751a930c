// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

namespace membudget {

// Where the time of one optimizer step goes, per GPU, in seconds. The parts add up to the step.
struct ThroughputBreakdown
{
    double matmul = 0;        // linear layers and lm_head, all micro-batches (recompute included)
    double attention = 0;     // attention core
    double elementwise = 0;   // norms, activations, residuals, rotary, loss: memory-bound kernels
    double dequantize = 0;    // QLoRA: 4-bit weights expanded for every use
    double host_wait = 0;     // the GPU idles while the host launches kernels (small micro-batches)
    double communication = 0; // collectives not hidden behind compute (DDP, ZeRO, FSDP, TP)
    double offload = 0;       // CPU <-> GPU copies and the CPU optimizer step not hidden
    double optimizer = 0;     // the optimizer step, gradient accumulation and clipping on the GPU
    double pipeline_bubble = 0; // a pipeline stage idle while the pipeline fills and drains

    double total() const
    {
        return matmul + attention + elementwise + dequantize + host_wait + communication + offload
               + optimizer + pipeline_bubble;
    }
};

// The modelled speed of a scenario on one GPU type (docs/throughput-model.md).
struct ThroughputEstimate
{
    bool valid = false;
    std::string problem; // why there is no estimate (a GPU preset without speed figures)

    // Training: one optimizer step (micro-batch x accumulation on every GPU). Inference: one prefill
    // of micro_batch_size x sequence_length tokens.
    double step_seconds = 0;
    double micro_batch_seconds = 0; // one forward + backward (training) on one GPU, comm excluded
    double tokens_per_step = 0;     // all GPUs
    double tokens_per_second = 0;   // all GPUs
    double tokens_per_second_per_gpu = 0;
    double model_flops_per_step = 0;     // all GPUs: what the method needs, recomputation excluded
    double peak_flops_per_gpu = 0;       // dense peak in the compute precision
    double mfu = 0;                      // model FLOPs utilisation
    double decode_tokens_per_second = 0; // inference: micro_batch_size sequences, full context
    ThroughputBreakdown breakdown;
};

// A dataset run: examples x tokens per example x epochs, in optimizer steps of the scenario.
struct RunEstimate
{
    bool valid = false;
    double tokens = 0;         // all epochs
    double steps = 0;          // optimizer steps (training) or prefills (inference)
    double run_seconds = 0;    // wall clock
    double gpu_hours = 0;      // run_seconds x GPUs
    double price_per_hour = 0; // USD per GPU-hour used; 0: unknown
    double cost = 0;           // gpu_hours x price; 0 with no price
    bool has_price = false;
};

} // namespace membudget
