// SPDX-License-Identifier: GPL-3.0-or-later
#include "throughput/optimizer_traffic.h"

namespace membudget {

double gradientBytes(Precision p)
{
    return (p == Precision::Fp32 || isAmp(p)) ? 4.0 : 2.0;
}

double weightBytes(Precision p)
{
    return (p == Precision::Fp32 || isAmp(p)) ? 4.0 : 2.0;
}

// W = weight, G = gradient, S = one optimizer state, M = fp32 master (mixed-* precisions, where the
// optimizer updates the master copy and writes the 16-bit weight).
//  - torch AdamW, foreach (the default): _multi_tensor_adamw runs one pass per operation over the
//    whole group: weight decay mul_ (W r/w), lerp_ of exp_avg (S r/w, G r), mul_ and addcmul_ of
//    exp_avg_sq (S r/w twice, G r), sqrt, div_ and add_ into a temporary (S r, S w, twice S r/w),
//    addcdiv_ into the weight (W r/w, two S r): 4W + 12S + 2G (torch/optim/adamw.py).
//  - fused AdamW, DeepSpeed FusedAdam, bitsandbytes 8-bit Adam: one kernel reading weight,
//    gradient and states and writing weight and states: 2W + G + 4S.
//  - SGD with momentum, Lion: one state: foreach passes 2W + 2G + 4S; plain SGD 2W + G.
//  - Adafactor: factored second moment (row and column vectors): about 4W + 3G per parameter.
// G is the gradient the kernel reads (DeepSpeed's mixed-precision step reads an fp32 cast).
double optimizerKernelBytes(Optimizer o, Precision p, double G)
{
    const bool mixed = isMixedMaster(p);
    const double W = mixed ? 4.0 + 2.0 / 2 : weightBytes(p); // master r/w plus the 16-bit write
    const double S = (mixed || p == Precision::Fp32 || isAmp(p)) ? 4.0 : 2.0;
    double bytes = 0;
    switch (o) {
    case Optimizer::AdamW:
    case Optimizer::PagedAdamW:
        bytes = 4 * W + 12 * S + 2 * G;
        break;
    case Optimizer::AdamWFused:
        bytes = 2 * W + G + 4 * S;
        break;
    case Optimizer::AdamW8bit:
    case Optimizer::PagedAdamW8bit:
        bytes = 2 * W + G + 4 * 1.0;
        break;
    case Optimizer::Sgd:
        bytes = 2 * W + G;
        break;
    case Optimizer::SgdMomentum:
    case Optimizer::Lion:
        bytes = 2 * W + 2 * G + 4 * S;
        break;
    case Optimizer::Adafactor:
        bytes = 4 * W + 3 * G;
        break;
    }
    return bytes;
}

// The kernel plus clip_grad_norm_ (HF Trainer's default max_grad_norm=1.0): a norm pass and a
// scaling pass, 3G.
double optimizerBytesPerParameter(Optimizer o, Precision p)
{
    const double G = gradientBytes(p);
    return optimizerKernelBytes(o, p, G) + 3 * G;
}

// DeepSpeed's ZeRO step (memory-model.md, "DeepSpeed's step"; stage_1_and_2.py and stage3.py,
// step()), per element of the local partition. In place of clip_grad_norm_: the norm's float64
// copy of the G-byte gradients (G read, 8 written, 8 read by the norm) and unscale_and_clip_grads
// on what the kernel reads (read and written). Before the kernel the flatten (G read and written)
// and, with fp32 masters of 16-bit weights, the cast (G read, 4 written), which the kernel then
// reads. ZeRO-3's overflow check where it runs: isinf and isnan each read G and write a bool, read
// again by the check. A master cloned from weights of its own dtype is copied back into the
// weights after the update (the master read, the weight written).
double deepSpeedStepBytesPerParameter(Optimizer o, Precision p, const DeepSpeedStepCopies &c)
{
    const double G = gradientBytes(p);
    const double read = isMixedMaster(p) ? 4.0 : G; // what the kernel reads
    double bytes = (G + 16) + 2 * G + optimizerKernelBytes(o, p, read) + 2 * read;
    if (isMixedMaster(p))
        bytes += G + 4;
    if (c.overflow_check)
        bytes += 2 * (G + 2);
    if (c.cloned_master_bytes > 0)
        bytes += c.cloned_master_bytes + weightBytes(p);
    return bytes;
}

} // namespace membudget
