// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/norm_graph.h"

namespace membudget {

namespace {

int rmsNorm(GraphBuilder &b, int x, int w, bool fp32Weight, SizeExpr rows)
{
    const double inBytes = b.elementBytes(x);
    const SizeExpr n = b.elements(x);
    const int x32 = b.cast(x, 4, "norm fp32 input");
    const int sq = b.keepsInput(x32, n, 4, "norm pow(2)");
    const int var = b.scalarOp(sq, rows, 4, "norm mean");
    const int ve = b.scalarOp(var, rows, 4, "norm + eps");
    const int rs = b.keepsOutput(ve, rows, 4, "norm rsqrt");
    const int y32 = b.mul(x32, rs, n, 4, "norm x * rsqrt");
    if (fp32Weight) {
        const int scaled = w >= 0 ? b.mul(y32, w, n, 4, "norm * (1 + weight)") : y32;
        return b.cast(scaled, inBytes, "norm cast back");
    }
    const int y = b.cast(y32, inBytes, "norm cast back");
    const int out = w >= 0 ? b.mul(w, y, n, inBytes, "norm weight *") : y;
    // LlamaRMSNorm.forward (modeling_llama.py): the names `variance` and `hidden_states` (the
    // normalized fp32 values) keep them until it returns.
    b.holdThroughLastOp(var);
    b.holdThroughLastOp(y32);
    return out;
}

int layerNorm(GraphBuilder &b, int x, int w, SizeExpr rows)
{
    const int y = b.keepsInput(x, b.elements(x), b.elementBytes(x), "layer_norm");
    GraphTensor stats;
    stats.name = "layer_norm mean and rstd";
    stats.size = rows * 8;
    stats.element_bytes = 4;
    stats.differentiable = false;
    const int st = b.graph().addTensor(stats);
    GraphOp &op = b.lastOp();
    if (w >= 0)
        op.inputs.push_back(w);
    op.outputs.push_back(st);
    op.saves.push_back({st, -1});
    return y;
}

} // namespace

int addNorm(GraphBuilder &b, NormKind kind, int x, int weight, SizeExpr rows, const char *)
{
    switch (kind) {
    case NormKind::RmsNorm:
        return rmsNorm(b, x, weight, false, rows);
    case NormKind::RmsNormFp32:
        return rmsNorm(b, x, weight, true, rows);
    case NormKind::LayerNorm:
    case NormKind::LayerNormNoParams:
        return layerNorm(b, x, weight, rows);
    }
    return x;
}

} // namespace membudget
