// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/gpu_spec.h"
#include "model/memory_estimator.h"

namespace membudget {

// The fused kernel a training step's attention core runs on.
enum class AttentionKernel {
    FlashAttention2, // flash-attn's FlashAttention-2, or SDPA's flash backend (the same kernels)
    Cudnn,           // SDPA's cuDNN backend
};

// Which kernel `attention: sdpa` gets on `gpu`. PyTorch puts cuDNN first on compute capability
// 9.0, 10.0 and 10.3 (Hopper; B200 and GB200; B300) when its cuDNN is newer than 9.15.0
// (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp, check_prefer_cudnn_attention: major 9
// or 10, minor 0 or 3), which the wheels' bundled cuDNN is from torch 2.11 (the closing comment of
// huggingface/transformers PR #48163, 2026-08-31); torchtitan from 0.2.0 asks for cuDNN first
// itself (models/common/attention.py, ScaledDotProductAttention, PR #1776) on every GPU, but
// cuDNN's rate over FlashAttention-2 is known only for those PyTorch prefers it on, so elsewhere
// the model keeps FlashAttention-2's rate. The RTX 50 and RTX PRO Blackwell cards (12.0) stay on
// flash; so does a GPU whose compute capability is not known (a user preset without it, other
// than Hopper).
bool sdpaPrefersCudnn(ComputeCapability cc);
AttentionKernel sdpaKernel(const EstimateInput &input, const GpuPerformance &gpu);

} // namespace membudget
