// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/parameter_layout.h"

#include "model/training_options.h"

#include <algorithm>

namespace membudget {

namespace {

struct LayoutBuilder
{
    ParameterLayout layout;

    void add(TensorRole role,
             std::int64_t rows,
             std::int64_t cols,
             std::int64_t count,
             bool linear,
             unsigned loraBits,
             bool split)
    {
        if (rows <= 0 || cols <= 0 || count <= 0
            || layout.group_count >= static_cast<int>(layout.groups.size()))
            return;
        TensorGroup &g = layout.groups[static_cast<std::size_t>(layout.group_count++)];
        g.role = role;
        g.rows = rows;
        g.cols = cols;
        g.count = count;
        g.linear = linear;
        g.lora_bits = loraBits;
        g.tensor_parallel_split = split;
    }
};

} // namespace

// Counting follows the modules of Hugging Face transformers' modeling_llama.py, modeling_gpt2.py,
// modeling_gpt_bigcode.py, modeling_falcon.py and modeling_mixtral.py; the totals equal
// sum(p.numel() for p in model.parameters()) with tied weights counted once.
ParameterLayout parameterLayout(const ModelArchitecture &arch)
{
    LayoutBuilder b;
    const std::int64_t L = arch.layers;
    const std::int64_t h = arch.hidden_size;
    const std::int64_t q = arch.attention_heads * arch.head_dim;
    const std::int64_t kv = arch.kv_heads * arch.head_dim;
    const std::int64_t I = arch.intermediate_size;
    const std::int64_t E = std::max<std::int64_t>(1, arch.experts);
    const bool layerNorm = arch.norm == NormKind::LayerNorm;
    const bool parametricNorm = arch.norm != NormKind::LayerNormNoParams;
    const bool fusedQkv = arch.family == ModelFamily::Gpt2 || arch.family == ModelFamily::BigCode
                          || arch.family == ModelFamily::Falcon;

    if (arch.holds_embedding) {
        b.add(TensorRole::Embedding, arch.vocab_size, h, 1, false, 0, arch.tensor_parallel_embedding);
        if (arch.positions == PositionKind::Learned)
            b.add(TensorRole::PositionEmbedding, arch.max_position_embeddings, h, 1, false, 0, false);
    }

    // Attention projections.
    if (fusedQkv) {
        b.add(TensorRole::QueryKeyValue, h, q + 2 * kv, L, true, TargetQ | TargetK | TargetV, true);
    } else {
        b.add(TensorRole::Query, h, q, L, true, TargetQ, true);
        b.add(TensorRole::Key, h, kv, L, true, TargetK, true);
        b.add(TensorRole::Value, h, kv, L, true, TargetV, true);
    }
    b.add(TensorRole::Output, q, h, L, true, TargetO, true);
    if (arch.qkv_bias)
        b.add(TensorRole::Bias, q + 2 * kv, 1, L, false, 0, true);
    if (arch.o_bias)
        b.add(TensorRole::Bias, h, 1, L, false, 0, false);
    if (arch.qk_norm)
        b.add(TensorRole::QkNorm, arch.head_dim, 1, 2 * L, false, 0, false);

    // MLP (per expert for MoE) and router.
    const std::int64_t mlpCount = L * E;
    if (arch.isGatedMlp()) {
        b.add(TensorRole::Gate, h, I, mlpCount, true, TargetGate, true);
        b.add(TensorRole::Up, h, I, mlpCount, true, TargetUp, true);
    } else {
        b.add(TensorRole::Up, h, I, mlpCount, true, TargetUp, true);
    }
    b.add(TensorRole::Down, I, h, mlpCount, true, TargetDown, true);
    if (arch.mlp_bias) {
        b.add(TensorRole::Bias, arch.isGatedMlp() ? 2 * I : I, 1, mlpCount, false, 0, true);
        b.add(TensorRole::Bias, h, 1, mlpCount, false, 0, false);
    }
    if (arch.isMoe())
        b.add(TensorRole::Router, h, E, L, false, 0, false);

    // Norms: weight (and bias for LayerNorm) per norm.
    if (parametricNorm) {
        const std::int64_t perNorm = layerNorm ? 2 * h : h;
        b.add(TensorRole::Norm, perNorm, 1, L * arch.norms_per_layer, false, 0, false);
        if (arch.holds_head)
            b.add(TensorRole::FinalNorm, perNorm, 1, 1, false, 0, false);
    }
    // A pipeline's last stage keeps its own copy of a tied embedding as lm_head.
    if (arch.holds_head && (!arch.tied_embeddings || !arch.holds_embedding))
        b.add(TensorRole::LmHead, h, arch.vocab_size, 1, true, 0, true);

    ParameterLayout &out = b.layout;
    double expertElements = 0;
    for (const TensorGroup &g : out) {
        out.total += g.totalElements();
        out.largest_tensor = std::max(out.largest_tensor, g.elements());
        const bool perLayer = g.role != TensorRole::Embedding
                              && g.role != TensorRole::PositionEmbedding
                              && g.role != TensorRole::LmHead && g.role != TensorRole::FinalNorm;
        if (perLayer && L > 0)
            out.per_layer += g.totalElements() / static_cast<double>(L);
        if (g.linear && perLayer)
            out.largest_linear = std::max(out.largest_linear, g.elements());
        const bool expertTensor = arch.isMoe()
                                  && (g.role == TensorRole::Gate || g.role == TensorRole::Up
                                      || g.role == TensorRole::Down
                                      || (g.role == TensorRole::Bias && g.count == mlpCount));
        if (expertTensor)
            expertElements += g.totalElements();
    }
    const double activeShare = arch.isMoe()
                                   ? static_cast<double>(std::min(arch.experts_per_token, E))
                                         / static_cast<double>(E)
                                   : 1.0;
    out.active = out.total - expertElements * (1.0 - activeShare);
    return out;
}

// LoRA (Hu et al. 2021, arXiv:2106.09685, section 4): each adapted W (in x out) gains A (in x r) and
// B (r x out), so r * (in + out) trainable parameters per matrix.
bool linearHasBias(const ModelArchitecture &arch, TensorRole role)
{
    switch (role) {
    case TensorRole::Query:
    case TensorRole::Key:
    case TensorRole::Value:
    case TensorRole::QueryKeyValue:
        return arch.qkv_bias;
    case TensorRole::Output:
        return arch.o_bias;
    case TensorRole::Gate:
    case TensorRole::Up:
    case TensorRole::Down:
        return arch.mlp_bias;
    default:
        return false;
    }
}

double loraParameters(const ParameterLayout &layout, unsigned targets, std::int64_t rank)
{
    double total = 0;
    for (const TensorGroup &g : layout) {
        if (!g.linear || (g.lora_bits & targets) == 0)
            continue;
        total += static_cast<double>(rank) * static_cast<double>(g.rows + g.cols)
                 * static_cast<double>(g.count);
    }
    return total;
}

// Trainable adapter parameters of the whole model: LoRA's A and B (plus DoRA's magnitude vector, one
// value per output row: PEFT lora/dora.py), or IA3's vectors (out_features per targeted module,
// in_features for the feed-forward output projection: PEFT ia3/layer.py).
double adapterParameters(const ParameterLayout &layout, const TrainingConfig &training)
{
    double total = 0;
    for (const TensorGroup &g : layout) {
        if (!g.linear)
            continue;
        const double count = static_cast<double>(g.count);
        if (training.method == Method::Ia3) {
            if ((g.lora_bits & training.ia3.targets) != 0)
                total += static_cast<double>(g.role == TensorRole::Down ? g.rows : g.cols) * count;
        } else if ((g.lora_bits & training.lora.targets) != 0 && training.lora.use_dora) {
            total += static_cast<double>(g.cols) * count;
        }
    }
    if (training.method == Method::Ia3)
        return total;
    return total + loraParameters(layout, training.lora.targets, training.lora.rank);
}

} // namespace membudget
