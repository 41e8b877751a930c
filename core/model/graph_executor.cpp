// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/graph_executor.h"

#include <algorithm>

namespace membudget {

namespace {

bool isOwned(const GraphTensor &t)
{
    return t.kind == GraphTensorKind::Value || t.kind == GraphTensorKind::Input;
}

// Whether `rule` keeps its tensor, given which inputs of `op` require a gradient (autograd's
// derivative formulas keep a factor only for the other factor's gradient).
bool keeps(const GraphOp &op, const SavedRule &rule, const std::vector<std::uint8_t> &requiresGrad)
{
    if (rule.needs_grad_of < 0)
        return true;
    const int other = op.inputs[static_cast<std::size_t>(rule.needs_grad_of)];
    return requiresGrad[static_cast<std::size_t>(other)] != 0;
}

// Calls f once for each distinct tensor among an op's inputs and outputs.
template<typename F>
void forEachTouched(const GraphOp &op, std::vector<int> &stamp, int mark, F f)
{
    auto visit = [&](int t) {
        if (stamp[static_cast<std::size_t>(t)] == mark)
            return;
        stamp[static_cast<std::size_t>(t)] = mark;
        f(t);
    };
    for (int t : op.inputs)
        visit(t);
    for (int t : op.outputs)
        visit(t);
}

void countRegionInputs(const OpGraph &g, GraphAnalysis &a)
{
    std::vector<int> stamp(g.tensors.size(), -1);
    for (std::size_t r = 0; r < g.regions.size(); ++r) {
        const RecomputeRegion &region = g.regions[r];
        // A checkpoint whose inputs need no gradient keeps nothing (torch.utils.checkpoint).
        bool recorded = false;
        for (int i = region.first_op; i <= region.last_op; ++i)
            recorded = recorded || a.recorded[static_cast<std::size_t>(i)];
        if (!recorded)
            continue;
        for (int i = region.first_op; i <= region.last_op; ++i) {
            const GraphOp &op = g.ops[static_cast<std::size_t>(i)];
            if (op.cached) // an op-level policy keeps these from forward for the recomputation
                for (int o : op.outputs)
                    ++a.region_kept[static_cast<std::size_t>(o)];
            for (int t : op.inputs) {
                const auto ti = static_cast<std::size_t>(t);
                if (!isOwned(g.tensors[ti]) || a.producer[ti] >= region.first_op
                    || stamp[ti] == static_cast<int>(r))
                    continue;
                stamp[ti] = static_cast<int>(r);
                ++a.region_kept[ti];
            }
        }
    }
}

} // namespace

GraphAnalysis analyzeGraph(const OpGraph &g, bool gradEnabled)
{
    const std::size_t n = g.tensors.size();
    GraphAnalysis a;
    a.requires_grad.assign(n, 0);
    a.recorded.assign(g.ops.size(), 0);
    a.saved_count.assign(n, 0);
    a.recompute_saved_count.assign(n, 0);
    a.region_kept.assign(n, 0);
    a.producer.assign(n, -1);
    a.last_use.assign(n, -1);
    for (std::size_t t = 0; t < n; ++t)
        a.requires_grad[t] = gradEnabled && g.tensors[t].kind != GraphTensorKind::Value
                             && g.tensors[t].requires_grad;
    for (std::size_t i = 0; i < g.ops.size(); ++i) {
        const GraphOp &op = g.ops[i];
        const bool recorded = std::any_of(op.inputs.begin(), op.inputs.end(), [&](int t) {
            return a.requires_grad[static_cast<std::size_t>(t)] != 0;
        });
        a.recorded[i] = recorded;
        for (int t : op.inputs)
            a.last_use[static_cast<std::size_t>(t)] = static_cast<int>(i);
        for (int o : op.outputs) {
            const auto oi = static_cast<std::size_t>(o);
            a.producer[oi] = static_cast<int>(i);
            a.requires_grad[oi] = recorded && g.tensors[oi].differentiable;
            a.last_use[oi] = std::max(a.last_use[oi], static_cast<int>(i));
        }
        if (!recorded)
            continue;
        for (const SavedRule &rule : op.saves) {
            const auto s = static_cast<std::size_t>(rule.tensor);
            if (!isOwned(g.tensors[s]) || !keeps(op, rule, a.requires_grad))
                continue;
            if (op.region < 0)
                ++a.saved_count[s];
            else
                ++a.recompute_saved_count[s]; // region inputs too: they stay kept by the region
        }
    }
    countRegionInputs(g, a);
    // What a Python name holds lives at least until the name goes, with autograd on or off: in a
    // checkpointed region's forward and without autograd nothing else keeps it.
    for (std::size_t t = 0; t < n; ++t) {
        const int held = g.tensors[t].held_through_op;
        a.last_use[t] = std::max(a.last_use[t], held);
        if (held >= 0 && a.last_use[t] == held)
            a.name_held.emplace_back(held, static_cast<int>(t));
    }
    std::sort(a.name_held.begin(), a.name_held.end());
    return a;
}

bool keepsInput(const OpGraph &g, const GraphAnalysis &a)
{
    if (g.input < 0)
        return false;
    const auto i = static_cast<std::size_t>(g.input);
    return a.saved_count[i] > 0 || a.region_kept[i] > 0;
}

void forwardEvents(const OpGraph &g, const GraphAnalysis &a, std::vector<GraphEvent> &out)
{
    auto next = a.name_held.begin();
    std::vector<int> stamp(g.tensors.size(), -1);
    for (std::size_t i = 0; i < g.ops.size(); ++i) {
        const GraphOp &op = g.ops[i];
        const auto opIndex = static_cast<std::int32_t>(i);
        for (int o : op.outputs)
            out.push_back({o, opIndex, GraphEventKind::AllocValue});
        const auto release = [&](int t) {
            const auto ti = static_cast<std::size_t>(t);
            if (a.last_use[ti] != static_cast<int>(i) || !isOwned(g.tensors[ti]) || t == g.output
                || a.saved_count[ti] > 0 || a.region_kept[ti] > 0
                || g.tensors[ti].hold != Hold::None)
                return;
            out.push_back({t, opIndex, GraphEventKind::FreeValue});
        };
        forEachTouched(op, stamp, static_cast<int>(i), release);
        for (; next != a.name_held.end() && next->first == static_cast<int>(i); ++next)
            if (stamp[static_cast<std::size_t>(next->second)] != static_cast<int>(i))
                release(next->second);
    }
}

namespace {

// The state of one backward pass over a graph.
class BackwardRun
{
public:
    BackwardRun(const OpGraph &g,
                const GraphAnalysis &a,
                bool paramGradsExist,
                std::vector<GraphEvent> &out)
        : m_g(g)
        , m_a(a)
        , m_paramGradsExist(paramGradsExist)
        , m_out(out)
        , m_owner(g.tensors.size(), -1)
        , m_refs(g.tensors.size(), 0)
        , m_savedLeft(a.saved_count)
        , m_recomputeLeft(a.recompute_saved_count)
        , m_regionLeft(a.region_kept)
        , m_recomputed(g.tensors.size(), 0)
        , m_paramGrad(g.tensors.size(), 0)
        , m_stamp(g.tensors.size(), -1)
    {}

