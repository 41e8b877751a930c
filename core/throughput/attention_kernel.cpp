// SPDX-License-Identifier: GPL-3.0-or-later
#include "throughput/attention_kernel.h"

#include "model/torch_release.h"

namespace membudget {

AttentionKernel sdpaKernel(const EstimateInput &in, const GpuPerformance &gpu)
{
    const TrainingConfig &t = in.training;
    if (t.attention != Attention::Sdpa || gpu.architecture != GpuArchitecture::Hopper)
        return AttentionKernel::FlashAttention2;
    // torchtitan names SDPA's backends itself (before 0.2.0: flash first, cuDNN on B200 only).
    const bool cudnn = t.stack.name == Stack::Torchtitan
                           ? stackPrefersCudnnAttention(t.stack)
                           : !(torchRelease(t.stack) < LibraryVersion{2, 11, 0});
    return cudnn ? AttentionKernel::Cudnn : AttentionKernel::FlashAttention2;
}

} // namespace membudget
