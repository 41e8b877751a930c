// SPDX-License-Identifier: GPL-3.0-or-later
#include "throughput/step_work.h"

#include "model/graph_precision.h"
#include "model/parameter_layout.h"
#include "model/selective_checkpoint_policy.h"
#include "model/step_graphs.h"
#include "model/weight_format.h"
#include "throughput/throughput_constants.h"

#include <algorithm>
#include <cmath>

namespace membudget {

namespace {

// Bytes one token moves through a LoRA adapter's element-wise ops (PEFT lora/layer.py,
// Linear.forward): the input's cast to the adapter dtype (and under autocast back to 16-bit for
// lora_A), the scale, the addition to the base output (type promotion), the cast back to its dtype.
double adapterCastBytes(const GraphPrecision &gp, double in, double out)
{
    const double x = gp.stream, base = gp.compute, a = gp.adapter;
    double bytes = x != a ? (x + a) * in : 0;
    const bool autocast = gp.adapterAutocast();
    if (autocast && a != 2)
        bytes += (a + 2) * in;
    const double o = autocast ? 2 : a;       // lora_B's output
    const double sum = std::max(o, base);    // base(x) + delta
    bytes += (2 * o + base + o + sum) * out; // scale (read, write), add (read two, write)
    if (sum != base)
        bytes += (sum + base) * out;
    return bytes;
}

} // namespace

WorkTally &WorkTally::operator+=(const WorkTally &o)
{
    matmul += o.matmul;
    attention += o.attention;
    elementwise += o.elementwise;
    dequantize += o.dequantize;
    flops += o.flops;
    host_ops += o.host_ops;
    return *this;
}

WorkTally &WorkTally::operator*=(double factor)
{
    matmul *= factor;
    attention *= factor;
    elementwise *= factor;
    dequantize *= factor;
    flops *= factor;
    host_ops *= factor;
    return *this;
}

namespace {

// Bytes of the compute dtype (E) and of the residual stream (R; fp32 under AMP and in fp32), as in
// the memory model (docs/memory-model.md).
double computeBytes(Precision p)
{
    return p == Precision::Fp32 ? 4.0 : 2.0;
}

double streamBytes(Precision p)
{
    return (p == Precision::Fp32 || isAmp(p)) ? 4.0 : 2.0;
}

// Bytes per weight as stored: NF4 4 bits + an fp32 absmax per 64 (double quantization: an 8-bit
// absmax per 64 and an fp32 one per 256 of those); LLM.int8 8 bits + a row scale (QLoRA, Dettmers et
// al. 2023, section 3; bitsandbytes functional.py).
double storedBytesPerWeight(Quantization q)
{
    switch (q) {
    case Quantization::Nf4:
        return 0.5 + 4.0 / 64;
    case Quantization::Nf4Double:
        return 0.5 + 1.0 / 64 + 4.0 / (64 * 256);
    case Quantization::Int8:
        return 1.0;
    case Quantization::None:
        return 0;
    default: // the other formats' layouts (model/weight_format.cpp), for a 4096 x 4096 matrix
        return quantizedBitsPerWeight(q, QuantizationOptions{}, 4096, 4096) / 8;
    }
}

bool isColumnParallel(TensorRole role)
{
    return role != TensorRole::Output && role != TensorRole::Down;
}

bool isExpertMatrix(const ModelArchitecture &arch, TensorRole role)
{
    return arch.isMoe()
           && (role == TensorRole::Gate || role == TensorRole::Up || role == TensorRole::Down);
}

struct Elementwise
{
    double bytes = 0;       // per token
    double score_bytes = 0; // per token and per position of the sequence (eager attention)
    double ops = 0;         // operators per layer (or per model for model-level costs)
};

// Bytes one norm over `width` values moves per token. Hugging Face's RMSNorm is a chain of eager
// operators (to(float32), pow, mean, add, rsqrt, mul, to(dtype), weight mul: modeling_llama.py,
// LlamaRMSNorm.forward), each reading and writing fp32 values; torch's LayerNorm is one fused kernel
// (read the input, write the output; fp32 output under autocast).
Elementwise normCost(NormKind norm, double width, Precision p)
{
    const double E = computeBytes(p), R = streamBytes(p);
    if (norm == NormKind::RmsNorm || norm == NormKind::RmsNormFp32)
        return {(R + 32 + 3 * E) * width, 0, 8};
    return {(R + (isAmp(p) ? 4.0 : E)) * width, 0, 1};
}

// Element-wise kernels of one decoder layer in forward, per token (a tensor-parallel rank keeps the
// whole hidden width and 1/t of the heads and of the MLP width, as in Megatron without sequence
// parallelism). Each operator reads its inputs and writes its output once.
Elementwise layerElementwise(const ModelArchitecture &modelArch, const TrainingConfig &tr, double t)
{
    const ModelArchitecture arch = architectureAsRun(modelArch, tr); // no dropout in inference
    const Precision p = tr.precision;
    const double E = computeBytes(p), R = streamBytes(p);
    const double h = static_cast<double>(arch.hidden_size);
    const double d = static_cast<double>(arch.head_dim);
    const double a = std::max(1.0, static_cast<double>(arch.attention_heads) / t);
    const double k = std::max(1.0, static_cast<double>(arch.kv_heads) / t);
    const double I = static_cast<double>(arch.intermediate_size) / t;
    const double active = arch.isMoe() ? static_cast<double>(arch.experts_per_token) : 1.0;
    Elementwise c;
    const Elementwise norm = normCost(arch.norm, h, p);
    c.bytes += norm.bytes * static_cast<double>(arch.norms_per_layer);
    c.ops += norm.ops * static_cast<double>(arch.norms_per_layer);
    if (arch.qk_norm) {
        const Elementwise qk = normCost(NormKind::RmsNorm, (a + k) * d, p);
        c.bytes += qk.bytes;
        c.ops += 2 * qk.ops;
    }
    // Rotary embedding on q and k (transformers' apply_rotary_pos_emb: q*cos + rotate_half(q)*sin,
    // rotate_half = cat(-x2, x1)): six operators per tensor, about 14 element reads and writes.
    if (arch.positions == PositionKind::Rotary) {
        c.bytes += 14 * E * (a + k) * d;
        c.ops += 12;
    }
    if (tr.attention == Attention::Eager) {
        // repeat_kv expands grouped keys and values to every head.
        if (k < a) {
            c.bytes += 2 * E * (k + a) * d;
            c.ops += 2;
        }
        // Scores: scale, add the causal mask, softmax in fp32, cast back (modeling_llama.py,
        // eager_attention_forward), per position of the sequence.
        c.score_bytes += (6 * E + 8) * a;
        c.ops += 4;
        if (arch.attention_dropout > 0) {
            c.score_bytes += (2 * E + 1) * a;
            c.ops += 1;
        }
    } else {
        c.ops += 3; // the kernel and the layout copies around it
    }
    // Two residual additions, and dropout on both branches when the run applies it.
    c.bytes += 2 * 3 * R * h;
    c.ops += 2;
    if (arch.hidden_dropout > 0) {
        c.bytes += 2 * (2 * E + 1) * h;
        c.ops += 2;
    }
    // MLP activation: SwiGLU/GeGLU act(gate) * up is two operators over I values; torch's GELU one;
    // GPT-2's NewGELUActivation (written in Python) eight.
    switch (arch.mlp) {
    case MlpKind::GatedSilu:
    case MlpKind::GatedGelu:
        c.bytes += 5 * E * I * active;
        c.ops += 2;
        break;
    case MlpKind::Gelu:
        c.bytes += 2 * E * I * active;
        c.ops += 1;
        break;
    case MlpKind::GeluTanhPython:
        c.bytes += 20 * E * I * active;
        c.ops += 8;
        break;
    }
    if (arch.isMoe()) {
        // Routing: softmax/top-k over the experts, then tokens gathered to and scattered from each
        // expert in a Python loop over the experts (modeling_mixtral.py, MixtralSparseMoeBlock).
        const double experts = static_cast<double>(arch.experts);
        c.bytes += 4 * E * h * active;
        c.ops += 10 + 6 * experts;
    }
    // Autocast casts every linear's fp32 input to 16 bits (its cache holds only weights).
    if (isAmp(p)) {
        const bool fusedQkv = arch.family == ModelFamily::Gpt2
                              || arch.family == ModelFamily::BigCode
                              || arch.family == ModelFamily::Falcon;
        const double casts = (fusedQkv ? 1.0 : 3.0) + (arch.isGatedMlp() ? 2.0 : 1.0);
        c.bytes += casts * (4 + E) * h;
        c.ops += casts;
    }
    return c;
}

// Builds the tallies of one micro-batch.
class MicroBatchBuilder
{
public:
    MicroBatchBuilder(const ModelArchitecture &arch,
                      const TrainingConfig &tr,
                      double t,
                      const DeviceModel &device)
        : m_arch(arch)
        , m_tr(tr)
        , m_t(t)
        , m_dev(device)
        , m_fp8(device.float8())
        , m_fp32(device.fp32())
        , m_gp(graphPrecision(tr))
        , m_float8(tr.float8 && tr.mode == Mode::Train)
        , m_train(tr.mode == Mode::Train)
        , m_full(tr.method == Method::Full)
        , m_recompute(m_train && checkpointedLayers(tr, arch.layers) > 0)
        , m_opSelective(m_train && tr.checkpointing == Checkpointing::OpSelective)
        , m_E(computeBytes(tr.precision))
        , m_b(static_cast<double>(tr.micro_batch_size))
        , m_s(static_cast<double>(tr.sequence_length))
        , m_T(m_b * m_s)
        , m_L(static_cast<double>(arch.layers))
    {}

