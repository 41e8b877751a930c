// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The few constants of the throughput model that are not a GPU's datasheet figure. Each says where
// it comes from; the one marked IN-SAMPLE was chosen from published measurements that
// tests/calibration/throughput.yaml also checks against (docs/accuracy.md says which rows).

#include "model/gpu_spec.h"

namespace membudget {

// Largest-matmul throughput over peak for GPUs without a published measurement: 0.80, the H100's
// 80.3% and about the median of the NVIDIA rows (A100 SXM 86.9, GH200 83.8, A100 PCIe 81.1, H100
// 80.3, B300 78.6, B200 77.6) of stas00/ml-engineering's "Maximum Achievable Matmul FLOPS
// comparison table" (compute/accelerator/README.md).
inline constexpr double kDefaultMatmulEfficiency = 0.80;

// Matmuls in a training run keep the GPU at its power limit, where clocks settle below the boost
// clock a short benchmark sees. stas00/ml-engineering (compute/accelerator/benchmarks/README.md,
// "MAMF & MSMF", tables "alone vs all-8 concurrent") measured the maximum sustainable matmul rate at
// the saturated clock, every GPU of the node busy, against the burst rate (MAMF): H200 698.6 vs
// 823.9 TFLOPS (0.848), B200 1426.4 vs 1751.2 (0.815). 0.83 is their mean; it scales the matmul and
// attention rates of data-centre and workstation GPUs, which run at their power limit (a 300 W RTX
// 6000 Ada carries the die a 450 W RTX 4090 does). Consumer cards are not held there by these
// workloads (Answer.AI's RTX 4090s peaked at 400 W of their 450 W in fsdp_qlora
// benchmarks_03_2024.md) and keep their rated boost clock.
inline constexpr double kSustainedClockFraction = 0.83;

// Output tile of a cuBLAS/CUTLASS tensor-core GEMM (kernels named ..._128x128_... are the common
// choice for bf16 on sm80/sm90); the unit of tile and wave quantization in NVIDIA's "Matrix
// Multiplication Background User's Guide".
inline constexpr double kMatmulTile = 128;

// Multiprocessors assumed when a preset does not say (an A100's 108).
inline constexpr double kDefaultMultiprocessors = 108;

// Share of the datasheet memory bandwidth that streaming kernels reach. STREAM-style copy kernels
// measure 85-90% of peak HBM bandwidth on A100 and H100 (e.g. BabelStream results reported by the
// GPU vendors); 0.85 is the lower end.
inline constexpr double kMemoryEfficiency = 0.85;

// Share of the link bandwidth NCCL's collectives reach for large messages ("bus bandwidth" in
// nccl-tests): 195 GB/s of the 300 GB/s per direction measured with nccl-tests on 8 x A100 NVLink
// (li-plus/playground, cuda/nccl.md, sendrecv_perf at 1 GiB).
inline constexpr double kCollectiveEfficiency = 0.65;

// Node-to-node bandwidth per GPU when a preset gives none: one 100 Gb/s link per GPU (12.5 GB/s).
inline constexpr double kDefaultNetworkGbps = 12.5;

// PCIe x16 bandwidth per direction by generation (PCI-SIG: Gen3 8 GT/s, Gen4 16, Gen5 32 per lane,
// 128b/130b encoding): about 16, 32 and 64 GB/s; DMA copies reach about 80% of it.
double pcieGbps(int generation);
inline constexpr double kPcieEfficiency = 0.8;

// Host memory bandwidth for a CPU optimizer step (DeepSpeed CPU Adam streams master weights and
// states through DRAM): 100 GB/s, a two-channel-per-socket server's order of magnitude. An
// assumption, not calibrated: no published measurement in tests/calibration uses optimizer offload.
inline constexpr double kHostMemoryGbps = 100;

// Fused attention kernels reach a smaller share of peak than matmuls. FlashAttention-2 (Dao 2023,
// arXiv:2307.08691, abstract and section 4.1): 50-73% of the theoretical maximum on A100, forward
// and backward together about 60% at head dimension 128 and long sequences; on H100 the same
// kernels reach about 35% (Shah et al. 2024, FlashAttention-3, arXiv:2407.08608, abstract: "only 35%
// utilization"). Other generations: the H100 figure, as no measurement was found.
double flashAttentionEfficiency(GpuArchitecture architecture);

// cuDNN's fused attention (SDPA's cuDNN backend) as a multiple of FlashAttention-2's rate on the
// same GPU: 1.58-1.65x over 512 to 16k tokens, causal, head dimension 128, forward, H100 SXM5
// (Shah et al. 2024, FlashAttention-3, arXiv:2407.08608, figure 5: cuDNN 315-539 TFLOP/s against
// 191-335), so 1.6 at every length. Forward and backward of training shapes measured 1.7-2.3x
// SDPA's flash backend on Hopper (huggingface/transformers PR #48163). Taken for B200 and GB200 as
// well (0.35 x 1.6 = 56% of peak, 1,260 of the B200's 2,250 dense TFLOP/s): FlashAttention-4
// (Zadouri et al. 2026, abstract) reaches 1,613 TFLOP/s on a B200, up to 1.3x cuDNN 9.13, which
// puts cuDNN at 1,240 or more there; no FlashAttention-2 figure on Blackwell was found.
inline constexpr double kCudnnOverFlashAttention2 = 1.6;

// IN-SAMPLE. Host time per PyTorch operator in eager mode (Python, dispatcher, autograd, launch):
// 20 microseconds. At small token counts the GPU waits for the CPU; chosen from Qwen's single-A100
// LoRA runs at 256 tokens (docs/accuracy.md: 19-21 us per operator fit those two rows), where the
// step time barely depends on the sequence.
inline constexpr double kHostSecondsPerOp = 20e-6;

} // namespace membudget
