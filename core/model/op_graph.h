// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "base/small_vector.h"
#include "model/size_expr.h"

#include <cstdint>
#include <vector>

namespace membudget {

// What a tensor of an op graph is.
enum class GraphTensorKind : std::uint8_t {
    Value,  // produced by an op of the graph: allocated when that op runs
    Input,  // the hidden states entering the graph: freed by it after their last use
    Shared, // made outside and kept outside (rotary tables, the attention mask): never freed here
    Parameter, // a weight: never allocated by the step; trainable ones get a gradient
};

// What a value is for, which decides the component it counts in.
enum class TensorUse : std::uint8_t {
    Activation, // kept for backward: activations; otherwise a temporary
    WeightCopy, // autocast's 16-bit copy of a weight (temporaries)
    Logits,     // the logits and the loss's fp32 chain
    KvCache,    // inference: keys and values kept for the next tokens
};

// How long a value outlives its last reader, whatever autograd keeps.
enum class Hold : std::uint8_t {
    None,
    ForwardEnd, // until forward returns: autocast's weight cache (cleared when the outermost
                // autocast region exits), the model output's logits and training KV cache
    StepEnd,    // kept by the caller until the step ends (model outputs, the KV cache)
};

// A tensor of an op graph. Sizes are per micro-batch (see SizeExpr).
struct GraphTensor
{
    const char *name = "";
    SizeExpr size;
    double element_bytes = 0; // bytes per element of its dtype (0: not a tensor of elements)
    GraphTensorKind kind = GraphTensorKind::Value;
    TensorUse use = TensorUse::Activation;
    Hold hold = Hold::None;
    bool differentiable = true; // false for masks, integer ids and statistics such as logsumexp
    bool requires_grad = false; // Input, Shared, Parameter: given; Value: derived by the analysis
    SizeExpr grad_size;         // Parameter: bytes of its gradient on this GPU
    bool grad_exists = false; // Parameter: its .grad is already allocated (a tied weight's 2nd use)
    // Op index through which a Python name keeps it alive whatever its last reader, as
    // transformers' modules bind their values (-1: none; see decoder_layer_graph). It shows where
    // nothing else keeps the tensor: without autograd, and in a checkpointed region's forward.
    int held_through_op = -1;
};

// A tensor that an op keeps for its backward. `needs_grad_of` >= 0: kept only when that input of
// the op requires a gradient (autograd's derivative formulas: mm(a, b) keeps a for b's gradient and
// b for a's, tools/autograd/derivatives.yaml); -1: kept whenever the op is recorded.
struct SavedRule
{
    int tensor = -1;
    int needs_grad_of = -1; // index into the op's inputs
};

// What an op-level checkpointing policy sees of an op (selective_checkpoint_policy.h).
enum class PolicyClass : std::uint8_t {
    Other,
    Matmul,      // aten.mm: a linear layer without bias (F.linear on a flattened input)
    SavedKernel, // SDPA's fused attention kernels, reduce_scatter: always saved
};

// One operation, as autograd sees it: it allocates its outputs, may keep tensors for backward, and
// in backward allocates a gradient for every input that requires one (same size as the input).
struct GraphOp
{
    const char *name = "";
    SmallVector<int, 4> inputs;
    SmallVector<int, 4> outputs;
    SmallVector<SavedRule, 6> saves;
    SizeExpr backward_workspace;        // extra scratch held while its backward runs (e.g. fp32 dq)
    std::uint8_t workspace_buffers = 1; // ... as that many equal allocations
    unsigned grad_passthrough = 0;      // bit i: input i's gradient is the output's gradient itself
                                        // (add and views hand it on without a copy)
    int region = -1;                    // index of the recomputation region it belongs to, if any
    PolicyClass policy_class = PolicyClass::Other;
    bool cached = false; // in a region: its outputs are kept from forward and handed back to the
                         // recomputation instead of being made again (op-level selective AC)
};

// A span of consecutive ops that runs without keeping anything in forward and runs again inside
// backward (torch.utils.checkpoint: a whole decoder layer; selective recomputation: the attention
// core, Korthikanti et al. 2022, arXiv:2205.05198, section 5).
struct RecomputeRegion
{
    int first_op = 0;
    int last_op = 0;
};

// The ops of one decoder layer (or of the embedding / head), in execution order.
struct OpGraph
{
    std::vector<GraphTensor> tensors;
    std::vector<GraphOp> ops;
    std::vector<RecomputeRegion> regions;
    int input = -1;  // the hidden states entering (Input), or -1
    int output = -1; // the value leaving the graph (kept after it), or -1
    // The generate() head: the last op of the base model's forward (its final norm), after which
    // the names LlamaModel.forward holds go (see StepBuilder::forward), or -1.
    int model_output_op = -1;

    int addTensor(const GraphTensor &t)
    {
        tensors.push_back(t);
        return static_cast<int>(tensors.size()) - 1;
    }
    int addValue(const char *name, SizeExpr size, bool differentiable = true)
    {
        GraphTensor t;
        t.name = name;
        t.size = size;
        t.differentiable = differentiable;
        return addTensor(t);
    }
    int addParameter(const char *name, SizeExpr gradSize, bool trainable)
    {
        GraphTensor t;
        t.name = name;
        t.kind = GraphTensorKind::Parameter;
        t.requires_grad = trainable;
        t.grad_size = gradSize;
        return addTensor(t);
    }
    int addShared(const char *name, bool requiresGrad = false)
    {
        GraphTensor t;
        t.name = name;
        t.kind = GraphTensorKind::Shared;
        t.requires_grad = requiresGrad;
        return addTensor(t);
    }
    GraphOp &addOp(const char *name)
    {
        ops.emplace_back();
        ops.back().name = name;
        return ops.back();
    }
};

} // namespace membudget