    MicroBatchWork build()
    {
        linearLayers();
        attentionCores();
        layerKernels();
        modelLevel();
        // Checkpointing on every N-th layer recomputes those layers only (all the recompute work
        // above is the decoder layers').
        if (m_recompute && m_L > 0)
            m_work.recompute *= static_cast<double>(checkpointedLayers(m_tr, m_arch.layers)) / m_L;
        return m_work;
    }

private:
    static void matmul(WorkTally &w, const DeviceModel &d, double m, double n, double k, double c)
    {
        w.matmul += d.matmulSeconds(m, n, k, c);
        w.flops += 2 * m * n * k * c;
        w.host_ops += c;
    }

    // Forward, recompute and backward of one weight matrix (in x out), `count` of them, each seeing
    // `tokens` tokens. The backward always computes the input gradient; the weight gradient only
    // when the weight trains (LoRA and QLoRA skip it for the frozen base).
    void weight(double tokens,
                double in,
                double out,
                double count,
                bool trainable,
                bool rerun,
                bool float8 = false)
    {
        const DeviceModel &d = float8 ? m_fp8 : m_dev;
        matmul(m_work.forward, d, tokens, out, in, count);
        m_work.model_flops += 2 * tokens * in * out * count;
        if (float8)
            float8Casts(tokens, in, out, count, rerun);
        if (!m_train)
            return;
        if (rerun) // false for lm_head: checkpointing wraps the decoder layers only
            matmul(m_work.recompute, d, tokens, out, in, count);
        matmul(m_work.backward, d, tokens, in, out, count);
        m_work.model_flops += 2 * tokens * in * out * count;
        if (trainable) {
            matmul(m_work.backward, d, in, out, tokens, count);
            m_work.model_flops += 2 * tokens * in * out * count;
        }
    }