    int run()
    {
        if (m_g.output >= 0 && m_a.requires_grad[static_cast<std::size_t>(m_g.output)]) {
            m_owner[static_cast<std::size_t>(m_g.output)] = m_g.output;
            m_refs[static_cast<std::size_t>(m_g.output)] = 1;
        }
        for (int i = static_cast<int>(m_g.ops.size()) - 1; i >= 0; --i) {
            const GraphOp &op = m_g.ops[static_cast<std::size_t>(i)];
            const RecomputeRegion *region = op.region >= 0
                                                ? &m_g.regions[static_cast<std::size_t>(op.region)]
                                                : nullptr;
            if (region && !recorded(*region))
                region = nullptr; // a checkpoint without gradients keeps and reruns nothing
            if (region && region->last_op == i)
                recompute(*region);
            if (m_a.recorded[static_cast<std::size_t>(i)])
                backwardOp(i);
            if (region && region->first_op == i)
                endRegion(*region);
        }
        return m_g.input >= 0 ? m_owner[static_cast<std::size_t>(m_g.input)] : -1;
    }

private:
    void emit(int tensor, int op, GraphEventKind kind) { m_out.push_back({tensor, op, kind}); }

    bool recorded(const RecomputeRegion &r) const
    {
        for (int i = r.first_op; i <= r.last_op; ++i)
            if (m_a.recorded[static_cast<std::size_t>(i)])
                return true;
        return false;
    }

