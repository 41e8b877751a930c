// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/decoder_layer_graph.h"

#include "model/attention_shape.h"
#include "model/context_parallel.h"
#include "model/dtensor_collective_graph.h"
#include "model/graph_builder.h"
#include "model/graph_precision.h"
#include "model/norm_graph.h"
#include "model/quantized_linear_graph.h"
#include "model/selective_checkpoint_policy.h"
#include "model/stack_profile.h"
#include "model/weight_format.h"

#include <algorithm>

namespace membudget {

namespace {

// Builds the op graph of one layer: transformers' modeling_llama.py (also Mistral, Qwen2, Gemma),
// modeling_gpt2.py, modeling_gpt_bigcode.py, modeling_falcon.py and modeling_mixtral.py, with PEFT's
// LoRA layer (peft/tuners/lora/layer.py) and bitsandbytes' Linear4bit where they apply.
class LayerBuilder
{
public:
    LayerBuilder(const ModelArchitecture &arch,
                 const TrainingConfig &training,
                 const ParameterLayout &layout,
                 TensorParallelPlan tensorParallel)
        : m_b(m_graph)
        , m_arch(arch)
        , m_training(training)
        , m_layout(layout)
        , m_p(graphPrecision(training))
        , m_shape(attentionShape(training))
    {
        m_tp = tensorParallel.ranks();
        m_cp = static_cast<double>(tensorParallel.context_parallel);
        m_seq = tensorParallel.sequenceShare();
        m_h = static_cast<double>(arch.hidden_size);
        m_d = static_cast<double>(arch.head_dim);
        m_a = static_cast<double>(arch.attention_heads) / m_tp;
        m_k = std::max(1.0, static_cast<double>(arch.kv_heads) / m_tp);
        m_i = static_cast<double>(arch.intermediate_size) / m_tp;
        m_llama = isLlamaStyle(arch);
    }

    OpGraph build(bool inputRequiresGrad)
    {
        const int x = m_b.input("layer input", tok(m_h * m_seq), m_p.stream, inputRequiresGrad);
        m_graph.input = x;
        if (m_arch.positions == PositionKind::Rotary) {
            m_cos = m_b.shared("rotary cos");
            m_sin = m_b.shared("rotary sin");
        }
        m_mask = m_b.shared("attention mask");
        m_graph.tensors[static_cast<std::size_t>(m_mask)].element_bytes = m_p.stream;
        m_graph.output = m_arch.parallel_attention ? parallelBlock(x) : sequentialBlock(x);
        const bool opSelective = m_training.checkpointing == Checkpointing::OpSelective;
        if ((m_training.checkpointing == Checkpointing::Full || opSelective) && m_p.train) {
            m_b.addRegion(0);
            if (opSelective)
                markSelectiveSaves(m_graph, m_graph.regions.back());
        }
        return std::move(m_graph);
    }

private:
    // Pre-norm blocks; Gemma-2/3 (four norms) also normalise each block's output before the add.
    // The names of transformers' decoder layer keep tensors past their last reader
    // (modeling_llama.py LlamaDecoderLayer.forward): the caller's `hidden_states` holds the layer's
    // input until the layer returns, and the layer's own holds each norm's output until the
    // attention (MLP) it feeds returns. That shows where nothing else keeps them: without
    // autograd, and in a checkpointed layer's forward.
    int sequentialBlock(int x)
    {
        const bool sandwich = m_arch.norms_per_layer >= 4;
        const int attnIn = gatherSequence(norm(x, "input_layernorm"));
        int attn = attention(attnIn);
        holdThroughLastOp(attnIn);
        attn = scatterSequence(attn);
        if (sandwich)
            attn = norm(attn, "post_attention_layernorm");
        attn = m_b.dropout(attn, m_arch.hidden_dropout, "attention output dropout");
        const int mid = m_b.add(x, attn, "attention residual add");
        const int n2 = norm(mid,
                            sandwich ? "pre_feedforward_layernorm" : "post_attention_layernorm");
        const int n2Full = gatherSequence(n2);
        int mlpOut = m_arch.isMoe() ? moe(n2Full) : mlp(n2Full);
        holdThroughLastOp(n2Full);
        mlpOut = scatterSequence(mlpOut);
        if (sandwich)
            mlpOut = norm(mlpOut, "post_feedforward_layernorm");
        mlpOut = m_b.dropout(mlpOut, m_arch.hidden_dropout, "mlp output dropout");
        const int out = m_b.add(mid, mlpOut, "mlp residual add");
        holdThroughLastOp(x);
        // transformers 4.48 and later: `hidden_states, _ = self.self_attn(...)` keeps eager
        // attention's weights until the layer returns.
        if (m_attnWeights >= 0 && weightsHeldByLayer())
            holdThroughLastOp(m_attnWeights);
        return out;
    }

    void holdThroughLastOp(int t) { m_b.holdThroughLastOp(t); }

    // Falcon / GPT-J: attention and MLP read the same input (Falcon-40B/180B: two norms of it).
    int parallelBlock(int x)
    {
        const int n = gatherSequence(norm(x, "input_layernorm"));
        const int attn = attention(n);
        const int nMlp = m_arch.norms_per_layer >= 2 ? gatherSequence(norm(x, "mlp_layernorm")) : n;
        const int sum = scatterSequence(m_b.add(mlp(nMlp), attn, "attention + mlp"));
        holdThroughLastOp(n);
        holdThroughLastOp(nMlp);
        const int dropped = m_b.dropout(sum, m_arch.hidden_dropout, "output dropout");
        const int out = m_b.add(x, dropped, "residual add");
        holdThroughLastOp(x);
        return out;
    }

    const TensorGroup *group(TensorRole role) const
    {
        for (const TensorGroup &g : m_layout)
            if (g.role == role)
                return &g;
        return nullptr;
    }