    // TRL's chunked_nll (trl/trainer/sft_trainer.py, _chunk): lm_head as h.float() @ w.float().t()
    // on 256 tokens at a time, at the fp32 rate unless autocast runs it in 16-bit (AMP, PEFT's
    // k-bit preparation), and once more in backward inside each chunk's checkpoint.
    void trlChunkedHead(double h, double V)
    {
        // The model's FLOPs are its share of the vocabulary; tensor-parallel ranks repeat the rest.
        const double modelV = V / m_t;
        constexpr double kChunk = 256;
        const GraphPrecision &gp = m_gp; // what the memory model's chunks do
        const bool autocast = gp.amp || gp.trainer_autocast;
        const DeviceModel &d = autocast ? m_dev : m_fp32;
        const double chunks = std::ceil(m_T / kChunk);
        matmul(m_work.forward, d, kChunk, V, h, chunks);
        matmul(m_work.recompute, d, kChunk, V, h, chunks);
        // Each chunk copies the weight: w.float() of a 16-bit one reads 2 and writes 4 bytes per
        // element, autocast's copy back reads 4 and writes 2. Its fp32 chain (logits,
        // log-softmax, the entropy's exp, product and sum: about 36 bytes per logit) runs in the
        // recomputation too, 22 bytes above what the loss's own bytes below count in forward;
        // when lm_head trains, each fp32 weight gradient is cast (4 + 2) and added (3 x 2).
        const double castBytes = ((gp.head_weight == 2 ? 6 : 0) + (autocast ? 6 : 0)) * V * h
                                 * chunks;
        m_work.forward.elementwise += m_dev.memorySeconds(castBytes + 22 * V * m_T);
        m_work.recompute.elementwise += m_dev.memorySeconds(castBytes + 36 * V * m_T);
        if (m_full)
            m_work.backward.elementwise += m_dev.memorySeconds(12 * V * h * chunks);
        matmul(m_work.backward, d, kChunk, h, V, chunks);
        m_work.model_flops += 4 * m_T * h * modelV;
        if (m_full) {
            matmul(m_work.backward, d, h, V, kChunk, chunks);
            m_work.model_flops += 2 * m_T * h * modelV;
        }
    }

