// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/op_graph.h"

namespace membudget {

// Adds PyTorch operations to an op graph with what autograd keeps for each, as its derivative
// formulas say (tools/autograd/derivatives.yaml of PyTorch 2.x). Sizes are element counts per
// micro-batch times bytes per element; a value remembers its element size for casts.
class GraphBuilder
{
public:
    explicit GraphBuilder(OpGraph &graph)
        : m_g(graph)
    {}

    OpGraph &graph() { return m_g; }
    const GraphTensor &tensor(int t) const { return m_g.tensors[static_cast<std::size_t>(t)]; }
    SizeExpr elements(int t) const;
    double elementBytes(int t) const { return tensor(t).element_bytes; }

    int input(const char *name, SizeExpr elements, double bytes, bool requiresGrad);
    int shared(const char *name, bool requiresGrad = false);
    // A weight with `gradBytes` bytes of gradient on this GPU when it trains.
    int parameter(const char *name, double gradBytes, bool trainable);

    // x.to(dtype): a new tensor unless the element size is already `bytes`; keeps nothing.
    int cast(int x, double bytes, const char *name);
    // F.linear / matmul: keeps x for the weight's gradient and the weight for x's.
    int matmul(int x, int w, SizeExpr outElements, double outBytes, const char *name);
    // a * b (tensors): keeps each factor for the other's gradient.
    int mul(int a, int b, SizeExpr outElements, double outBytes, const char *name);
    // a + b: keeps nothing; both gradients are the output's gradient itself.
    int add(int a, int b, const char *name);
    // Element-wise with a Python scalar (x * c, x + c) or a reduction like mean: keeps nothing.
    int scalarOp(int x, SizeExpr outElements, double outBytes, const char *name);
    // Element-wise ops whose backward reads their input (pow, silu, gelu) or output (rsqrt, tanh,
    // softmax, log_softmax, exp).
    int keepsInput(int x, SizeExpr outElements, double outBytes, const char *name);
    int keepsOutput(int x, SizeExpr outElements, double outBytes, const char *name);
    // A copy that keeps nothing (contiguous(), cat, index gather): a new tensor of x's size.
    int copy(int x, SizeExpr outElements, double outBytes, const char *name);
    // Autocast's 16-bit copy of weight `w` (`elements` values): cached until autocast exits when
    // the weight is an fp32 leaf that requires a gradient, made anew at each use otherwise
    // (aten/src/ATen/autocast_mode.cpp, cached_cast).
    int autocastWeightCopy(int w, double elements, const char *name);
    // F.dropout in training: the dropped copy and a 1-byte mask (CUDA's fused dropout), which it
    // keeps; p == 0 returns x itself.
    int dropout(int x, double p, const char *name);

    // Ops from `firstOp` to the last added form a recomputation region (RecomputeRegion); returns
    // its index.
    int addRegion(int firstOp);

    // The op just added (to adjust what it keeps or its backward scratch).
    GraphOp &lastOp() { return m_g.ops.back(); }
    // A Python name keeps tensor `t` alive until the op just added has run
    // (GraphTensor::held_through_op).
    void holdThroughLastOp(int t)
    {
        m_g.tensors[static_cast<std::size_t>(t)].held_through_op = static_cast<int>(m_g.ops.size())
                                                                   - 1;
    }

private:
    int value(const char *name, SizeExpr elements, double bytes, bool differentiable = true);

    OpGraph &m_g;
};

} // namespace membudget
