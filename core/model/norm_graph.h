// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/graph_builder.h"
#include "model/model_architecture.h"

namespace membudget {

// A normalisation over the last dimension of x, with `weight` (a parameter, or -1) and `rows`
// statistics (one per token, or one per head for q/k norms):
//  - RmsNorm (HF LlamaRMSNorm): x.to(float32), pow(2).mean(-1), + eps, rsqrt, x * rsqrt, cast back,
//    weight *: keeps the fp32 input, the rsqrt and (for the weight) the cast-back result;
//  - RmsNormFp32 (Gemma): the weight (1 + w) applied in fp32 before the cast;
//  - LayerNorm: torch's layer_norm keeps its input, mean and rstd.
int addNorm(GraphBuilder &b, NormKind kind, int x, int weight, SizeExpr rows, const char *name);

} // namespace membudget
