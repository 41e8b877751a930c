// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/gpu_spec.h"
#include "model/training_options.h"
#include "throughput/attention_kernel.h"

namespace membudget {

// The GPU preset keys whose peak a step in `precision` runs at ("fp32_tflops" for fp32), for a
// message that names what a preset lacks.
const char *peakTflopsKey(Precision precision);

// How long one kernel takes on one GPU, from the GPU's datasheet figures and a few published
// constants (each cited where it is defined in device_model.cpp). Pure and allocation-free.
class DeviceModel
{
public:
    // `precision` decides which peak the matmuls run at: 16-bit compute for everything but fp32;
    // `attention` which fused kernel the attention core runs on.
    DeviceModel(const GpuPerformance &gpu,
                Precision precision,
                AttentionKernel attention = AttentionKernel::FlashAttention2);

    // False when the GPU lacks the figures the model needs (a user preset without them).
    bool usable() const { return m_peak > 0 && m_bandwidth > 0; }

    // Dense peak FLOP/s in the compute precision (what MFU is measured against).
    double peakFlops() const { return m_peak; }
    // One (m x k) . (k x n) matmul, `count` times: 2mnk FLOPs each at the largest achievable
    // matmul rate, in waves of 128 x 128 output tiles over the multiprocessors, and never faster
    // than reading both operands and writing the result from memory (roofline).
    double matmulSeconds(double m, double n, double k, double count = 1) const;
    // The fused attention kernel (FlashAttention-2 or cuDNN's, as made): `flops` of work in
    // `blocks` independent thread blocks (batch x heads x 128-query tiles).
    double fusedAttentionSeconds(double flops, double blocks) const;
    // Memory-bound work (element-wise kernels, optimizer steps, dequantization).
    double memorySeconds(double bytes) const;

    double memoryBandwidth() const { return m_bandwidth; } // bytes/s the kernels reach
    double bytesPerElement() const { return m_elementBytes; }

    // FP8 tensor cores (torch._scaled_mm): the same GPU with one-byte operands at its dense fp8
    // rate; false where the preset has no fp8 figure (no FP8 tensor cores).
    bool hasFloat8() const { return m_fp8Peak > 0; }
    DeviceModel float8() const;
    // The same GPU running fp32 matmuls (its non-tensor rate, 4-byte operands), whatever the
    // precision it was made for.
    DeviceModel fp32() const;

private:
    double waves(double tiles) const;

    double m_peak = 0;       // FLOP/s, dense, compute precision
    double m_fp8Peak = 0;    // FLOP/s, dense fp8 (0: none)
    double m_fp32Peak = 0;   // FLOP/s, fp32 without tensor cores
    double m_matmulRate = 0; // FLOP/s the largest matmuls reach
    double m_attentionRate = 0;
    double m_bandwidth = 0;    // bytes/s
    double m_units = 0;        // multiprocessors
    double m_elementBytes = 2; // operand size of the matmuls
};

} // namespace membudget
