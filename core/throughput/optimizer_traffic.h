// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/training_options.h"

namespace membudget {

// Bytes the optimizer step moves through memory per trainable parameter (it is bound by memory, not
// by arithmetic), counting every tensor each kernel reads and writes; gradient clipping included.
double optimizerBytesPerParameter(Optimizer optimizer, Precision precision);
// The update kernel's share of it, reading gradients of `gradientBytes` each.
double optimizerKernelBytes(Optimizer optimizer, Precision precision, double gradientBytes);

// What DeepSpeed's ZeRO step adds around its kernel, where it does.
struct DeepSpeedStepCopies
{
    bool overflow_check = false;    // ZeRO-3 checks the gradients for inf and nan
    double cloned_master_bytes = 0; // a master cloned from weights of its dtype, copied back
};
// Bytes DeepSpeed's ZeRO step moves per element of the local partition (its own norm and clipping
// in place of clip_grad_norm_'s).
double deepSpeedStepBytesPerParameter(Optimizer optimizer,
                                      Precision precision,
                                      const DeepSpeedStepCopies &copies);

// Bytes of one gradient and of one stored weight, for accumulation and communication.
double gradientBytes(Precision precision);
double weightBytes(Precision precision);

} // namespace membudget
