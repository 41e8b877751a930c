// SPDX-License-Identifier: GPL-3.0-or-later
#include "throughput/device_model.h"

#include "throughput/throughput_constants.h"

#include <algorithm>
#include <cmath>

namespace membudget {

const char *peakTflopsKey(Precision p)
{
    if (p == Precision::Fp32)
        return "fp32_tflops";
    return isFp16(p) ? "fp16_tflops or fp32_tflops" : "bf16_tflops or fp32_tflops";
}

namespace {

// The dense peak PyTorch's matmuls run at. fp32 matmuls use the non-tensor rate: PyTorch has kept
// TF32 off for matmuls by default since 1.12 (torch.backends.cuda.matmul.allow_tf32, "TensorFloat-32
// (TF32) on Ampere (and later) devices" in the CUDA semantics notes). bf16 on a GPU without bf16
// tensor cores (V100, T4) runs at the fp32 rate.
double peakTflops(const GpuPerformance &g, Precision p)
{
    if (p == Precision::Fp32)
        return g.fp32_tflops;
    if (isFp16(p))
        return g.fp16_tflops > 0 ? g.fp16_tflops : g.fp32_tflops;
    return g.bf16_tflops > 0 ? g.bf16_tflops : g.fp32_tflops;
}

} // namespace

DeviceModel::DeviceModel(const GpuPerformance &gpu, Precision precision, AttentionKernel attention)
{
    m_peak = peakTflops(gpu, precision) * 1e12;
    const double matmul = gpu.matmul_efficiency > 0 ? gpu.matmul_efficiency
                                                    : kDefaultMatmulEfficiency;
    const double clock = gpu.power_limited ? kSustainedClockFraction : 1.0;
    m_matmulRate = m_peak * matmul * clock;
    // cuDNN's kernel where SDPA chooses it: Hopper, B200 and GB200 (attention_kernel.h).
    const double cudnn = attention == AttentionKernel::Cudnn ? kCudnnOverFlashAttention2 : 1.0;
    m_attentionRate = m_peak * flashAttentionEfficiency(gpu.architecture) * cudnn * clock;
    m_bandwidth = gpu.memory_bandwidth_gbps * 1e9 * kMemoryEfficiency;
    m_units = gpu.multiprocessors > 0 ? gpu.multiprocessors : kDefaultMultiprocessors;
    m_elementBytes = precision == Precision::Fp32 ? 4 : 2;
    m_fp8Peak = gpu.fp8_tflops * 1e12;
    m_fp32Peak = gpu.fp32_tflops * 1e12;
}

// The matmul efficiency and clock of the 16-bit kernels carried over to fp8 (an assumption: no
// per-GPU fp8 efficiency is published beside the MAMF table's bf16 one).
DeviceModel DeviceModel::float8() const
{
    DeviceModel d = *this;
    if (!hasFloat8() || m_peak <= 0)
        return d;
    d.m_matmulRate = m_matmulRate * m_fp8Peak / m_peak;
    d.m_elementBytes = 1;
    return d;
}

// fp32 matmuls run at the non-tensor rate (see peakTflops) with the same efficiency and clock.
DeviceModel DeviceModel::fp32() const
{
    DeviceModel d = *this;
    if (m_fp32Peak <= 0 || m_peak <= 0)
        return d;
    d.m_matmulRate = m_matmulRate * m_fp32Peak / m_peak;
    d.m_elementBytes = 4;
    return d;
}

// Wave quantization (NVIDIA Deep Learning Performance guide, "Matrix Multiplication Background",
// section "Wave Quantization"): tiles run in waves of one tile per multiprocessor, and a partial last
// wave costs a whole one. Returns the number of waves (fractional only where tiles are plentiful
// enough that the scheduler balances them, i.e. never below the whole count).
double DeviceModel::waves(double tiles) const
{
    if (!(tiles > 0))
        return 0;
    return std::ceil(tiles / m_units - 1e-9);
}

double DeviceModel::matmulSeconds(double m, double n, double k, double count) const
{
    if (!(m > 0 && n > 0 && k > 0 && count > 0) || !usable())
        return 0;
    // cuBLAS picks its tile per shape; the better of a large and a small tile stands for that choice.
    double compute = 0;
    for (double tile : {kMatmulTile, kMatmulTile / 2}) {
        const double tiles = std::ceil(m / tile) * std::ceil(n / tile);
        // Every wave computes full tiles: 2 * tile * tile * k FLOPs per tile (tile quantization).
        const double perTile = 2.0 * tile * tile * k / (m_matmulRate / m_units);
        const double seconds = waves(tiles) * perTile;
        compute = compute > 0 ? std::min(compute, seconds) : seconds;
    }
    const double bytes = m_elementBytes * (m * k + k * n + m * n);
    return count * std::max(compute, bytes / m_bandwidth);
}

double DeviceModel::fusedAttentionSeconds(double flops, double blocks) const
{
    if (!(flops > 0) || !usable() || m_attentionRate <= 0)
        return 0;
    const double b = std::max(1.0, blocks);
    // The same wave rule as matmuls: `blocks` tiles of equal work.
    return flops / m_attentionRate * (waves(b) * m_units / b);
}

double DeviceModel::memorySeconds(double bytes) const
{
    if (!(bytes > 0) || m_bandwidth <= 0)
        return 0;
    return bytes / m_bandwidth;
}

} // namespace membudget
