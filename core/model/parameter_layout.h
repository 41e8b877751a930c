// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/model_architecture.h"
#include "model/training_options.h"

#include <array>
#include <cstdint>

namespace membudget {

enum class TensorRole {
    Embedding,
    PositionEmbedding,
    LmHead,
    Norm, // per-layer norm weights (and biases)
    FinalNorm,
    QkNorm,
    Query,
    Key,
    Value,
    QueryKeyValue, // fused c_attn / query_key_value
    Output,
    Gate,
    Up,
    Down,
    Router,
    Bias, // linear biases, kept apart from their matrices
};

// A set of identical parameter tensors: `count` tensors of shape rows x cols (cols == 1 for vectors).
struct TensorGroup
{
    TensorRole role = TensorRole::Bias;
    std::int64_t rows = 0; // in_features for linear weights
    std::int64_t cols = 1; // out_features for linear weights
    std::int64_t count = 0;
    bool linear = false;    // a linear layer's weight matrix: quantizable, a LoRA target candidate
    unsigned lora_bits = 0; // LoraTarget bits that select this matrix
    bool tensor_parallel_split = false; // divided over tensor-parallel ranks (Megatron layout)

    double elements() const { return static_cast<double>(rows) * static_cast<double>(cols); }
    double totalElements() const { return elements() * static_cast<double>(count); }
};

// Every parameter tensor of a model, grouped. Parameter counts of published models come out exact:
// Llama-2-7B 6,738,415,616; Llama-3-8B 8,030,261,248; Mistral-7B-v0.1 7,241,732,096.
struct ParameterLayout
{
    std::array<TensorGroup, 24> groups{};
    int group_count = 0;
    double total = 0;          // all parameters (tied embeddings once)
    double per_layer = 0;      // one decoder layer
    double active = 0;         // used per token (MoE: experts_per_token of the experts)
    double largest_tensor = 0; // elements of the largest single tensor
    double largest_linear = 0; // elements of the largest linear weight inside a layer

    const TensorGroup *begin() const { return groups.data(); }
    const TensorGroup *end() const { return groups.data() + group_count; }
};

ParameterLayout parameterLayout(const ModelArchitecture &arch);

// Whether the linear layers of this role add a bias (Qwen2's q/k/v, GPT-2's every linear).
bool linearHasBias(const ModelArchitecture &arch, TensorRole role);

// Trainable LoRA parameters: rank x (in + out) for each targeted matrix.
double loraParameters(const ParameterLayout &layout, unsigned targets, std::int64_t rank);

// Trainable parameters of the scenario's adapters: LoRA (with DoRA's magnitudes) or IA3.
double adapterParameters(const ParameterLayout &layout, const TrainingConfig &training);

} // namespace membudget