    // Elements of one layer's share of every parameter group with this role, on this rank.
    double layerElements(TensorRole role) const
    {
        double n = 0;
        for (const TensorGroup &g : m_layout)
            if (g.role == role)
                n += g.totalElements() / (g.tensor_parallel_split ? m_tp : 1.0);
        return n / static_cast<double>(std::max<std::int64_t>(1, m_arch.layers));
    }

    static SizeExpr tok(double width) { return SizeExpr::perToken(width); }

    int norm(int x, const char *name, double groups = 0);
    int gatherSequence(int x);
    int scatterSequence(int x);
    int amp16(int x);
    int linear(int x, TensorRole role, double dIn, double dOut, unsigned loraBit, const char *name);
    // A linear layer's shape: activation widths per rank, and the stored weight per rank.
    struct LinearShape
    {
        double in = 0, out = 0;    // activation widths on this rank
        double rows = 0, cols = 0; // one weight matrix on this rank (cols split by TP)
        double copies = 1;         // matrices per layer (MoE: the experts)
    };
    int baseMatmul(int x, int w, double weightElements, SizeExpr outElements, const char *name);
    void classifyBaseMatmul(std::size_t firstOp, const char *name, TensorRole role);
    int int8Matmul(int x, int w, double weightElements, SizeExpr outElements, const char *name);
    int float8Matmul(int x, int w, double weightElements, SizeExpr outElements, const char *name);
    int loraBranch(int x, int base, int w, const LinearShape &shape, const char *name);
    int doraTerm(int xd, int base, int w, int A, int B, int loraOut, const LinearShape &shape);
    int ia3Scale(int t, const LinearShape &shape, bool input);
    int attention(int x);
    int cacheEntry(int t, const char *name);
    void trainingCacheEntries(int &k, int &v);
    int cacheCopy(int t, double bytes, const char *name);
    int rotary(int t, const char *name);
    int attentionCore(int q, int k, int v);
    RingAttentionScratch ringScratch(int q, int k, int v) const;
    SmallVector<int, 2> addRingTensors(const RingAttentionScratch &ring);
    int eagerCore(int q, int k, int v);
    int sdpaCore(int q, int k, int v);
    int sdpaBias();
    bool sdpaRepeatsKv() const;
    bool flashUnpads() const;
    int unpadIndices();
    int unpadCopy(int x, int indices, const char *name);
    int mlp(int x);
    int newGelu(int x);
    int moe(int x);

    OpGraph m_graph;
    GraphBuilder m_b;
    const ModelArchitecture &m_arch;
    const TrainingConfig &m_training;
    const ParameterLayout &m_layout;
    GraphPrecision m_p;
    AttentionShape m_shape;
    double m_tp = 1, m_cp = 1, m_seq = 1, m_h = 0, m_d = 0, m_a = 0, m_k = 0, m_i = 0;
    bool m_llama = true;
    int m_cos = -1, m_sin = -1, m_mask = -1;
    int m_attnWeights = -1; // eager attention's probabilities, which the layer returns