    bool isRegionOutput(const RecomputeRegion &r, int t) const
    {
        return t == m_g.output || m_a.last_use[static_cast<std::size_t>(t)] > r.last_op;
    }

    // torch.utils.checkpoint: the region's forward runs again with autograd on. An op whose
    // outputs a selective policy kept hands them back (they are the forward's own tensors).
    // A tensor a name keeps to op j (held_through_op) goes after op j here too.
    void recompute(const RecomputeRegion &r)
    {
        auto held = std::lower_bound(m_a.name_held.begin(),
                                     m_a.name_held.end(),
                                     std::pair<int, int>{r.first_op, -1});
        for (int j = r.first_op; j <= r.last_op; ++j) {
            const GraphOp &op = m_g.ops[static_cast<std::size_t>(j)];
            for (int o : op.outputs) {
                if (!op.cached)
                    emit(o, j, GraphEventKind::AllocRecomputed);
                m_recomputed[static_cast<std::size_t>(o)] = op.cached ? KeptFromForward : MadeAgain;
            }
            const auto release = [&](int t) {
                const auto ti = static_cast<std::size_t>(t);
                if (m_a.producer[ti] < r.first_op || !m_recomputed[ti] || isRegionOutput(r, t)
                    || m_recomputeLeft[ti] > 0 || lastUseIn(r, t) != j)
                    return;
                releaseRecomputed(t, j);
            };
            forEachTouched(op, m_stamp, 1000000 + j, release);
            for (; held != m_a.name_held.end() && held->first == j; ++held)
                if (m_stamp[static_cast<std::size_t>(held->second)] != 1000000 + j)
                    release(held->second);
        }
    }

    // Frees a tensor of the recomputation: one made again, or one kept from forward.
    void releaseRecomputed(int t, int op)
    {
        const auto ti = static_cast<std::size_t>(t);
        emit(t,
             op,
             m_recomputed[ti] == KeptFromForward ? GraphEventKind::FreeValue
                                                 : GraphEventKind::FreeRecomputed);
        m_recomputed[ti] = 0;
    }

    int lastUseIn(const RecomputeRegion &r, int t) const
    {
        return std::min(m_a.last_use[static_cast<std::size_t>(t)], r.last_op);
    }

    void endRegion(const RecomputeRegion &r)
    {
        for (int j = r.first_op; j <= r.last_op; ++j) {
            const GraphOp &op = m_g.ops[static_cast<std::size_t>(j)];
            for (int t : op.inputs) {
                const auto ti = static_cast<std::size_t>(t);
                if (!isOwned(m_g.tensors[ti]) || m_a.producer[ti] >= r.first_op
                    || m_regionLeft[ti] <= 0)
                    continue;
                if (--m_regionLeft[ti] == 0 && m_savedLeft[ti] == 0 && t != m_g.output)
                    emit(t, r.first_op, GraphEventKind::FreeValue);
            }
            for (int o : op.outputs)
                if (m_recomputed[static_cast<std::size_t>(o)])
                    releaseRecomputed(o, r.first_op);
        }
    }

