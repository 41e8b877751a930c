// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/model_architecture.h"

#include "base/enum_names.h"

#include <algorithm>
#include <cmath>

namespace membudget {

namespace {

const char *const kFamilyNames[] = {"llama", "gemma", "gpt2", "bigcode", "falcon"};
const char *const kMlpNames[] = {"gated-silu", "gated-gelu", "gelu", "gelu-tanh-python"};
const char *const kNormNames[] = {"rmsnorm", "rmsnorm-fp32", "layernorm", "layernorm-no-params"};
const char *const kPositionNames[] = {"rotary", "learned"};

} // namespace

const char *familyName(ModelFamily family)
{
    return kFamilyNames[static_cast<int>(family)];
}
bool parseFamily(const std::string &text, ModelFamily &out)
{
    return parseEnumName(kFamilyNames, text, out);
}
const char *mlpName(MlpKind kind)
{
    return kMlpNames[static_cast<int>(kind)];
}
bool parseMlp(const std::string &text, MlpKind &out)
{
    return parseEnumName(kMlpNames, text, out);
}
const char *normName(NormKind kind)
{
    return kNormNames[static_cast<int>(kind)];
}
bool parseNorm(const std::string &text, NormKind &out)
{
    return parseEnumName(kNormNames, text, out);
}
const char *positionName(PositionKind kind)
{
    return kPositionNames[static_cast<int>(kind)];
}
bool parsePosition(const std::string &text, PositionKind &out)
{
    return parseEnumName(kPositionNames, text, out);
}

void applyFamilyDefaults(ModelArchitecture &arch, ModelFamily family)
{
    arch.family = family;
    arch.qkv_bias = false;
    arch.o_bias = false;
    arch.mlp_bias = false;
    arch.qk_norm = false;
    arch.parallel_attention = false;
    arch.norms_per_layer = 2;
    arch.attention_dropout = 0.0;
    arch.hidden_dropout = 0.0;
    switch (family) {
    case ModelFamily::Llama:
        arch.mlp = MlpKind::GatedSilu;
        arch.norm = NormKind::RmsNorm;
        arch.positions = PositionKind::Rotary;
        break;
    case ModelFamily::Gemma:
        arch.mlp = MlpKind::GatedGelu;
        arch.norm = NormKind::RmsNormFp32;
        arch.positions = PositionKind::Rotary;
        arch.tied_embeddings = true;
        break;
    case ModelFamily::Gpt2:
        arch.mlp = MlpKind::GeluTanhPython;
        arch.norm = NormKind::LayerNorm;
        arch.positions = PositionKind::Learned;
        arch.qkv_bias = arch.o_bias = arch.mlp_bias = true;
        arch.attention_dropout = arch.hidden_dropout = 0.1;
        arch.tied_embeddings = true;
        break;
    case ModelFamily::BigCode:
        arch.mlp = MlpKind::Gelu;
        arch.norm = NormKind::LayerNorm;
        arch.positions = PositionKind::Learned;
        arch.qkv_bias = arch.o_bias = arch.mlp_bias = true;
        arch.attention_dropout = arch.hidden_dropout = 0.1;
        arch.tied_embeddings = true;
        arch.kv_heads = 1;
        break;
    case ModelFamily::Falcon:
        arch.mlp = MlpKind::Gelu;
        arch.norm = NormKind::LayerNorm;
        arch.positions = PositionKind::Rotary;
        arch.parallel_attention = true;
        arch.norms_per_layer = 1;
        arch.tied_embeddings = true;
        arch.kv_heads = 1;
        break;
    }
}

// Quick mode. Llama-family shapes keep layers ~ hidden / 128 (Llama-2-7B: 4096 / 32) and a gated MLP
// of about 8/3 hidden; parameters ~ layers * 12 h^2 + 2 V h (Touvron et al. 2023, arXiv:2307.09288,
// table of model sizes). Width is solved for, rounded to a multiple of 128, then the MLP width is set
// so the total matches the requested count to within its rounding to 64.
ModelArchitecture quickArchitecture(double parameters)
{
    ModelArchitecture arch;
    applyFamilyDefaults(arch, ModelFamily::Llama);
    const double target = std::clamp(parameters, 1.0e6, 1.0e13);
    const double vocab = 32000;
    // Solve (12/128) h^3 + 2 V h = target for h by Newton's method.
    double h = std::cbrt(target * 128.0 / 12.0);
    for (int i = 0; i < 30; ++i) {
        const double f = 12.0 / 128.0 * h * h * h + 2 * vocab * h - target;
        const double df = 36.0 / 128.0 * h * h + 2 * vocab;
        h -= f / df;
    }
    const std::int64_t hidden = std::max<std::int64_t>(128, std::llround(h / 128.0) * 128);
    const std::int64_t headDim = hidden >= 1024 ? 128 : 64;
    const std::int64_t heads = std::max<std::int64_t>(1, hidden / headDim);
    const std::int64_t layers
        = std::max<std::int64_t>(2, std::llround(static_cast<double>(hidden) / 128.0));
    const double hd = static_cast<double>(hidden);
    const double embed = 2 * vocab * hd + hd;
    const double perLayerFixed = 4 * hd * hd + 2 * hd; // attention + two norms
    const double perLayerMlp = (target - embed) / static_cast<double>(layers) - perLayerFixed;
    std::int64_t inter = std::llround(perLayerMlp / (3 * hd) / 64.0) * 64;
    inter = std::max<std::int64_t>(64, inter);

    arch.layers = layers;
    arch.hidden_size = hidden;
    arch.intermediate_size = inter;
    arch.attention_heads = heads;
    arch.kv_heads = heads;
    arch.head_dim = headDim;
    arch.vocab_size = static_cast<std::int64_t>(vocab);
    arch.tied_embeddings = false;
    arch.max_position_embeddings = 4096;
    return arch;
}

} // namespace membudget