    // Whether the decoder layer (GPT-2: the block) keeps eager attention's weights to its end.
    bool weightsHeldByLayer() const
    {
        return m_arch.family == ModelFamily::Gpt2
                   ? gpt2AttentionWeightsHeldByBlock(m_training.stack)
                   : attentionWeightsHeldByLayer(m_training.stack);
    }
};

// A norm with its weight (see norm_graph.h). `groups` > 0: a q/k norm over head_dim (Qwen3, OLMo-2,
// Gemma-3), one statistic per head.
int LayerBuilder::norm(int x, const char *name, double groups)
{
    const bool parametric = m_arch.norm != NormKind::LayerNormNoParams;
    const double perNorm = m_arch.norm == NormKind::LayerNorm ? 2 * m_h : m_h;
    const double gradBytes = (groups > 0 ? m_d : perNorm) * m_p.grad;
    const int w = parametric ? m_b.parameter(name, gradBytes, m_p.train_base) : -1;
    // A q/k norm runs inside the split attention (whole sequence, this rank's heads); the layer's
    // norms run on this rank's share of the sequence.
    const SizeExpr rows = SizeExpr::perToken(groups > 0 ? groups : m_seq);
    return addNorm(m_b, m_arch.norm, x, w, rows, name);
}

// Sequence parallelism: the block's input is all-gathered over the tensor-parallel group into a
// whole-sequence tensor, which the column-parallel matmuls keep for their weight gradients (DTensor
// PrepareModuleInput / ColwiseParallel as torchtitan applies them; Megatron-LM keeps the shard and
// gathers again in backward instead). Its gradient is reduce-scattered back to the shard. Both
// collectives copy on the way (dtensor_collective_graph.h).
int LayerBuilder::gatherSequence(int x)
{
    if (m_seq >= 1)
        return x;
    return allGatherWithCopy(m_b, x, tok(m_h), "sequence-parallel all-gather");
}

// ... and the row-parallel output's partial sums are reduce-scattered to the sequence shard
// (RowwiseParallel(output_layouts=Shard(1))) where tensor parallelism alone all-reduces them.
int LayerBuilder::scatterSequence(int x)
{
    if (m_seq >= 1)
        return x;
    return reduceScatterSequence(m_b, x, tok(m_h * m_seq), "sequence-parallel reduce-scatter");
}

// Autocast: ops on the lower-precision list cast fp32 inputs to 16-bit, a fresh copy per call.
int LayerBuilder::amp16(int x)
{
    return m_p.amp ? m_b.cast(x, 2, "autocast input copy") : x;
}

int LayerBuilder::linear(
    int x, TensorRole role, double dIn, double dOut, unsigned loraBit, const char *name)
{
    const TensorGroup *g = group(role);
    LinearShape shape;
    shape.in = dIn;
    shape.out = dOut;
    shape.rows = g ? static_cast<double>(g->rows) : dIn;
    shape.cols = g ? static_cast<double>(g->cols) / (g->tensor_parallel_split ? m_tp : 1.0) : dOut;
    shape.copies = g ? layerElements(role) / (shape.rows * shape.cols) : 1; // MoE: every expert
    double gradBytes = layerElements(role) * m_p.grad;
    if (role == TensorRole::Output)
        gradBytes += layerElements(TensorRole::Bias) * m_p.grad; // all of a layer's biases
    const int w = m_b.parameter(name, gradBytes, m_p.train_base);
    // PEFT IA3: the feed-forward output projection scales its input, other targets their output.
    const bool ia3 = m_p.ia3 && (loraBit & m_p.ia3_targets) != 0;
    const bool feedforward = role == TensorRole::Down;
    const int in = ia3 && feedforward ? ia3Scale(x, shape, true) : x;
    const SizeExpr outElements = m_b.elements(x) * (dOut / dIn);
    const std::size_t firstOp = m_graph.ops.size();
    const int base = baseMatmul(in, w, shape.rows * shape.cols, outElements, name);
    classifyBaseMatmul(firstOp, name, role);
    if (ia3 && !feedforward)
        return ia3Scale(base, shape, false);
    if (!m_p.lora || (loraBit & m_p.lora_targets) == 0)
        return base;
    return loraBranch(x, base, w, shape, name);
}

// An op-level checkpointing policy counts aten.mm: a linear without a bias, on the stored or the
// dequantized weight (weight_format.h).
void LayerBuilder::classifyBaseMatmul(std::size_t firstOp, const char *name, TensorRole role)
{
    if (!linearRunsAsMatmul(m_p.quantization, m_shape.rows, m_p.train)
        || linearHasBias(m_arch, role))
        return;
    for (std::size_t i = firstOp; i < m_graph.ops.size(); ++i)
        if (m_graph.ops[i].name == name)
            m_graph.ops[i].policy_class = PolicyClass::Matmul;
}

// PEFT IA3 Linear.forward (peft/tuners/ia3/layer.py): scaling = 1 * ia3_l.flatten() (a copy of
// the vector), then x.to(ia3 dtype) * scaling cast back before the base layer, or base(x) * scaling
// cast back after it. The vector trains, so the product keeps the other factor for its gradient,
// and the copy when that factor needs one.
int LayerBuilder::ia3Scale(int t, const LinearShape &shape, bool input)
{
    const double width = input ? shape.in : shape.out;
    const int vec = m_b.parameter("ia3_l", width * shape.copies * m_p.adapter_weight, true);
    const int scaling = m_b.scalarOp(vec,
                                     SizeExpr::constant(width * shape.copies),
                                     m_p.adapter_weight,
                                     "ia3 scaling vector (1 * ia3_l)");
    const double bytes = m_b.elementBytes(t);
    const int src = input ? m_b.cast(t, m_p.adapter_weight, "ia3 input cast") : t;
    const double outBytes = std::max(m_b.elementBytes(src), m_p.adapter_weight);
    const int scaled = m_b.mul(src, scaling, m_b.elements(t), outBytes, "ia3 scaling");
    return m_b.cast(scaled, bytes, "ia3 result cast");
}

int LayerBuilder::baseMatmul(
    int x, int w, double weightElements, SizeExpr outElements, const char *name)
{
    if (m_p.quantization == Quantization::Int8)
        return int8Matmul(x, w, weightElements, outElements, name);
    if (m_p.quantization != Quantization::None)
        return quantizedMatmul(m_b, m_p, x, w, weightElements, outElements, name, m_shape.rows);
    if (m_p.float8)
        return float8Matmul(x, w, weightElements, outElements, name);
    if (m_p.amp) {
        const int xc = amp16(x);
        const int wc = m_b.autocastWeightCopy(w, weightElements, "autocast weight copy");
        return m_b.matmul(xc, wc, outElements, 2, name);
    }
    return m_b.matmul(x, w, outElements, m_p.compute, name);
}

// torchao Float8Linear (torchao/float8/float8_linear.py, matmul_with_hp_or_float8_args; tensorwise
// dynamic scaling): the forward casts the input and the weight to fp8 (e4m3) and multiplies them;
// autograd keeps the 16-bit input and the weight itself, as a plain linear does. Under autocast the
// input is cast to 16-bit first and the fp32 weight straight to fp8 (no autocast weight copy). The
// backward casts the output gradient to e5m2 twice (for the input and the weight gradient), the
// weight and the input to e4m3 again: one byte per element each, alive while it runs.
int LayerBuilder::float8Matmul(
    int x, int w, double weightElements, SizeExpr outElements, const char *name)
{
    const int xc = m_p.amp ? amp16(x) : x;
    GraphTensor casts;
    casts.name = "float8 casts of input and weight";
    casts.size = m_b.elements(xc) + SizeExpr::constant(weightElements);
    casts.element_bytes = 1;
    casts.differentiable = false;
    const int fp8 = m_b.graph().addTensor(casts);
    const int out = m_b.matmul(xc, w, outElements, m_p.amp ? 2 : m_p.compute, name);
    GraphOp &op = m_b.lastOp();
    op.outputs.push_back(fp8); // made with the matmul, gone when it returns
    op.backward_workspace += outElements * 2 + m_b.elements(xc)
                             + SizeExpr::constant(weightElements);
    return out;
}

// bitsandbytes MatMul8bitLt (LLM.int8, bitsandbytes/autograd/_functions.py, 0.45 and later): the
// input is cast to fp16 and quantized row-wise to int8 (transients), the int8 matmul returns the
// input's dtype, and when an input needs a gradient it keeps (CAt, subA, A): the input A itself,
// subA (its outlier columns, data-dependent, not counted) and CAt (only when the weight trains;
// before 0.45 always, an int8 copy of A). Backward dequantizes the weight (CB) in A's dtype.
int LayerBuilder::int8Matmul(
    int x, int w, double weightElements, SizeExpr outElements, const char *name)
{
    const double inBytes = m_b.elementBytes(x);
    const int a16 = m_b.cast(x, 2, "int8 input fp16 copy");
    const int ca = m_b.copy(a16, m_b.elements(x), 1, "int8 quantized input");
    m_b.graph().tensors[static_cast<std::size_t>(ca)].differentiable = false;
    const int out = m_b.matmul(x, w, outElements, inBytes, name);
    GraphOp &op = m_b.lastOp();
    op.inputs.push_back(ca);
    op.saves = {{x, 0}};
    op.backward_workspace = SizeExpr::constant(inBytes * weightElements);
    return out;
}

// PEFT LoRA: result = base(x) + lora_B(lora_A(dropout(x.to(A.dtype)))) * scaling, cast back to the
// base output's dtype. Under autocast lora_A/lora_B cast their inputs like any F.linear: AMP, and
// a Trainer's bf16/fp16 flag on 16-bit weights, whose fp32 adapters (PEFT's default) then save the
// input's 16-bit copy, not its fp32 cast (peft/tuners/lora/layer.py, Linear.forward).
int LayerBuilder::loraBranch(int x, int base, int w, const LinearShape &shape, const char *name)
{
    // Adapter A is in x r, B is r x out (the split dimension stays split under TP), per expert.
    const double r = m_p.lora_rank;
    const double aw = shape.copies * m_p.adapter_weight;
    const int A = m_b.parameter("lora_A", aw * shape.rows * r, true);
    const int B = m_b.parameter("lora_B", aw * r * shape.cols, true);
    const SizeExpr tokens = m_b.elements(x) * (1.0 / shape.in);
    const int xa = m_b.cast(x, m_p.adapter, "lora input cast");
    const int xd = m_b.dropout(xa, m_p.lora_dropout, "lora dropout");
    int a, b;
    if (m_p.adapterAutocast()) {
        const int ca = m_b.autocastWeightCopy(A, shape.rows * r, "lora_A copy");
        const int x16 = m_b.cast(xd, 2, "autocast input copy");
        a = m_b.matmul(x16, ca, tokens * r, 2, "lora_A");
        m_b.lastOp().policy_class = PolicyClass::Matmul;
        const int cb = m_b.autocastWeightCopy(B, r * shape.cols, "lora_B copy");
        b = m_b.matmul(a, cb, tokens * shape.out, 2, "lora_B");
    } else {
        a = m_b.matmul(xd, A, tokens * r, m_p.adapter, "lora_A");
        m_b.lastOp().policy_class = PolicyClass::Matmul;
        b = m_b.matmul(a, B, tokens * shape.out, m_p.adapter, "lora_B");
    }
    m_b.lastOp().policy_class = PolicyClass::Matmul; // lora_B
    const int delta = m_p.dora
                          ? doraTerm(xd, base, w, A, B, b, shape)
                          : m_b.scalarOp(b, m_b.elements(b), m_b.elementBytes(b), "lora scaling");
    const int sum = m_b.add(base, delta, name);
    return m_b.cast(sum, m_b.elementBytes(base), "lora result cast");
}

// DoRA (Liu et al. 2024, arXiv:2402.09353, section 4.3) as PEFT computes it in every forward
// (peft/tuners/lora/dora.py, DoraLinearLayer.forward): lora_weight = B(A(eye(in))).T, the base
// weight cast to the adapter dtype, ||W + scaling * lora_weight|| per output row (detached), then
// (m / norm - 1) * base(x) + m / norm * lora_B(lora_A(x)) * scaling. The identity, lora_weight and
// the weight-sized sums live until the forward returns (lora_weight's graph keeps the identity);
// the products keep base(x) and the LoRA output for the magnitude's gradient. With dropout the
// base output is recomputed from the dropped input with the cast weight.
int LayerBuilder::doraTerm(
    int xd, int base, int w, int A, int B, int loraOut, const LinearShape &shape)
{
    const double in = shape.rows, out = shape.cols, r = m_p.lora_rank;
    const double E = m_p.adapter;
    const int eye = m_b.copy(A, SizeExpr::constant(in * in), E, "dora identity");
    m_b.lastOp().inputs.clear();
    const int aEye = m_b.copy(eye, SizeExpr::constant(in * r), E, "dora lora_A(identity)");
    m_b.lastOp().inputs.push_back(A);
    const int loraWeight = m_b.copy(aEye, SizeExpr::constant(in * out), E, "dora lora_weight");
    m_b.lastOp().inputs.push_back(B);
    for (int t : {eye, aEye, loraWeight})
        m_b.graph().tensors[static_cast<std::size_t>(t)].differentiable = false;
    int weight = w;
    if (m_p.quantization != Quantization::None) // dequantize_module_weight
        weight = m_b.copy(w, SizeExpr::constant(in * out), m_p.dequantized, "dora dequantized");
    const double storage = m_p.quantization != Quantization::None ? m_p.dequantized : m_p.weight;
    const int wc = storage == E ? weight
                                : m_b.copy(weight, SizeExpr::constant(in * out), E, "dora weight");
    const int scaled = m_b.copy(loraWeight, SizeExpr::constant(in * out), E, "dora scaled lora");
    const int sum = m_b.copy(scaled, SizeExpr::constant(in * out), E, "dora W + scaled lora");
    m_b.lastOp().inputs.push_back(wc);
    const int norm = m_b.copy(sum, SizeExpr::constant(out), E, "dora weight norm");
    m_b.graph().tensors[static_cast<std::size_t>(norm)].differentiable = false;
    const int magnitude = m_b.parameter("lora_magnitude_vector",
                                        shape.copies * out * m_p.adapter_weight,
                                        true);
    const int scale = m_b.mul(magnitude, norm, SizeExpr::constant(out), E, "dora m / norm");
    int baseResult = base;
    if (m_p.lora_dropout > 0)
        baseResult = m_b.matmul(xd, wc, m_b.elements(base), E, "dora base on dropped input");
    const int scaleMinus1 = m_b.scalarOp(scale, SizeExpr::constant(out), E, "dora m / norm - 1");
    const double outBytes = std::max(E, m_b.elementBytes(baseResult));
    const int t1 = m_b.mul(scaleMinus1, baseResult, m_b.elements(base), outBytes, "dora base term");
    const int t2 = m_b.mul(scale, loraOut, m_b.elements(loraOut), E, "dora lora term");
    const int t3 = m_b.scalarOp(t2, m_b.elements(t2), E, "dora scaling");
    const int dora = m_b.add(t1, t3, "dora result");
    for (int t : {eye, aEye, loraWeight, scaled, sum})
        m_b.lastOp().inputs.push_back(t); // freed when DoraLinearLayer.forward returns
    if (wc != w)
        m_b.lastOp().inputs.push_back(wc);
    if (weight != w && weight != wc)
        m_b.lastOp().inputs.push_back(weight);
    return dora;
}

int LayerBuilder::attention(int x)
{
    const double qW = m_a * m_d;
    const double kvW = m_k * m_d;
    int q, k, v;
    if (!m_llama) {
        // Fused c_attn / query_key_value: q, k and v are views of one output.
        q = k = v = linear(x,
                           TensorRole::QueryKeyValue,
                           m_h,
                           qW + 2 * kvW,
                           TargetQ | TargetK | TargetV,
                           "qkv projection");
    } else {
        q = linear(x, TensorRole::Query, m_h, qW, TargetQ, "q_proj");
        k = linear(x, TensorRole::Key, m_h, kvW, TargetK, "k_proj");
        v = linear(x, TensorRole::Value, m_h, kvW, TargetV, "v_proj");
    }
    if (m_arch.qk_norm) {
        q = norm(q, "q_norm", m_a);
        k = norm(k, "k_norm", m_k);
    }
    if (m_arch.positions == PositionKind::Rotary && m_llama) {
        const int qProj = q;
        q = rotary(q, "q rotary");
        k = rotary(k, "k rotary");
        holdThroughLastOp(qProj); // apply_rotary_pos_emb's q until both are embedded
    }
    if (!m_p.train) {
        // A static cache, and a dynamic one that copies (transformers 4.56 and later: keys and
        // values apart even from a fused projection), is what attention reads; the others hand
        // this step's keys on. The layer's own keys and values live until update() returns.
        const InferenceConfig &inf = m_training.inference;
        const bool copies = inf.kv_cache == KvCacheKind::Dynamic
                            && inf.kv_cache_dtype == KvCacheDtype::Model
                            && dynamicCacheCopiesPrompt(m_training.stack);
        const int kc = cacheEntry(k, "key cache");
        const int vc = m_llama || copies ? cacheEntry(v, "value cache") : kc;
        holdThroughLastOp(k);
        if (inf.kv_cache == KvCacheKind::Static || copies) {
            k = kc;
            v = vc;
        }
    }
    if (m_p.train && trainingKvCache(m_training))
        trainingCacheEntries(k, v);
    const int core = attentionCore(q, k, v);
    const int out = linear(core, TensorRole::Output, qW, m_h, TargetO, "o_proj");
    holdThroughLastOp(q); // LlamaAttention.forward's query_states
    if (m_p.train) {      // ... and, without a cache, its key_states and value_states
        holdThroughLastOp(k);
        holdThroughLastOp(v);
    }
    if (m_attnWeights >= 0 && !weightsHeldByLayer())
        holdThroughLastOp(m_attnWeights); // the attention's own name, until it returns
    return out;
}

// A training forward's DynamicCache (use_cache on, no full checkpointing): the model output keeps
// each layer's keys and values until the loss is taken (Trainer.compute_loss returns the loss
// alone).
// From transformers 4.56 the cache copies them (DynamicLayer: torch.cat onto an empty tensor) and
// the attention runs on the copies, the layer's own states dying as `key_states` is rebound;
// before, it keeps the states themselves. Where the attention saves these very tensors for
// backward the hold adds nothing; where it saves others (keys and values repeated to every head,
// 16-bit casts of AMP's fp32 rotated keys, flash's unpadded copies) the cache is extra.
void LayerBuilder::trainingCacheEntries(int &k, int &v)
{
    if (dynamicCacheCopiesPrompt(m_training.stack)) {
        k = cacheCopy(k, m_b.elementBytes(k), "key cache (use_cache)");
        v = cacheCopy(v, m_b.elementBytes(v), "value cache (use_cache)");
    }
    for (int t : {k, v})
        m_graph.tensors[static_cast<std::size_t>(t)].hold = Hold::ForwardEnd;
}

// The layer's entry in generate()'s cache (transformers cache_utils.py): DynamicLayer keeps a copy
// of the key (value) states from transformers 4.56 (torch.cat onto an empty tensor), the states
// themselves before (for a fused q/k/v projection, a view that holds its whole output);
// StaticLayer allocates max_cache_len positions at its first update and index_copy_s into them;
// QuantizedLayer quantizes the prompt's states (quanto / HQQ, a scale and zero per group). An fp8
// cache (vLLM, TGI kv_cache_dtype) stores a 1-byte copy.
int LayerBuilder::cacheEntry(int t, const char *name)
{
    const InferenceConfig &inf = m_training.inference;
    const double bytes = inf.kv_cache_dtype == KvCacheDtype::Fp8 ? 1 : m_b.elementBytes(t);
    int c = t;
    if (inf.kv_cache == KvCacheKind::Static) {
        c = m_b.copy(t, m_shape.cache * (m_k * m_d), bytes, name);
    } else if (inf.kv_cache == KvCacheKind::Quantized) {
        const double q = quantizedKvBytesPerElement(inf, m_b.elementBytes(t));
        c = cacheCopy(t, q, name);
    } else if (bytes != m_b.elementBytes(t)
               || (inf.kv_cache == KvCacheKind::Dynamic
                   && dynamicCacheCopiesPrompt(m_training.stack))) {
        c = cacheCopy(t, bytes, name);
    }
    GraphTensor &x = m_graph.tensors[static_cast<std::size_t>(c)];
    x.use = TensorUse::KvCache;
    x.hold = Hold::StepEnd;
    return c;
}

// A cache layer's copy of this step's keys (values), per token: a dynamic cache's torch.cat, a
// cast to the cache's dtype, a quantized store.
int LayerBuilder::cacheCopy(int t, double bytes, const char *name)
{
    return m_b.copy(t, tok(m_k * m_d), bytes, name);
}

// apply_rotary_pos_emb: q * cos + rotate_half(q) * sin, cos/sin in the hidden states' dtype (so an
// fp32 stream under autocast promotes q to fp32). Keeps nothing: cos and sin are not trained.
int LayerBuilder::rotary(int t, const char *name)
{
    const SizeExpr n = m_b.elements(t);
    const double bytes = std::max(m_b.elementBytes(t), m_p.stream);
    const int m1 = m_b.mul(t, m_cos, n, bytes, name);
    const int neg = m_b.scalarOp(t, n * 0.5, m_b.elementBytes(t), "rotate_half neg");
    const int rot = m_b.copy(neg, n, m_b.elementBytes(t), "rotate_half cat");
    m_b.lastOp().inputs.push_back(t);
    const int m2 = m_b.mul(rot, m_sin, n, bytes, name);
    return m_b.add(m1, m2, name);
}

int LayerBuilder::attentionCore(int q, int k, int v)
{
    const bool selective = m_training.checkpointing == Checkpointing::Selective && m_p.train;
    if (selective) {
        // The recomputed core starts from the 16-bit q, k, v that autocast hands the matmuls.
        q = amp16(q);
        k = amp16(k);
        v = amp16(v);
    }
    const int first = static_cast<int>(m_b.graph().ops.size());
    const int out = m_training.attention == Attention::Eager ? eagerCore(q, k, v)
                                                             : sdpaCore(q, k, v);
    if (selective)
        m_b.addRegion(first);
    return out;
}

// HF eager_attention_forward (Llama): repeat_kv copies grouped K/V, q @ k^T * scaling + mask,
// softmax in fp32, cast back to q's dtype, dropout, @ v, transpose + contiguous. GPT-2's _attn:
// softmax in the compute dtype (fp32 under autocast), cast to v's dtype.
int LayerBuilder::eagerCore(int q, int k, int v)
{
    const double groups = m_a / m_k;
    const bool repeat = m_llama && groups > 1;
    const int kr = repeat
                       ? m_b.copy(k, m_b.elements(k) * groups, m_b.elementBytes(k), "repeat_kv k")
                       : k;
    const int vr = repeat
                       ? m_b.copy(v, m_b.elements(v) * groups, m_b.elementBytes(v), "repeat_kv v")
                       : v;
    const SizeExpr scores = m_shape.scores * m_a;
    const double E = m_p.compute;
    const int s = m_b.matmul(amp16(q), amp16(kr), scores, E, "attention scores q @ k^T");
    const int scaled = m_b.scalarOp(s, scores, E, "scores * scaling");
    int masked;
    if (m_llama) {
        masked = m_b.add(scaled, m_mask, "scores + mask");
    } else {
        masked = m_b.scalarOp(scaled, scores, E, "causal where");
    }
    const double softmaxBytes = (m_llama || m_p.amp) ? 4 : E;
    // softmax(x, dtype=float32) on 16-bit scores first converts them to fp32, a copy (ATen
    // SoftMax.cpp softmax: only fp16 on CUDA has a fused kernel); under AMP autocast's fp32 policy
    // makes the same copy.
    const bool pureFp16 = !m_p.amp
                          && (m_training.precision == Precision::Fp16
                              || m_training.precision == Precision::MixedFp16);
    const int smIn = m_b.elementBytes(masked) < softmaxBytes && !pureFp16
                         ? m_b.cast(masked, softmaxBytes, "scores fp32 copy for softmax")
                         : masked;
    const int sm = m_b.keepsOutput(smIn, scores, softmaxBytes, "softmax");
    const double probBytes = m_llama ? m_b.elementBytes(q) : m_b.elementBytes(v);
    int probs = m_b.cast(sm, probBytes, "probabilities cast");
    if (m_llama)
        holdThroughLastOp(masked); // `attn_weights` until softmax(...).to(...) returns
    probs = m_b.dropout(probs, m_arch.attention_dropout, "attention dropout");
    const int o = m_b.matmul(amp16(probs), amp16(vr), tok(m_a * m_d), E, "attention probs @ v");
    const int out = m_b.copy(o, tok(m_a * m_d), E, "attention output transpose");
    // eager_attention_forward's key_states and value_states until it returns; its weights are
    // returned (held by the caller, see sequentialBlock).
    holdThroughLastOp(kr);
    holdThroughLastOp(vr);
    if (m_llama || m_arch.family == ModelFamily::Gpt2)
        m_attnWeights = probs;
    return out;
}

// F.scaled_dot_product_attention (flash / memory-efficient kernels) and FlashAttention-2 (Dao 2023,
// arXiv:2307.08691, section 3.1): keeps q, k, v, the output and an fp32 logsumexp per head and
// token; the backward accumulates dq in fp32. The output is already laid out [b, s, a, d], so the
// transpose + contiguous that follows is free.
int LayerBuilder::sdpaCore(int q, int k, int v)
{
    int qq = amp16(q);
    int kk = amp16(k);
    int vv = amp16(v);
    const int indices = flashUnpads() ? unpadIndices() : -1;
    if (indices >= 0) {
        qq = unpadCopy(qq, indices, "flash unpadded q");
        kk = unpadCopy(kk, indices, "flash unpadded k");
        vv = unpadCopy(vv, indices, "flash unpadded v");
    }
    const double groups = m_a / m_k;
    const bool gqa = m_llama && groups > 1;
    const bool repeat = gqa && sdpaRepeatsKv();
    if (repeat) {
        kk = m_b.copy(kk, m_b.elements(kk) * groups, m_b.elementBytes(kk), "repeat_kv k");
        vv = m_b.copy(vv, m_b.elements(vv) * groups, m_b.elementBytes(vv), "repeat_kv v");
    }
    OpGraph &g = m_b.graph();
    GraphTensor out;
    out.name = "attention output";
    out.size = tok(m_p.compute * m_a * m_d);
    out.element_bytes = m_p.compute;
    const int o = g.addTensor(out);
    GraphTensor lse;
    lse.name = "attention logsumexp";
    lse.size = tok(4 * m_a);
    lse.element_bytes = 4;
    lse.differentiable = false;
    const int l = g.addTensor(lse);
    const int bias = sdpaBias();
    const RingAttentionScratch ring = m_cp > 1 ? ringScratch(qq, kk, vv) : RingAttentionScratch{};
    const SmallVector<int, 2> ringTensors = m_cp > 1 ? addRingTensors(ring) : SmallVector<int, 2>{};
    GraphOp &op = g.addOp(m_training.attention == Attention::Flash ? "flash attention" : "sdpa");
    // SDPA's kernels are on torchtitan's save list; FlashAttention-2's own op is not.
    if (m_training.attention == Attention::Sdpa)
        op.policy_class = PolicyClass::SavedKernel;
    op.inputs = {qq, kk, vv};
    op.outputs = {o, l};
    op.saves = {{qq, -1}, {kk, -1}, {vv, -1}, {o, -1}, {l, -1}};
    if (bias >= 0) {
        // The memory-efficient kernel (flash takes no mask) keeps its bias for the backward
        // (tools/autograd/derivatives.yaml, _scaled_dot_product_efficient_attention).
        op.inputs.push_back(bias);
        op.saves.push_back({bias, -1});
    }
    op.backward_workspace = tok(4 * m_a * m_d);
    // FlashAttention-2's backward with grouped K/V writes dK and dV for every query head, then sums
    // them over the groups (flash_attn csrc/flash_attn/flash_api.cpp, mha_bwd: dk_expanded,
    // dv_expanded); PyTorch's flash kernel is the same code.
    if (gqa && !repeat)
        op.backward_workspace += tok(2 * m_a * m_d * m_p.compute);
    // The ring's forward buffers are made with the op and gone when it returns: nothing reads or
    // keeps them.
    for (int t : ringTensors)
        op.outputs.push_back(t);
    op.backward_workspace += ring.backward;
    return indices >= 0 ? unpadCopy(o, indices, "flash output padded back") : o;
}

// Context parallelism's ring attention (context_parallel.h) over the q, k and v SDPA gets.
RingAttentionScratch LayerBuilder::ringScratch(int q, int k, int v) const
{
    return ringAttentionScratch(m_b.elements(q).per_token,
                                m_b.elements(k).per_token + m_b.elements(v).per_token,
                                m_b.elementBytes(k),
                                m_cp);
}

// Its forward scratch, as temporaries that live while the attention op runs.
SmallVector<int, 2> LayerBuilder::addRingTensors(const RingAttentionScratch &r)
{
    SmallVector<int, 2> out;
    for (const auto &[name, size] :
         {std::pair{"ring attention: gathered and local k, v", r.keys_values},
          std::pair{"ring attention: fp32 output merge", r.merge}}) {
        GraphTensor t;
        t.name = name;
        t.size = size;
        t.element_bytes = 1;
        t.differentiable = false;
        out.push_back(m_b.graph().addTensor(t));
    }
    return out;
}

// transformers' FlashAttention-2 path with a padding mask (modeling_flash_attention_utils.py,
// _flash_attention_forward: _upad_input, flash_attn_varlen_func, pad_input): the layer gathers
// q, k and v of the real tokens into new tensors (index_first_axis), runs the varlen kernel on them,
// which keeps those copies and its output, and scatters the output into a new zero-padded tensor
// (index_put_first_axis) for o_proj. The gathers and scatters keep the layer's int64 token indices
// (_get_unpad_data, one nonzero per layer). Sizes are at the padded length: how many positions are
// padding is not known. Packed rows (position_ids, prepare_fa2_from_position_ids) reach the kernel
// as views of q, k and v.
bool LayerBuilder::flashUnpads() const
{
    return m_training.attention == Attention::Flash
           && m_training.batch_padding == BatchPadding::Padded;
}

int LayerBuilder::unpadIndices()
{
    const int indices = m_b.copy(m_mask, tok(1), 8, "flash unpad indices (nonzero of the mask)");
    m_graph.tensors[static_cast<std::size_t>(indices)].differentiable = false;
    return indices;
}

int LayerBuilder::unpadCopy(int x, int indices, const char *name)
{
    const int out = m_b.copy(x, m_b.elements(x), m_b.elementBytes(x), name);
    GraphOp &op = m_b.lastOp();
    op.inputs.push_back(indices);
    op.saves.push_back({indices, -1});
    return out;
}

// attention_shape.h: sdpaRepeatsKv.
bool LayerBuilder::sdpaRepeatsKv() const
{
    return membudget::sdpaRepeatsKv(m_training);
}

// The mask SDPA attends with, if it gets one: a bool mask becomes an additive one in the query
// dtype at every call (aten/src/ATen/native/transformers/attention.cpp,
// convert_boolean_attn_mask); an additive mask in another dtype is cast by autocast; otherwise
// the shared mask itself (-1: no mask).
int LayerBuilder::sdpaBias()
{
    if (m_training.attention != Attention::Sdpa || !m_shape.mask)
        return -1;
    const double from = m_shape.mask_bool ? 1 : m_p.stream;
    if (!m_shape.mask_bool && from == m_p.compute)
        return m_mask;
    const int bias = m_b.copy(m_mask,
                              m_shape.scores,
                              m_p.compute,
                              m_shape.mask_bool ? "additive mask from the bool mask (SDPA)"
                                                : "mask cast to the compute dtype (autocast)");
    m_graph.tensors[static_cast<std::size_t>(bias)].differentiable = false;
    return bias;
}

int LayerBuilder::mlp(int x)
{
    switch (m_arch.mlp) {
    case MlpKind::GatedSilu:
    case MlpKind::GatedGelu: {
        const int g = linear(x, TensorRole::Gate, m_h, m_i, TargetGate, "gate_proj");
        const int act = m_b.keepsInput(g, m_b.elements(g), m_b.elementBytes(g), "mlp activation");
        const int u = linear(x, TensorRole::Up, m_h, m_i, TargetUp, "up_proj");
        // Type promotion: fp32 halves (an fp32 stream through 4-bit layers) give an fp32 product.
        const double pBytes = std::max(m_b.elementBytes(act), m_b.elementBytes(u));
        const int p = m_b.mul(act, u, m_b.elements(u), pBytes, "act(gate) * up");
        return linear(p, TensorRole::Down, m_i, m_h, TargetDown, "down_proj");
    }
    case MlpKind::Gelu: {
        const int f = linear(x, TensorRole::Up, m_h, m_i, TargetUp, "mlp fc_in");
        const int act = m_b.keepsInput(f, m_b.elements(f), m_b.elementBytes(f), "gelu");
        return linear(act, TensorRole::Down, m_i, m_h, TargetDown, "mlp fc_out");
    }
    case MlpKind::GeluTanhPython: {
        const int f = linear(x, TensorRole::Up, m_h, m_i, TargetUp, "mlp fc_in");
        return linear(newGelu(f), TensorRole::Down, m_i, m_h, TargetDown, "mlp fc_out");
    }
    }
    return x;
}

// GPT-2's NewGELUActivation in Python ops: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
// Autocast runs pow in fp32, which promotes the chain after it.
int LayerBuilder::newGelu(int x)
{
    const SizeExpr n = m_b.elements(x);
    const int xp = m_p.amp ? m_b.cast(x, 4, "autocast fp32 copy") : x;
    const int p3 = m_b.keepsInput(xp, n, m_b.elementBytes(xp), "gelu pow 3");
    const int t1 = m_b.scalarOp(p3, n, m_b.elementBytes(p3), "gelu * 0.044715");
    const int t2 = m_b.add(x, t1, "gelu x + ...");
    const int t3 = m_b.scalarOp(t2, n, m_b.elementBytes(t2), "gelu * sqrt(2/pi)");
    const int th = m_b.keepsOutput(t3, n, m_b.elementBytes(t3), "gelu tanh");
    const int t4 = m_b.scalarOp(th, n, m_b.elementBytes(th), "gelu 1 + tanh");
    const int hx = m_b.scalarOp(x, n, m_b.elementBytes(x), "gelu 0.5 x");
    const double outBytes = std::max(m_b.elementBytes(hx), m_b.elementBytes(t4));
    return m_b.mul(hx, t4, n, outBytes, "gelu product");
}

// Mixtral's sparse MLP: a router, softmax in fp32, and per expert a gathered copy of its tokens run
// through the expert and scaled by the routing weight (kept for the router's gradient). Each token
// visits experts_per_token experts, so sizes are per token times that.
int LayerBuilder::moe(int x)
{
    const double experts = static_cast<double>(m_arch.experts);
    const double topK = static_cast<double>(std::min(m_arch.experts_per_token, m_arch.experts));
    const int logits = linear(x, TensorRole::Router, m_h, experts, 0u, "router");
    const int weights = m_b.keepsOutput(logits, tok(experts), 4, "router softmax");
    const int routed = m_b.copy(x, tok(topK * m_h), m_b.elementBytes(x), "routed tokens");
    const int expertOut = mlp(routed);
    const int scaled = m_b.mul(expertOut,
                               weights,
                               m_b.elements(expertOut),
                               m_p.compute,
                               "routing weight product");
    return m_b.copy(scaled, tok(m_h), m_b.elementBytes(x), "expert index_add");
}

} // namespace

OpGraph decoderLayerGraph(const ModelArchitecture &arch,
                          const TrainingConfig &training,
                          const ParameterLayout &layout,
                          TensorParallelPlan tensorParallel,
                          bool inputRequiresGrad)
{
    return LayerBuilder(arch, training, layout, tensorParallel).build(inputRequiresGrad);
}

} // namespace membudget