    // torchao's tensorwise casts around a Float8Linear's matmuls (float8_linear.py): each reads the
    // 16-bit tensor twice (its amax, then the scaled cast) and writes one byte per element: in
    // forward the input and the weight, in backward the output gradient twice, the weight and the
    // input again. Eager kernels, as the rest of the model (torch.compile fuses them).
    void float8Casts(double tokens, double in, double out, double count, bool rerun)
    {
        const double perElement = 2 * m_E + 1;
        const double input = tokens * in, weight = in * out, gradOut = tokens * out;
        const double forward = m_dev.memorySeconds(perElement * (input + weight) * count);
        m_work.forward.elementwise += forward;
        m_work.forward.host_ops += 4 * count;
        if (rerun) {
            m_work.recompute.elementwise += forward;
            m_work.recompute.host_ops += 4 * count;
        }
        m_work.backward.elementwise += m_dev.memorySeconds(
            perElement * (2 * gradOut + weight + input) * count);
        m_work.backward.host_ops += 8 * count;
    }

    // Whether a layer's matmul runs again in backward: under checkpointing, unless torchtitan's
    // op-level policy kept its output (every second aten.mm of the layer, selective_checkpoint_policy.h).
    bool reruns(bool atenMm)
    {
        if (!m_opSelective)
            return m_recompute;
        return !atenMm || !selectiveKeepsMatmul(++m_matmuls);
    }

    // bitsandbytes dequantizes a 4-bit (or 8-bit) weight to the compute dtype for every matmul that
    // uses it, forward and backward (MatMul4Bit in bitsandbytes/autograd/_functions.py): read the
    // stored bytes, write the 16-bit copy.
    void dequantize(double elements)
    {
        const double bytes = elements * (storedBytesPerWeight(m_tr.quantization) + m_E);
        const double seconds = m_dev.memorySeconds(bytes);
        m_work.forward.dequantize += seconds;
        m_work.forward.host_ops += 1;
        if (!m_train)
            return;
        m_work.backward.dequantize += seconds;
        m_work.backward.host_ops += 1;
        if (m_recompute) {
            m_work.recompute.dequantize += seconds;
            m_work.recompute.host_ops += 1;
        }
    }

    // LoRA (Hu et al. 2021): h = W x + (alpha/r) B A x. Adapter matmuls are thin (rank r) and so
    // bound by memory; the scale and the addition are element-wise (PEFT lora/layer.py, Linear.forward).
    void adapter(double tokens, double in, double out, double count)
    {
        const double r = static_cast<double>(m_tr.lora.rank);
        WorkTally &f = m_work.forward;
        matmul(f, m_dev, tokens, r, in, count);
        matmul(f, m_dev, tokens, out, r, count);
        const GraphPrecision &gp = m_gp;
        double bytes = adapterCastBytes(gp, in, out) * tokens;
        double ops = 2;
        if (m_tr.lora.dropout > 0) {
            bytes += (2 * gp.adapter + 1) * in * tokens;
            ops += 1;
        }
        f.elementwise += m_dev.memorySeconds(bytes * count);
        f.host_ops += ops * count;
        m_work.model_flops += 2 * 2 * tokens * r * (in + out) * count;
        const bool rerunA = reruns(true);
        const bool rerunB = reruns(true);
        WorkTally &rc = m_work.recompute;
        if (rerunA)
            matmul(rc, m_dev, tokens, r, in, count);
        if (rerunB)
            matmul(rc, m_dev, tokens, out, r, count);
        if (m_recompute) {
            rc.elementwise += m_dev.memorySeconds(bytes * count);
            rc.host_ops += ops * count;
        }
        WorkTally &b = m_work.backward;
        matmul(b, m_dev, tokens, in, r, count);  // input gradient through A
        matmul(b, m_dev, tokens, r, out, count); // gradient into B's input
        matmul(b, m_dev, in, r, tokens, count);  // A's weight gradient
        matmul(b, m_dev, r, out, tokens, count); // B's weight gradient
        b.elementwise += m_dev.memorySeconds(2 * bytes * count);
        b.host_ops += ops * count;
    }

