// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/activation_model.h"

#include <algorithm>
#include <initializer_list>

namespace membudget {

namespace {

// What decides which tensors autograd keeps.
struct SaveRules
{
    double E = 2;          // compute dtype bytes (matmul outputs)
    double R = 2;          // residual stream dtype bytes (norm inputs and outputs)
    bool amp = false;      // autocast: every F.linear casts an fp32 input to a fresh 16-bit copy
    bool trainBase = true; // base weights require grad: a linear saves its input for the weight grad
    bool lora = false;
    unsigned targets = 0;
    double loraDropout = 0;
    double adapterBytes = 4; // dtype of adapter weights (PEFT casts the adapter input to it)
    double rank = 0;
};

// Bytes per token saved for the input X (d_in wide, xb bytes per element) of the linear layers in
// `consumers` (each a LoraTarget mask; 0 for a linear no adapter can target, such as lm_head).
// `alreadySaved`: X itself is kept by another op, so saving it again costs nothing.
//  - torch.nn.functional.linear saves its input only when the weight requires grad (autograd
//    derivatives.yaml: mm saves self for mat2's gradient);
//  - under autocast each F.linear call casts an fp32 input separately (only weights are cached);
//  - a PEFT LoRA layer casts X to the adapter dtype, applies its own dropout (saving a 1-byte mask on
//    CUDA) and lora_A saves the result; lora_B saves lora_A's rank-wide output (peft/tuners/lora/layer.py).
double linearInputs(const SaveRules &r,
                    double dIn,
                    double xb,
                    std::initializer_list<unsigned> consumers,
                    bool alreadySaved)
{
    double bytes = 0;
    bool xSaved = alreadySaved;
    if (r.trainBase) {
        if (r.amp && xb != 2) {
            bytes += 2 * dIn * static_cast<double>(consumers.size());
        } else if (!xSaved) {
            bytes += xb * dIn;
            xSaved = true;
        }
    }
    if (!r.lora)
        return bytes;
    for (unsigned mask : consumers) {
        if ((mask & r.targets) == 0)
            continue;
        const bool dropout = r.loraDropout > 0;
        const double ea = r.amp ? 2 : r.adapterBytes;
        if (r.amp || ea != xb) {
            bytes += ea * dIn + (dropout ? dIn : 0);
        } else if (dropout) {
            bytes += (1 + xb) * dIn;
        } else if (!xSaved) {
            bytes += xb * dIn;
            xSaved = true;
        }
        bytes += ea * r.rank;
    }
    return bytes;
}

// A norm over width h (per token). HF LlamaRMSNorm: x.to(float32) is kept by pow and mul, rsqrt's
// [.., 1] output by mul, and the cast-back result by `weight * x` only while the weight trains.
// Gemma keeps the fp32 normalised tensor instead. torch layer_norm keeps its input, mean and rstd.
double normSaved(const SaveRules &r, NormKind kind, double h, bool trainableWeight)
{
    switch (kind) {
    case NormKind::RmsNorm:
        return 4 * h + 4 + (trainableWeight ? r.R * h : 0);
    case NormKind::RmsNormFp32:
        return 4 * h + 4 + (trainableWeight ? 4 * h : 0);
    case NormKind::LayerNorm:
    case NormKind::LayerNormNoParams:
        return r.R * h + 8;
    }
    return 0;
}

} // namespace

ActivationProfile activationProfile(const ModelArchitecture &arch,
                                    const TrainingConfig &training,
                                    std::int64_t tensor_parallel)
{
    SaveRules r;
    const Precision p = training.precision;
    r.amp = isAmp(p);
    r.E = p == Precision::Fp32 ? 4 : 2;
    r.R = (p == Precision::Fp32 || r.amp) ? 4 : 2;
    r.trainBase = training.method == Method::Full;
    r.lora = training.method != Method::Full;
    r.targets = training.lora.targets;
    r.loraDropout = training.lora.dropout;
    r.adapterBytes = training.lora.adapter_precision == AdapterPrecision::Fp32 ? 4 : r.E;
    r.rank = static_cast<double>(training.lora.rank);
    const bool trainNorm = r.trainBase;

    const double t = static_cast<double>(std::max<std::int64_t>(1, tensor_parallel));
    const double h = static_cast<double>(arch.hidden_size);
    const double d = static_cast<double>(arch.head_dim);
    const double a = static_cast<double>(arch.attention_heads) / t;
    const double k = std::max(1.0, static_cast<double>(arch.kv_heads) / t);
    const double I = static_cast<double>(arch.intermediate_size) / t;
    const double topK = arch.isMoe()
                            ? static_cast<double>(std::min(arch.experts_per_token, arch.experts))
                            : 1.0;
    const bool llamaStyle = arch.family == ModelFamily::Llama || arch.family == ModelFamily::Gemma;
    const bool fused = !llamaStyle;
    const double E = r.E;
    const double R = r.R;
    const bool checkpointSelective = training.checkpointing == Checkpointing::Selective;

    ActivationProfile out;
    out.compute_bytes = E;
    out.stream_bytes = R;

    double linear = 0;
    double score = 0;
    double bwdScore = 0;
    double bwdAttention = 0;

    // Attention block: norm, q/k/v projections (and q/k norms).
    linear += normSaved(r, arch.norm, h, trainNorm);
    if (arch.parallel_attention) {
        if (fused)
            linear += linearInputs(r, h, R, {TargetQ | TargetK | TargetV, TargetUp}, false);
        else
            linear
                += linearInputs(r, h, R, {TargetQ, TargetK, TargetV, TargetGate, TargetUp}, false);
    } else if (fused) {
        linear += linearInputs(r, h, R, {TargetQ | TargetK | TargetV}, false);
    } else {
        linear += linearInputs(r, h, R, {TargetQ, TargetK, TargetV}, false);
    }
    if (arch.qk_norm)
        linear += (4 + (trainNorm ? E : 0)) * (a + k) * d + 4 * (a + k);

    // Attention core. Eager (HF eager_attention_forward): q and k for QK^T, repeat_kv-expanded k and v
    // when heads are grouped, the fp32 softmax (Llama calls softmax(dtype=float32); autocast does the
    // same for GPT-2) and the 16-bit copy PV reads. SDPA / FlashAttention-2 (Dao 2023,
    // arXiv:2307.08691, section 3.1): q, k, v, the output and an fp32 logsumexp per head and token.
    const double kvSaved = (llamaStyle && k < a) ? a : k;
    const double softmaxBytes = (llamaStyle || r.amp) ? 4 : E;
    double scoreSet = softmaxBytes * a;
    if (arch.attention_dropout > 0)
        scoreSet += (1 + E) * a;
    else if (softmaxBytes != E)
        scoreSet += E * a;
    bool oInputSaved = false;
    if (checkpointSelective) {
        // Selective recomputation (Korthikanti et al. 2022, arXiv:2205.05198, section 5): only the
        // core's inputs are kept; the core runs again in backward.
        linear += E * (a * d + 2 * k * d);
        if (training.attention == Attention::Eager) {
            bwdScore += scoreSet;
            bwdAttention += E * 2 * (kvSaved - k) * d + E * a * d;
        } else {
            bwdAttention += E * a * d + 4 * a;
        }
    } else if (training.attention == Attention::Eager) {
        linear += E * (a * d + 2 * kvSaved * d);
        score += scoreSet;
    } else {
        linear += E * (a * d + 2 * k * d) + E * a * d + 4 * a;
        oInputSaved = true;
    }
    linear += linearInputs(r, a * d, E, {TargetO}, oInputSaved);
    if (arch.hidden_dropout > 0)
        linear += h; // 1-byte dropout mask after the attention output projection

    // MLP block.
    if (!arch.parallel_attention)
        linear += normSaved(r, arch.norm, h, trainNorm);
    double mlpInternal = 0;
    double downInputBytes = E;
    double mlpBackward = 0;
    switch (arch.mlp) {
    case MlpKind::GatedSilu:
    case MlpKind::GatedGelu:
        mlpInternal = 3 * E * I; // act saves gate(x); the product saves act(gate(x)) and up(x)
        mlpBackward = 3 * E * I;
        break;
    case MlpKind::Gelu:
        mlpInternal = E * I; // F.gelu saves its input
        mlpBackward = 2 * E * I;
        break;
    case MlpKind::GeluTanhPython:
        // NewGELUActivation: pow saves x, tanh its output, the final product 0.5x and 1 + tanh.
        // Under autocast pow runs in fp32, so x, tanh and 1 + tanh are fp32 copies.
        mlpInternal = r.amp ? 14 * I : 4 * E * I;
        downInputBytes = r.amp ? 4 : E;
        mlpBackward = 3 * E * I;
        break;
    }
    if (arch.isMoe()) {
        // Mixtral-style sparse MLP: the router reads the norm output; each routed token is gathered
        // into a fresh copy per expert, and each expert output is kept by the routing-weight product.
        const double experts = static_cast<double>(arch.experts);
        linear += linearInputs(r, h, R, {0u}, false) + 4 * experts;
        if (arch.isGatedMlp())
            linear += topK * linearInputs(r, h, R, {TargetGate, TargetUp}, false);
        else
            linear += topK * linearInputs(r, h, R, {TargetUp}, false);
        linear += topK
                  * (mlpInternal + linearInputs(r, I, downInputBytes, {TargetDown}, false) + E * h);
    } else {
        if (!arch.parallel_attention) {
            if (arch.isGatedMlp())
                linear += linearInputs(r, h, R, {TargetGate, TargetUp}, false);
            else
                linear += linearInputs(r, h, R, {TargetUp}, false);
        }
        linear += mlpInternal + linearInputs(r, I, downInputBytes, {TargetDown}, false);
    }
    if (arch.hidden_dropout > 0)
        linear += h;

    out.layer_linear = linear;
    out.layer_score = score;
    out.layer_full_linear = linear;
    out.layer_full_score = score;
    out.layer_checkpoint = R * h; // torch.utils.checkpoint keeps the layer's input hidden states

    // Inside one layer's backward: activation gradients of the MLP (or of the eager softmax chain:
    // grad of the 16-bit probabilities, its fp32 cast and softmax_backward's fp32 result), plus the
    // residual-stream gradient in and out.
    double attnBackward = E * (a + 2 * k) * d;
    if (training.attention != Attention::Eager)
        attnBackward += 4 * a * d; // FlashAttention-2 backward accumulates dq in fp32
    double attnBackwardScore = 0;
    if (training.attention == Attention::Eager)
        attnBackwardScore = (E == 4 ? 8 : E + 8) * a;
    out.backward_linear = std::max(topK * mlpBackward, attnBackward + bwdAttention) + 2 * R * h;
    out.backward_score = attnBackwardScore + bwdScore;

    // Model level: token ids for the embedding gradient, rotary cos/sin (computed once per forward as
    // [1, s, d] and shared by every layer and sequence), the final norm and lm_head's input.
    double model = 0;
    if (r.trainBase)
        model += arch.positions == PositionKind::Learned ? 16 : 8;
    if (arch.positions == PositionKind::Rotary)
        out.model_per_position = 2 * d * R;
    // Eager attention builds a [b, 1, s, s] additive mask in the compute dtype once per forward; full
    // checkpointing keeps it as an input of every checkpoint (one shared tensor) until backward.
    if (llamaStyle && training.attention == Attention::Eager
        && training.checkpointing == Checkpointing::Full)
        out.checkpoint_mask = E;
    // With a frozen embedding (LoRA, QLoRA) the first layer's input needs no gradient: its first norm
    // keeps nothing, and eager attention keeps q only for k's gradient and k only for q's.
    if (r.lora && training.checkpointing != Checkpointing::Full
        && (r.targets & (TargetQ | TargetK | TargetV | TargetO)) != 0) {
        double saved = normSaved(r, arch.norm, h, false);
        // Dropout on an input without gradient keeps no mask (autograd records no node for it).
        if (r.loraDropout > 0) {
            const unsigned qkv = r.targets & (TargetQ | TargetK | TargetV);
            const double adapters = fused ? (qkv ? 1 : 0)
                                          : static_cast<double>(__builtin_popcount(qkv));
            saved += adapters * h;
        }
        if (training.attention == Attention::Eager && !checkpointSelective) {
            if ((r.targets & TargetK) == 0)
                saved += E * a * d; // q is kept for the gradient of k only
            if ((r.targets & TargetQ) == 0)
                saved += E * kvSaved * d; // k is kept for the gradient of q only
            if ((r.targets & (TargetQ | TargetK)) == 0)
                out.first_layer_score = scoreSet; // probabilities need no gradient
        }
        out.first_layer_linear = saved;
    }
    if (arch.hidden_dropout > 0)
        model += h;
    model += normSaved(r, arch.norm, h, trainNorm);
    model += linearInputs(r, h, R, {0u}, false);
    out.model_level = model;

    // Logits, per token per vocabulary entry.
    //  hf (transformers >= 4.46, ForCausalLMLoss): lm_head's 16-bit logits, the fp32 upcast and
    //    log_softmax's fp32 output coexist at the end of forward; at the start of backward,
    //    log_softmax's output, the incoming fp32 gradient and log_softmax_backward's result.
    //  hf-legacy (transformers < 4.46, LlamaForCausalLM): `logits.float()` is returned in the model
    //    output and kept by the training loop, and `logits[..., :-1, :].contiguous()` makes a second
    //    fp32 copy: 4 more bytes in both phases.
    //  chunked (torchtune CEWithChunkedOutputLoss, Liger): 16-bit logits kept; fp32 work per chunk
    //    of 1/8 of the tokens.
    switch (training.loss) {
    case LossImplementation::Hf:
        out.logits_forward = E == 4 ? 8 : E + 8;
        out.logits_backward = 12;
        break;
    case LossImplementation::HfLegacy:
        out.logits_forward = 12;
        out.logits_backward = 16;
        break;
    case LossImplementation::Chunked:
        out.logits_forward = E + (E == 4 ? 4 : 8) / 8.0;
        out.logits_backward = E + 12 / 8.0;
        break;
    }
    return out;
}

} // namespace membudget
