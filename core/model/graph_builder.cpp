// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/graph_builder.h"

#include <algorithm>

namespace membudget {

SizeExpr GraphBuilder::elements(int t) const
{
    const GraphTensor &x = tensor(t);
    return x.element_bytes > 0 ? x.size * (1.0 / x.element_bytes) : SizeExpr{};
}

int GraphBuilder::value(const char *name, SizeExpr elements, double bytes, bool differentiable)
{
    GraphTensor t;
    t.name = name;
    t.size = elements * bytes;
    t.element_bytes = bytes;
    t.differentiable = differentiable;
    return m_g.addTensor(t);
}

int GraphBuilder::input(const char *name, SizeExpr elements, double bytes, bool requiresGrad)
{
    const int t = value(name, elements, bytes);
    m_g.tensors[static_cast<std::size_t>(t)].kind = GraphTensorKind::Input;
    m_g.tensors[static_cast<std::size_t>(t)].requires_grad = requiresGrad;
    return t;
}

int GraphBuilder::shared(const char *name, bool requiresGrad)
{
    return m_g.addShared(name, requiresGrad);
}

int GraphBuilder::parameter(const char *name, double gradBytes, bool trainable)
{
    return m_g.addParameter(name, SizeExpr::constant(trainable ? gradBytes : 0), trainable);
}

int GraphBuilder::cast(int x, double bytes, const char *name)
{
    if (elementBytes(x) == bytes)
        return x;
    const int out = value(name, elements(x), bytes, tensor(x).differentiable);
    GraphOp &op = m_g.addOp(name);
    op.inputs = {x};
    op.outputs = {out};
    return out;
}

int GraphBuilder::matmul(int x, int w, SizeExpr outElements, double outBytes, const char *name)
{
    const int out = value(name, outElements, outBytes);
    GraphOp &op = m_g.addOp(name);
    op.inputs = {x, w};
    op.outputs = {out};
    op.saves = {{x, 1}, {w, 0}};
    return out;
}

int GraphBuilder::mul(int a, int b, SizeExpr outElements, double outBytes, const char *name)
{
    const int out = value(name, outElements, outBytes);
    GraphOp &op = m_g.addOp(name);
    op.inputs = {a, b};
    op.outputs = {out};
    op.saves = {{a, 1}, {b, 0}};
    return out;
}

int GraphBuilder::add(int a, int b, const char *name)
{
    // Type promotion: bf16 + fp32 is fp32.
    const double bytes = std::max(elementBytes(a), elementBytes(b));
    const int out = value(name, elements(a), bytes);
    GraphOp &op = m_g.addOp(name);
    op.inputs = {a, b};
    op.outputs = {out};
    op.grad_passthrough = 0x3u;
    return out;
}

int GraphBuilder::scalarOp(int x, SizeExpr outElements, double outBytes, const char *name)
{
    const int out = value(name, outElements, outBytes, tensor(x).differentiable);
    GraphOp &op = m_g.addOp(name);
    op.inputs = {x};
    op.outputs = {out};
    return out;
}

int GraphBuilder::keepsInput(int x, SizeExpr outElements, double outBytes, const char *name)
{
    const int out = scalarOp(x, outElements, outBytes, name);
    lastOp().saves = {{x, -1}};
    return out;
}

int GraphBuilder::keepsOutput(int x, SizeExpr outElements, double outBytes, const char *name)
{
    const int out = scalarOp(x, outElements, outBytes, name);
    lastOp().saves = {{out, -1}};
    return out;
}

int GraphBuilder::copy(int x, SizeExpr outElements, double outBytes, const char *name)
{
    return scalarOp(x, outElements, outBytes, name);
}

int GraphBuilder::autocastWeightCopy(int w, double elements, const char *name)
{
    GraphTensor copy;
    copy.name = name;
    copy.size = SizeExpr::constant(2 * elements);
    copy.element_bytes = 2;
    copy.use = TensorUse::WeightCopy;
    copy.hold = tensor(w).requires_grad ? Hold::ForwardEnd : Hold::None;
    const int c = m_g.addTensor(copy);
    GraphOp &op = m_g.addOp(name);
    op.inputs = {w};
    op.outputs = {c};
    return c;
}

int GraphBuilder::addRegion(int firstOp)
{
    const int region = static_cast<int>(m_g.regions.size());
    m_g.regions.push_back({firstOp, static_cast<int>(m_g.ops.size()) - 1});
    for (std::size_t i = static_cast<std::size_t>(firstOp); i < m_g.ops.size(); ++i)
        m_g.ops[i].region = region;
    return region;
}

int GraphBuilder::dropout(int x, double p, const char *name)
{
    if (p <= 0)
        return x;
    const int out = value(name, elements(x), elementBytes(x), tensor(x).differentiable);
    const int mask = value("dropout mask", elements(x), 1, false);
    GraphOp &op = m_g.addOp(name);
    op.inputs = {x};
    op.outputs = {out, mask};
    op.saves = {{mask, -1}};
    return out;
}

} // namespace membudget