    void linearLayers()
    {
        const ParameterLayout layout = parameterLayout(m_arch);
        const bool quantized = m_tr.quantization != Quantization::None;
        const bool adapters = m_train && !m_full;
        bool routerCounted = false, routerReruns = m_recompute;
        for (const TensorGroup &g : layout) {
            if (!g.linear || g.role == TensorRole::LmHead)
                continue;
            double in = static_cast<double>(g.rows), out = static_cast<double>(g.cols);
            if (g.tensor_parallel_split)
                (isColumnParallel(g.role) ? out : in) /= m_t;
            const bool expert = isExpertMatrix(m_arch, g.role);
            const double tokens = expert ? m_T * static_cast<double>(m_arch.experts_per_token)
                                               / static_cast<double>(m_arch.experts)
                                         : m_T;
            const double count = static_cast<double>(g.count);
            // The router runs before the experts (its tally is added below).
            if (m_arch.isMoe() && !routerCounted
                && (g.role == TensorRole::Gate || g.role == TensorRole::Up)) {
                routerReruns = reruns(true);
                routerCounted = true;
            }
            const bool atenMm = linearRunsAsMatmul(m_tr.quantization, tokens, m_train)
                                && !linearHasBias(m_arch, g.role);
            weight(tokens, in, out, count, m_full, reruns(atenMm), m_float8);
            if (quantized)
                dequantize(in * out * count);
            if (adapters && (g.lora_bits & m_tr.lora.targets) != 0)
                adapter(tokens, in, out, count);
        }
        if (m_arch.isMoe())
            weight(m_T,
                   static_cast<double>(m_arch.hidden_size),
                   static_cast<double>(m_arch.experts),
                   m_L,
                   m_full,
                   routerReruns);
    }

    // The attention core, QK^T and PV: 4 b a s^2 d FLOPs per layer forward. FlashAttention and SDPA
    // skip the masked half of a causal mask and recompute the scores in backward, whose five matmuls
    // are 2.5x the forward's two (Dao 2023, section 3.1); eager attention computes the whole square
    // with batched matmuls and four in backward.
    void attentionCores()
    {
        const double a = std::max(1.0, static_cast<double>(m_arch.attention_heads) / m_t);
        const double d = static_cast<double>(m_arch.head_dim);
        const double square = 4 * m_b * a * m_s * m_s * d;
        const bool selective = m_train && m_tr.checkpointing == Checkpointing::Selective;
        if (m_tr.attention == Attention::Eager) {
            const double heads = m_b * a * m_L;
            auto forward = [&](WorkTally &w) {
                w.attention += m_dev.matmulSeconds(m_s, m_s, d, heads)
                               + m_dev.matmulSeconds(m_s, d, m_s, heads);
                w.flops += square * m_L;
                w.host_ops += 2 * m_L;
            };
            forward(m_work.forward);
            m_work.model_flops += square * m_L * (m_train ? 3 : 1) / 2;
            if (!m_train)
                return;
            if (m_recompute || selective)
                forward(m_work.recompute);
            WorkTally &b = m_work.backward;
            b.attention += m_dev.matmulSeconds(m_s, d, m_s, 3 * heads)
                           + m_dev.matmulSeconds(m_s, m_s, d, heads);
            b.flops += 2 * square * m_L;
            b.host_ops += 4 * m_L;
            return;
        }
        const double flops = square / 2 * m_L;
        const double blocks = m_b * a * std::ceil(m_s / 128);
        m_work.forward.attention += m_dev.fusedAttentionSeconds(flops, blocks);
        m_work.forward.flops += flops;
        m_work.model_flops += flops * (m_train ? 3 : 1);
        if (!m_train)
            return;
        // torchtitan's op-level policy keeps SDPA's output; FlashAttention-2's op runs again.
        const bool kept = m_opSelective && m_tr.attention == Attention::Sdpa;
        if (m_recompute && !kept) {
            m_work.recompute.attention += m_dev.fusedAttentionSeconds(flops, blocks);
            m_work.recompute.flops += flops;
        }
        m_work.backward.attention += m_dev.fusedAttentionSeconds(2.5 * flops, blocks);
        m_work.backward.flops += 2.5 * flops;
        m_work.backward.host_ops += m_L;
    }

