// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/graph_precision.h"

#include "model/stack_profile.h"

namespace membudget {

GraphPrecision graphPrecision(const TrainingConfig &t)
{
    GraphPrecision p;
    const bool fp32Weights = t.precision == Precision::Fp32 || isAmp(t.precision);
    p.amp = isAmp(t.precision);
    p.trainer_autocast = t.trainer_autocast;
    p.compute = t.precision == Precision::Fp32 ? 4 : 2;
    p.stream = fp32Weights ? 4 : 2;
    p.weight = fp32Weights ? 4 : 2;
    p.grad = p.weight;
    p.train = t.mode == Mode::Train;
    p.train_base = p.train && t.method == Method::Full;
    p.lora = p.train && (t.method == Method::Lora || t.method == Method::Qlora);
    p.float8 = p.train && t.float8;
    p.dora = p.lora && t.lora.use_dora;
    p.ia3 = p.train && t.method == Method::Ia3;
    p.ia3_targets = t.ia3.targets;
    p.lora_targets = t.lora.targets;
    p.lora_rank = static_cast<double>(t.lora.rank);
    p.lora_dropout = t.lora.dropout;
    p.adapter = t.lora.adapter_precision == AdapterPrecision::Fp32 ? 4 : p.compute;
    p.adapter_weight = t.lora.adapter_precision == AdapterPrecision::Fp32 ? 4 : p.weight;
    const bool quantized = t.mode == Mode::Inference || t.method == Method::Qlora
                           || t.method == Method::Ia3;
    p.quantization = quantized ? t.quantization : Quantization::None;
    p.head_weight = p.weight;
    p.head_gathered_per_chunk = p.train && t.head_gathered_per_chunk;
    if (kbitUpcast(t)) {
        // peft/utils/other.py: every fp16/bf16 parameter that is not quantized becomes fp32;
        // the Trainer's bf16/fp16 flag still autocasts (accelerate's autocast around forward).
        p.kbit_upcast = true;
        p.amp = t.precision != Precision::Fp32 && t.trainer_mixed_precision.value_or(true);
        p.compute = p.amp ? 2 : 4;
        p.stream = 4;
        p.weight = 4;
        p.head_weight = kbitKeepsHead16bit(t) ? 2 : 4;
    }
    p.quantization_options = t.quantization_options;
    const bool fp32Compute = t.quantization_options.compute_dtype == QuantComputeDtype::Fp32;
    p.quant_compute = fp32Compute ? 4 : 2;
    return p;
}

} // namespace membudget
