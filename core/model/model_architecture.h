// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>

namespace membudget {

// How a decoder family lays out its blocks. The family sets the defaults of the style switches
// below; every switch can still be overridden one by one.
enum class ModelFamily {
    Llama, // RMSNorm, rotary, gated SwiGLU, separate q/k/v (Llama, Mistral, Qwen, Phi-3/4, SmolLM...)
    Gemma,   // Llama layout, GeGLU, RMSNorm computed wholly in fp32, embeddings scaled
    Gpt2,    // LayerNorm, learned positions, fused qkv with biases, GELU MLP, dropout 0.1
    BigCode, // GPT-2 layout with multi-query attention (SantaCoder, StarCoder)
    Falcon,  // parallel attention + MLP sharing one LayerNorm, multi-query attention
};

enum class MlpKind {
    GatedSilu,      // down(silu(gate(x)) * up(x))
    GatedGelu,      // down(gelu_tanh(gate(x)) * up(x)) (Gemma)
    Gelu,           // fc2(gelu(fc1(x))) with torch's fused gelu
    GeluTanhPython, // GPT-2's NewGELUActivation written in Python ops (saves more)
};

enum class NormKind {
    RmsNorm,           // HF LlamaRMSNorm: fp32 upcast, result cast back, then weight
    RmsNormFp32,       // Gemma: whole norm including the weight in fp32
    LayerNorm,         // torch.nn.LayerNorm with weight and bias
    LayerNormNoParams, // OLMo-1: non-parametric LayerNorm
};

enum class PositionKind { Rotary, Learned };

// A decoder-only transformer, exactly as far as memory is concerned. Field names follow Hugging Face
// config.json where one exists.
struct ModelArchitecture
{
    ModelFamily family = ModelFamily::Llama;
    MlpKind mlp = MlpKind::GatedSilu;
    NormKind norm = NormKind::RmsNorm;
    PositionKind positions = PositionKind::Rotary;

    std::int64_t layers = 32;
    std::int64_t hidden_size = 4096;
    std::int64_t intermediate_size = 11008; // per expert for MoE models
    std::int64_t attention_heads = 32;
    std::int64_t kv_heads = 32;
    std::int64_t head_dim = 128;
    std::int64_t vocab_size = 32000;
    std::int64_t max_position_embeddings = 4096; // parameters only with learned positions
    // The longest sequence the model handles: max_position_embeddings as a preset or config.json
    // states it, times the scenario's RoPE scaling factor; 0 when unknown (quick mode). It costs
    // no memory; the fit solvers stop there and the app warns beyond it.
    std::int64_t context_length = 0;
    bool tied_embeddings = false;

    bool qkv_bias = false;            // Qwen2, GPT-2
    bool o_bias = false;              // GPT-2
    bool mlp_bias = false;            // GPT-2, StarCoder
    bool qk_norm = false;             // Qwen3, Gemma-3, OLMo-2: RMSNorm over head_dim on q and k
    std::int64_t norms_per_layer = 2; // Gemma-2/3: 4; Falcon-7B: 1
    bool parallel_attention = false;  // Falcon / GPT-J: attention and MLP read the same norm output

    std::int64_t experts = 1; // mixture of experts when > 1
    std::int64_t experts_per_token = 1;

    double attention_dropout = 0.0; // dropout on attention probabilities (GPT-2: 0.1)
    double hidden_dropout
        = 0.0; // dropout after attention and MLP outputs and embeddings (GPT-2: 0.1)

    // What a pipeline stage holds of the model (pipeline_parallel.h): the first stage the
    // embedding, the last the final norm and lm_head (a tied lm_head as its own copy of the
    // embedding, as Megatron-LM keeps it). The whole model holds both. Not a config.json field.
    bool holds_embedding = true;
    bool holds_head = true;
    // Whether tensor parallelism splits the embedding's vocabulary over its ranks (Megatron-LM,
    // torchtitan's RowwiseParallel). transformers' tp_plan leaves an untied embed_tokens whole on
    // every rank (resolveStackChoices). Not a config.json field.
    bool tensor_parallel_embedding = true;

    bool isMoe() const { return experts > 1; }
    bool isGatedMlp() const { return mlp == MlpKind::GatedSilu || mlp == MlpKind::GatedGelu; }
};

// Style defaults of a family (MLP, norm, positions, dropout, biases).
void applyFamilyDefaults(ModelArchitecture &arch, ModelFamily family);

const char *familyName(ModelFamily family);
bool parseFamily(const std::string &text, ModelFamily &out);
const char *mlpName(MlpKind kind);
bool parseMlp(const std::string &text, MlpKind &out);
const char *normName(NormKind kind);
bool parseNorm(const std::string &text, NormKind &out);
const char *positionName(PositionKind kind);
bool parsePosition(const std::string &text, PositionKind &out);

// Whether transformers runs the family through Llama's modelling code (modeling_llama.py and the
// families copied from it: separate q/k/v, repeat_kv, eager_attention_forward), as Gemma too.
inline bool isLlamaStyle(const ModelArchitecture &arch)
{
    return arch.family == ModelFamily::Llama || arch.family == ModelFamily::Gemma;
}

// Derives a plausible Llama-style architecture for a bare parameter count (quick mode): width grows
// with the cube root of the size, depth follows the Llama aspect ratio, the MLP width absorbs the
// remainder so the total lands within a fraction of a percent of the request.
ModelArchitecture quickArchitecture(double parameters);

} // namespace membudget
