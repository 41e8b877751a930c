// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/training_options.h"

namespace membudget {

// Bytes the optimizer step moves through memory per trainable parameter (it is bound by memory, not
// by arithmetic), counting every tensor each kernel reads and writes; gradient clipping included.
double optimizerBytesPerParameter(Optimizer optimizer, Precision precision);

// Bytes of one gradient and of one stored weight, for accumulation and communication.
double gradientBytes(Precision precision);
double weightBytes(Precision precision);

} // namespace membudget
