// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/training_options.h"

namespace membudget {

// Element sizes and switches that decide which tensors a step makes and keeps (the dtypes of
// Hugging Face transformers + PEFT + PyTorch 2.x on CUDA under each precision).
struct GraphPrecision
{
    double compute = 2;        // matmul outputs: 4 in fp32, else 2 (autocast computes in 16-bit)
    double stream = 2;         // residual stream and norms: 4 in fp32 and AMP (fp32 weights)
    double weight = 2;         // weight storage: 4 in fp32 and AMP
    double grad = 2;           // a full fine-tuning gradient: the weight's dtype
    double adapter = 4;        // LoRA: PEFT casts the adapter input to the adapter weights' dtype
    double adapter_weight = 4; // LoRA adapter weights and their gradients
    bool amp = false;          // autocast: F.linear casts fp32 inputs (and weights) to 16-bit
    // accelerate's autocast around a Trainer's forward on 16-bit weights too (bf16=True): in the
    // decoder it moves only fp32 LoRA adapters (adapterAutocast); TRL's chunked loss upcasts
    bool trainer_autocast = false;
    bool float8 = false;    // torchao Float8Linear decoder-layer linears (training.float8)
    bool train = true;      // a training step (autograd on)
    bool train_base = true; // full fine-tuning: base weights require gradients
    bool lora = false;      // LoRA / QLoRA adapters
    unsigned lora_targets = 0;
    double lora_rank = 0;
    double lora_dropout = 0;
    bool dora = false; // DoRA's magnitude and weight norm on every LoRA adapter
    bool ia3 = false;  // IA3 vectors
    unsigned ia3_targets = 0;
    Quantization quantization = Quantization::None; // frozen base weights stored quantized
    // PEFT prepare_model_for_kbit_training (QLoRA): the non-quantized parameters are fp32, so the
    // norms' outputs and the residual stream are fp32; the Trainer's autocast still runs the
    // matmuls in 16-bit unless the scenario says trainer_mixed_precision: false.
    bool kbit_upcast = false;
    double head_weight = 2;               // bytes per element of the embedding and lm_head weights
    bool head_gathered_per_chunk = false; // TRL's chunked loss gathers a ZeRO-3 lm_head per chunk
    QuantizationOptions quantization_options;
    double dequantized = 2;   // the dtype a quantized weight is dequantized to (the load dtype)
    double quant_compute = 2; // bitsandbytes' compute dtype: 4 with bnb_4bit_compute_dtype fp32

    // Whether lora_A and lora_B run under autocast: AMP, or a Trainer's bf16/fp16 flag with fp32
    // adapters (on 16-bit adapters that autocast changes nothing).
    bool adapterAutocast() const { return amp || (trainer_autocast && adapter_weight == 4); }
};

GraphPrecision graphPrecision(const TrainingConfig &training);

} // namespace membudget
