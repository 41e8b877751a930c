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

// Which kernel `attention: sdpa` gets on `gpu`. PyTorch puts cuDNN first on sm90 and sm100 when its
// cuDNN is newer than 9.15.0 (aten/src/ATen/native/transformers/cuda/sdp_utils.cpp,
// check_prefer_cudnn_attention), which the wheels' bundled cuDNN is from torch 2.11 (the closing
// comment of huggingface/transformers PR #48163, 2026-08-31); torchtitan from 0.2.0 asks for
// cuDNN first itself (models/common/attention.py, ScaledDotProductAttention, PR #1776). Modelled on
// Hopper only: the presets do not tell sm100 (B200, GB200) from sm120 (RTX 50, RTX PRO), which
// PyTorch leaves on flash.
AttentionKernel sdpaKernel(const EstimateInput &input, const GpuPerformance &gpu);

} // namespace membudget