    // Element-wise kernels of the layers; backward reads the saved inputs and the incoming gradient
    // and writes the input gradient: twice the forward's bytes with one operator per forward one.
    void layerKernels()
    {
        const Elementwise c = layerElementwise(m_arch, m_tr, m_t);
        const double bytes = (c.bytes + c.score_bytes * m_s) * m_T * m_L;
        const double seconds = m_dev.memorySeconds(bytes);
        const double ops = c.ops * m_L;
        m_work.forward.elementwise += seconds;
        m_work.forward.host_ops += ops;
        if (!m_train)
            return;
        m_work.backward.elementwise += 2 * seconds;
        m_work.backward.host_ops += ops;
        if (m_recompute) {
            m_work.recompute.elementwise += seconds;
            m_work.recompute.host_ops += ops;
        } else if (m_tr.checkpointing == Checkpointing::Selective
                   && m_tr.attention == Attention::Eager) {
            m_work.recompute.elementwise += m_dev.memorySeconds(c.score_bytes * m_s * m_T * m_L);
        }
        // AMP casts each fp32 weight to 16 bits once per forward (autocast's weight cache).
        if (isAmp(m_tr.precision)) {
            const double weights = parameterLayout(m_arch).per_layer * m_L / m_t;
            const double cast = m_dev.memorySeconds(6 * weights);
            m_work.forward.elementwise += cast;
            if (m_recompute)
                m_work.recompute.elementwise += cast;
        }
    }

    // Embedding lookup, final norm, lm_head and the loss. The loss of transformers >= 4.46
    // (ForCausalLMLoss) upcasts the logits to fp32 and runs log_softmax and nll_loss on them; its
    // backward writes fp32 gradients of the same size and casts them back: about (28 + 2E) bytes per
    // vocabulary entry per token in all, plus a shifted fp32 copy in older versions (hf-legacy).
    void modelLevel()
    {
        const double h = static_cast<double>(m_arch.hidden_size);
        // TRL's chunked loss gathers a split lm_head whole (full_tensor()): every rank computes
        // the whole vocabulary's logits (see headGraph).
        const bool trlChunks = m_train && m_tr.loss == LossImplementation::TrlChunkedNll;
        const double V = static_cast<double>(m_arch.vocab_size) / (trlChunks ? 1.0 : m_t);
        if (!m_arch.holds_head) { // an earlier pipeline stage: at most the embedding
            if (m_train && m_full && m_arch.holds_embedding)
                m_work.backward.elementwise += m_dev.memorySeconds(2 * 4 * V * h);
            return;
        }
        const Elementwise norm = normCost(m_arch.norm, h, m_tr.precision);
        const double headTokens = m_train ? m_T
                                          : m_b; // generation keeps the last position's logits
        if (trlChunks)
            trlChunkedHead(h, V);
        else
            weight(headTokens, h, V, 1, m_full, false);
        WorkTally &f = m_work.forward;
        double forwardBytes = (2 * m_E * h + norm.bytes) * m_T;
        double backwardBytes = 2 * forwardBytes;
        f.host_ops += 2 + norm.ops;
        if (m_train) {
            forwardBytes += (m_E + 12 + (m_tr.loss == LossImplementation::HfLegacy ? 8 : 0)) * V
                            * m_T;
            backwardBytes += (16 + m_E) * V * m_T;
            f.host_ops += 4;
            m_work.backward.host_ops += 6 + norm.ops;
            // A trainable embedding's gradient: zeroed and scattered into, V x h in fp32 or the
            // parameter dtype (embedding_dense_backward).
            if (m_full && m_arch.holds_embedding)
                backwardBytes += 2 * 4 * static_cast<double>(m_arch.vocab_size) / m_t * h;
            m_work.backward.elementwise += m_dev.memorySeconds(backwardBytes);
        }
        f.elementwise += m_dev.memorySeconds(forwardBytes);
    }

