// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "base/byte_format.h"

#include <cstdint>
#include <string>

namespace membudget {

// How GPUs of one node talk to each other.
// Ethernet: scale-up over on-chip RoCE ports (Intel Gaudi).
enum class Interconnect { Pcie, NvLink, InfinityFabric, Ethernet };

// The GPU generation, which decides what its kernels reach (attention kernels, bf16 support).
enum class GpuArchitecture { Unknown, Volta, Turing, Ampere, Ada, Hopper, Blackwell, Cdna, Rdna };

const char *interconnectName(Interconnect v);
bool parseInterconnect(const std::string &s, Interconnect &v);
extern const char *const kInterconnectNames[4];
const char *gpuArchitectureName(GpuArchitecture v);
bool parseGpuArchitecture(const std::string &s, GpuArchitecture &v);
extern const char *const kGpuArchitectureNames[9];

// NVIDIA's compute capability (the `sm_XY` a kernel is built for): 9.0 for Hopper, 10.0 for B200
// and GB200, 12.0 for the RTX 50 and RTX PRO Blackwell cards (NVIDIA, "CUDA GPUs - Compute
// Capability", developer.nvidia.com/cuda-gpus). 0.0: not an NVIDIA GPU, or not given.
struct ComputeCapability
{
    int major = 0;
    int minor = 0;

    bool known() const { return major > 0; }
    bool operator==(const ComputeCapability &) const = default;
};

// "9.0" from {9, 0}; "" when unknown.
std::string computeCapabilityName(ComputeCapability cc);
// Reads "major.minor" (one or two digits each, as NVIDIA writes them); false for anything else.
bool parseComputeCapability(const std::string &s, ComputeCapability &cc);
// The generation a compute capability belongs to (7.0-7.2 Volta, 7.5 Turing, 8.0-8.7 Ampere, 8.9
// Ada, 9.x Hopper, 10.x-12.x Blackwell); Unknown for anything else.
GpuArchitecture architectureOfComputeCapability(ComputeCapability cc);

// Speeds and feeds for the throughput model (core/throughput). Every figure is the vendor's dense
// (no sparsity) datasheet number; 0 means "not published / unknown". The sources are next to each
// GPU in presets/gpus.yaml.
struct GpuPerformance
{
    GpuArchitecture architecture = GpuArchitecture::Unknown;
    // Where a preset gives it; a Hopper GPU without it is 9.0 (every Hopper part is).
    ComputeCapability compute_capability;
    double bf16_tflops = 0; // tensor cores, FP32 accumulate (what PyTorch uses)
    double fp16_tflops = 0; // tensor cores, FP32 accumulate
    double tf32_tflops = 0;
    double fp32_tflops = 0; // non-tensor (PyTorch's default for fp32 matmuls)
    double fp8_tflops = 0;
    double memory_bandwidth_gbps = 0; // HBM/GDDR, GB/s (10^9 bytes)
    int multiprocessors = 0;          // SMs (NVIDIA) or CUs (AMD)
    // Measured largest-matmul throughput over peak (Maximum Achievable Matmul FLOPS), where published;
    // 0: the model's default.
    double matmul_efficiency = 0;
    Interconnect interconnect = Interconnect::Pcie;
    double interconnect_gbps = 0; // GPU-to-GPU inside a node, per GPU and direction, GB/s
    int pcie_generation = 0;      // 3, 4, 5 (x16 assumed)
    int gpus_per_node = 8;        // GPUs that share the interconnect in the reference system
    double network_gbps = 0;    // node-to-node per GPU and direction in the reference system, GB/s
    bool power_limited = false; // not a consumer card: training holds it at its power limit
    double price_per_hour = 0;  // USD per GPU-hour on demand; 0: no public price given
    std::string price_source;   // where the price comes from, with its date
    std::string sources;        // where the other figures come from

    bool known() const { return memory_bandwidth_gbps > 0 && (bf16_tflops > 0 || fp16_tflops > 0); }
};

struct GpuSpec
{
    std::string id;      // lowercase, hyphenated: "a100-80gb"
    std::string name;    // "NVIDIA A100 80GB"
    std::string vendor;  // "NVIDIA" | "AMD" | ...
    std::string segment; // "consumer" | "workstation" | "datacenter"
    // What one process can use: the total CUDA reports (cudaMemGetInfo, what PyTorch's
    // out-of-memory message calls "total capacity") where a preset gives it (cuda_memory_mib),
    // otherwise the total the driver reports. Every verdict, limit and capacity line uses this.
    std::int64_t memory_bytes = 0;
    // The total the driver reports (nvidia-smi memory.total) when memory_bytes is CUDA's figure:
    // the difference, if any, is the driver's own reserve (none on ROCm); 0 without CUDA's figure.
    std::int64_t driver_total_bytes = 0;
    GpuPerformance performance;

    bool cudaTotalKnown() const { return driver_total_bytes > 0; }
};

// One sentence on where a GPU's capacity comes from and, without CUDA's figure, how far the
// verdict may be off (a tooltip, a listing).
std::string capacityNote(const GpuSpec &gpu, ByteUnit unit);

} // namespace membudget