    void gradForInput(const GraphOp &op, std::size_t j, int i, std::vector<int> &parts)
    {
        const int t = op.inputs[j];
        const auto ti = static_cast<std::size_t>(t);
        const GraphTensor &tensor = m_g.tensors[ti];
        if (!m_a.requires_grad[ti] || tensor.kind == GraphTensorKind::Shared)
            return;
        if (tensor.kind == GraphTensorKind::Parameter) {
            if (m_paramGradsExist || tensor.grad_exists || m_paramGrad[ti]) {
                emit(t, i, GraphEventKind::AllocParamGradPart);
                parts.push_back(t);
            } else {
                emit(t, i, GraphEventKind::AllocParamGrad);
                m_paramGrad[ti] = 1;
            }
            return;
        }
        const int source = op.outputs.empty() ? -1
                                              : m_owner[static_cast<std::size_t>(op.outputs[0])];
        if ((op.grad_passthrough >> j) & 1u && source >= 0) {
            if (m_owner[ti] < 0) {
                m_owner[ti] = source;
                ++m_refs[static_cast<std::size_t>(source)];
            }
            return;
        }
        if (m_owner[ti] < 0) {
            emit(t, i, GraphEventKind::AllocGrad);
            m_owner[ti] = t;
            m_refs[ti] = 1;
        } else {
            emit(t, i, GraphEventKind::AllocGradPart);
            parts.push_back(t);
        }
    }

    void releaseSaved(const GraphOp &op, int i)
    {
        for (const SavedRule &rule : op.saves) {
            const int s = rule.tensor;
            const auto si = static_cast<std::size_t>(s);
            if (!isOwned(m_g.tensors[si]) || !keeps(op, rule, m_a.requires_grad))
                continue;
            if (op.region < 0) {
                if (--m_savedLeft[si] == 0 && m_regionLeft[si] == 0 && s != m_g.output
                    && m_g.tensors[si].hold != Hold::StepEnd)
                    emit(s, i, GraphEventKind::FreeValue);
                continue;
            }
            const RecomputeRegion &r = m_g.regions[static_cast<std::size_t>(op.region)];
            if (m_a.producer[si] < r.first_op)
                continue; // a region input, kept by the region until its backward ends
            if (--m_recomputeLeft[si] == 0 && m_recomputed[si] && !isRegionOutput(r, s))
                releaseRecomputed(s, i);
        }
    }

    void backwardOp(int i)
    {
        const GraphOp &op = m_g.ops[static_cast<std::size_t>(i)];
        std::vector<int> parts;
        for (std::size_t j = 0; j < op.inputs.size(); ++j) {
            if (std::find(op.inputs.begin(), op.inputs.begin() + static_cast<long>(j), op.inputs[j])
                == op.inputs.begin() + static_cast<long>(j))
                gradForInput(op, j, i, parts);
        }
        const bool workspace = !op.backward_workspace.isZero();
        if (workspace) {
            emit(i, i, GraphEventKind::AllocWorkspace);
            emit(i, i, GraphEventKind::FreeWorkspace);
        }
        for (int t : parts) {
            const bool param = m_g.tensors[static_cast<std::size_t>(t)].kind
                               == GraphTensorKind::Parameter;
            emit(t, i, param ? GraphEventKind::FreeParamGradPart : GraphEventKind::FreeGradPart);
        }
        releaseSaved(op, i);
        for (int o : op.outputs) {
            const auto oi = static_cast<std::size_t>(o);
            const int storage = m_owner[oi];
            if (storage < 0)
                continue;
            m_owner[oi] = -1;
            if (--m_refs[static_cast<std::size_t>(storage)] == 0)
                emit(storage, i, GraphEventKind::FreeGrad);
        }
    }

    // m_recomputed: whether a region's value is present in backward, and how it came.
    static constexpr std::uint8_t MadeAgain = 1;
    static constexpr std::uint8_t KeptFromForward = 2;

    const OpGraph &m_g;
    const GraphAnalysis &m_a;
    const bool m_paramGradsExist;
    std::vector<GraphEvent> &m_out;
    std::vector<int> m_owner; // per tensor: the tensor whose buffer holds its gradient, or -1
    std::vector<int> m_refs;  // per buffer (by allocating tensor): tensors it is the gradient of
    std::vector<int> m_savedLeft, m_recomputeLeft, m_regionLeft;
    std::vector<std::uint8_t> m_recomputed, m_paramGrad;
    std::vector<int> m_stamp;
};

} // namespace

int backwardEvents(const OpGraph &graph,
                   const GraphAnalysis &a,
                   bool paramGradsExist,
                   std::vector<GraphEvent> &out)
{
    return BackwardRun(graph, a, paramGradsExist, out).run();
}

} // namespace membudget