    const ModelArchitecture &m_arch;
    const TrainingConfig &m_tr;
    const double m_t;
    const DeviceModel &m_dev;
    const DeviceModel m_fp8;
    const DeviceModel m_fp32;
    const GraphPrecision m_gp; // the dtypes the memory model's graphs use
    const bool m_float8;
    const bool m_train, m_full, m_recompute, m_opSelective;
    int m_matmuls = 0; // aten.mm calls of one layer so far (op-level selective checkpointing)
    const double m_E, m_b, m_s, m_T, m_L;
    MicroBatchWork m_work;
};

} // namespace

MicroBatchWork microBatchWork(const ModelArchitecture &arch,
                              const TrainingConfig &training,
                              std::int64_t tensorParallel,
                              const DeviceModel &device)
{
    MicroBatchBuilder builder(arch,
                              training,
                              static_cast<double>(std::max<std::int64_t>(1, tensorParallel)),
                              device);
    return builder.build();
}

// Decoding is bound by memory: each step reads every weight of the rank once (at its stored size:
// bitsandbytes' 4-bit inference kernel reads the packed weights directly) and the keys and values of
// every earlier token, 2 L b s k d E bytes (docs/memory-model.md, Inference).
WorkTally decodeStepWork(const ModelArchitecture &arch,
                         const TrainingConfig &training,
                         std::int64_t tensorParallel,
                         std::int64_t context,
                         const DeviceModel &device)
{
    WorkTally w;
    const double t = static_cast<double>(std::max<std::int64_t>(1, tensorParallel));
    const double b = static_cast<double>(training.micro_batch_size);
    const double E = computeBytes(training.precision);
    const double stored = training.quantization == Quantization::None
                              ? E
                              : storedBytesPerWeight(training.quantization);
    const ParameterLayout layout = parameterLayout(arch);
    for (const TensorGroup &g : layout) {
        if (!g.linear)
            continue;
        double in = static_cast<double>(g.rows), out = static_cast<double>(g.cols);
        if (g.tensor_parallel_split)
            (isColumnParallel(g.role) ? out : in) /= t;
        double count = static_cast<double>(g.count);
        // Experts a step touches: with b tokens choosing k of E experts, at most min(E, b k).
        if (isExpertMatrix(arch, g.role))
            count = count / static_cast<double>(arch.experts)
                    * std::min(static_cast<double>(arch.experts),
                               b * static_cast<double>(arch.experts_per_token));
        const double flops = 2 * b * in * out * count;
        w.matmul += std::max(flops / (device.peakFlops() * kDefaultMatmulEfficiency),
                             device.memorySeconds(stored * in * out * count));
        w.flops += flops;
        w.host_ops += count;
    }
    if (arch.tied_embeddings) {
        const double V = static_cast<double>(arch.vocab_size) / t;
        const double h = static_cast<double>(arch.hidden_size);
        w.matmul += device.matmulSeconds(b, V, h);
        w.flops += 2 * b * V * h;
        w.host_ops += 1;
    }
    const double L = static_cast<double>(arch.layers);
    const double k = std::max(1.0, static_cast<double>(arch.kv_heads) / t);
    const double a = std::max(1.0, static_cast<double>(arch.attention_heads) / t);
    const double d = static_cast<double>(arch.head_dim);
    const double s = static_cast<double>(context);
    w.attention += device.memorySeconds(2 * L * b * s * k * d * E);
    w.flops += 4 * b * a * s * d * L;
    const Elementwise c = layerElementwise(arch, training, t);
    w.elementwise += device.memorySeconds((c.bytes + c.score_bytes * s) * b * L);
    w.host_ops += (c.ops + 2) * L + 4;
    return w;
}

} // namespace membudget
