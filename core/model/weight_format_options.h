// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>

namespace membudget {

// Where an fp8 weight keeps its fp32 scales: one per tensor, one per output row, or one per 128 x 128
// block (transformers FineGrainedFP8Config, DeepSeek-V3's checkpoints).
enum class Fp8Scales { PerTensor, PerChannel, Block };

// bitsandbytes' bnb_4bit_compute_dtype: what a 4-bit (or 8-bit) weight is dequantized to for its
// matmul. Auto: the run's 16-bit type; only fp32 changes any size (bitsandbytes dequantizes to the
// dtype the weights were loaded in, then .to(fp32): a second, larger copy).
enum class QuantComputeDtype { Auto, Bf16, Fp16, Fp32 };

// The knobs of a quantized weight format (docs/scenario-format.md, quantization_options).
struct QuantizationOptions
{
    std::int64_t bits = 0;       // gptq 2, 3, 4, 8 / hqq 1, 2, 3, 4, 8; 0: the format's default (4)
    std::int64_t group_size = 0; // 0: the format's default; -1: one group per column (gptq, hqq)
    Fp8Scales fp8_scales = Fp8Scales::PerChannel;
    bool lm_head = false; // lm_head quantized too (GPTQModel lm_head=True; otherwise 16-bit)
    QuantComputeDtype compute_dtype = QuantComputeDtype::Auto;

    bool operator==(const QuantizationOptions &) const = default;
};

extern const char *const kFp8ScalesNames[3];
extern const char *const kQuantComputeDtypeNames[4];
const char *fp8ScalesName(Fp8Scales v);
bool parseFp8Scales(const std::string &s, Fp8Scales &v);
const char *quantComputeDtypeName(QuantComputeDtype v);
bool parseQuantComputeDtype(const std::string &s, QuantComputeDtype &v);

} // namespace membudget
