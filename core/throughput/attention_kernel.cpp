// SPDX-License-Identifier: GPL-3.0-or-later
#include "throughput/attention_kernel.h"

#include "model/torch_release.h"

namespace membudget {

bool sdpaPrefersCudnn(ComputeCapability cc)
{
    return (cc.major == 9 || cc.major == 10) && (cc.minor == 0 || cc.minor == 3);
}

AttentionKernel sdpaKernel(const EstimateInput &in, const GpuPerformance &gpu)
{
    const TrainingConfig &t = in.training;
    if (t.attention != Attention::Sdpa || !sdpaPrefersCudnn(gpu.compute_capability))
        return AttentionKernel::FlashAttention2;
    // torchtitan names SDPA's backends itself (stack_profile.h).
    const bool cudnn = t.stack.name == Stack::Torchtitan
                           ? stackPrefersCudnnAttention(t.stack, gpu.compute_capability)
                           : !(torchRelease(t.stack) < LibraryVersion{2, 11, 0});
    return cudnn ? AttentionKernel::Cudnn : AttentionKernel::FlashAttention2;
}

} // namespace membudget
