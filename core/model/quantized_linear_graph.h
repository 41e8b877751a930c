// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/graph_builder.h"
#include "model/graph_precision.h"

namespace membudget {

// x @ w for a weight stored in the precision's quantized format, as that format's kernel runs it
// (weight_format.h): the whole weight dequantized for the matmul (bitsandbytes, HQQ, torchao int8,
// AWQ from 1024 tokens), the input quantized to fp8 (W8A8), or the packed weight read in place.
// `tokens`: rows of x in the scenario's step, which decides bitsandbytes' and AWQ's kernel. Keeps
// only the packed weight; a training backward dequantizes again (its scratch).
int quantizedMatmul(GraphBuilder &b,
                    const GraphPrecision &p,
                    int x,
                    int w,
                    double weightElements,
                    SizeExpr outElements,
                    const char *name,
                    double tokens);

} // namespace membudget
