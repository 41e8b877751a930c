// SPDX-License-Identifier: GPL-3.0-or-later
#include "advice/technique_ladder.h"

namespace membudget {

std::vector<LadderStep> techniqueLadder(const EstimateInput &input)
{
    std::vector<LadderStep> steps;
    EstimateInput e = input;
    if (e.training.mode == Mode::Inference) {
        e.training.quantization = Quantization::None;
        e.training.precision = Precision::Fp32;
        e.training.attention = Attention::Eager;
        steps.push_back({"naive", "fp32 weights, eager attention", e});
        e.training.precision = Precision::Bf16;
        steps.push_back({"+ bf16", "16-bit weights and KV cache", e});
        e.training.attention = Attention::Flash;
        steps.push_back({"+ flash attention", "no s x s attention scores", e});
        e.training.quantization = Quantization::Int8;
        steps.push_back({"+ int8 weights", "LLM.int8 weights", e});
        e.training.quantization = Quantization::Nf4;
        steps.push_back({"+ NF4 weights", "4-bit NormalFloat weights", e});
        return steps;
    }
    e.training.method = Method::Full;
    e.training.quantization = Quantization::None;
    e.training.precision = Precision::Fp32;
    e.training.attention = Attention::Eager;
    e.training.optimizer = Optimizer::AdamW;
    e.training.checkpointing = Checkpointing::None;
    e.training.offload = {};
    e.training.loss = LossImplementation::Hf;
    steps.push_back({"naive", "fp32, eager attention, AdamW, full fine-tuning", e});
    e.training.precision = Precision::Bf16;
    steps.push_back({"+ bf16", "weights, gradients and AdamW states in bf16", e});
    e.training.checkpointing = Checkpointing::Full;
    e.training.checkpoint_every = 1;
    steps.push_back({"+ checkpointing", "keep only each layer's input, recompute in backward", e});
    e.training.attention = Attention::Flash;
    steps.push_back({"+ flash attention", "no s x s softmax kept", e});
    e.training.optimizer = Optimizer::AdamW8bit;
    steps.push_back({"+ 8-bit AdamW", "block-wise 8-bit optimizer states", e});
    e.training.method = Method::Lora;
    if (input.training.method == Method::Full) {
        e.training.lora.rank = 16;
        e.training.lora.targets = TargetAllLinear;
    }
    steps.push_back(
        {"+ LoRA", "frozen base, rank-" + std::to_string(e.training.lora.rank) + " adapters", e});
    e.training.method = Method::Qlora;
    e.training.quantization = Quantization::Nf4;
    steps.push_back({"+ QLoRA", "frozen base in 4-bit NF4", e});
    e.training.loss = LossImplementation::Chunked;
    steps.push_back({"+ chunked loss", "cross-entropy in chunks: no whole fp32 logits", e});
    return steps;
}

} // namespace membudget
