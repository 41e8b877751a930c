// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/weight_format.h"

#include "base/enum_names.h"

#include <algorithm>
#include <cmath>

namespace membudget {

const char *const kFp8ScalesNames[3] = {"per-tensor", "per-channel", "block"};
const char *const kQuantComputeDtypeNames[4] = {"auto", "bf16", "fp16", "fp32"};

const char *fp8ScalesName(Fp8Scales v)
{
    return kFp8ScalesNames[static_cast<int>(v)];
}
bool parseFp8Scales(const std::string &s, Fp8Scales &v)
{
    return parseEnumName(kFp8ScalesNames, s, v);
}
const char *quantComputeDtypeName(QuantComputeDtype v)
{
    return kQuantComputeDtypeNames[static_cast<int>(v)];
}
bool parseQuantComputeDtype(const std::string &s, QuantComputeDtype &v)
{
    return parseEnumName(kQuantComputeDtypeNames, s, v);
}

bool isBitsandbytes(Quantization q)
{
    return q == Quantization::Int8 || isBitsandbytes4bit(q);
}

bool isBitsandbytes4bit(Quantization q)
{
    return q == Quantization::Nf4 || q == Quantization::Nf4Double || q == Quantization::Fp4
           || q == Quantization::Fp4Double;
}

QuantKernel quantKernel(Quantization q)
{
    switch (q) {
    case Quantization::None:
        return QuantKernel::Plain;
    case Quantization::Int8:
    case Quantization::Nf4:
    case Quantization::Nf4Double:
    case Quantization::Fp4:
    case Quantization::Fp4Double:
        return QuantKernel::Bitsandbytes;
    case Quantization::Hqq:
    case Quantization::TorchaoInt8:
        return QuantKernel::Dequantize;
    case Quantization::Awq:
        return QuantKernel::DequantizeFrom1024;
    case Quantization::Fp8:
        return QuantKernel::Fp8Input;
    case Quantization::Gptq:
    case Quantization::TorchaoInt4:
    case Quantization::Q4K:
    case Quantization::Q5K:
    case Quantization::Q6K:
    case Quantization::Q8_0:
        return QuantKernel::Fused;
    }
    return QuantKernel::Plain;
}

std::int64_t quantBits(Quantization q, const QuantizationOptions &o)
{
    if ((q == Quantization::Gptq || q == Quantization::Hqq) && o.bits > 0)
        return o.bits;
    switch (q) {
    case Quantization::None:
        return 16;
    case Quantization::Int8:
    case Quantization::Fp8:
    case Quantization::TorchaoInt8:
    case Quantization::Q8_0:
        return 8;
    case Quantization::Q5K:
        return 5;
    case Quantization::Q6K:
        return 6;
    default:
        return 4;
    }
}

// GPTQ, AWQ and torchao int4 default to groups of 128 input columns, HQQ to 64 (transformers
// GPTQConfig, AwqConfig, TorchAoConfig int4_weight_only, HqqConfig).
std::int64_t quantGroupSize(Quantization q, const QuantizationOptions &o, double in)
{
    const auto whole = static_cast<std::int64_t>(in);
    if (o.group_size < 0)
        return whole;
    if (o.group_size > 0)
        return o.group_size;
    return q == Quantization::Hqq ? 64 : 128;
}

namespace {

// bitsandbytes 4-bit (NF4 and FP4 alike: QLoRA, Dettmers et al. 2023, arXiv:2305.14314, section 3;
// bitsandbytes functional.py quantize_4bit, blocksize 64): packed codes and an fp32 absmax per 64;
// double quantization stores the absmax in 8 bits with an fp32 constant per 256 blocks.
double bitsandbytes4bit(bool nested, double n)
{
    const double blocks = std::ceil(n / 64.0);
    if (!nested)
        return n / 2 + 4 * blocks;
    return n / 2 + blocks + 4 * std::ceil(blocks / 256.0);
}

// GPTQ (Frantar et al. 2022, arXiv:2210.17323) as AutoGPTQ / GPTQModel store it
// (nn_modules/qlinear QuantLinear buffers): qweight int32 [in * bits / 32, out], qzeros int32
// [groups, out * bits / 32], scales fp16 [groups, out], g_idx int32 [in].
double gptq(double bits, double group, double in, double out)
{
    const double groups = std::ceil(in / group);
    return in * out * bits / 8 + groups * out * bits / 8 + groups * out * 2 + 4 * in;
}

// HQQ (hqq/core/quantize.py, bitpack.py): codes packed 2 per byte (4-bit), 4 (2-bit), 8 (1-bit),
// 10 per int32 (3-bit) or one byte (8-bit); a scale and a zero point per group in the compute dtype
// (HqqConfig defaults: quant_scale and quant_zero off).
double hqq(double bits, double group, double n)
{
    const double codes = bits == 3 ? 4 * std::ceil(n / 10.0) : n * bits / 8;
    return codes + std::ceil(n / group) * 4;
}

// fp8 e4m3 weights with fp32 scales: one per tensor (compressed-tensors), per output row (FBGEMM
// fp8, compressed-tensors channel) or per 128 x 128 block (transformers FineGrainedFP8Config).
double fp8(Fp8Scales scales, double in, double out)
{
    switch (scales) {
    case Fp8Scales::PerTensor:
        return in * out + 4;
    case Fp8Scales::PerChannel:
        return in * out + 4 * out;
    case Fp8Scales::Block:
        return in * out + 4 * std::ceil(in / 128.0) * std::ceil(out / 128.0);
    }
    return in * out;
}

// llama.cpp ggml-common.h block layouts (superblocks of QK_K = 256 weights): block_q4_K 144 bytes
// (4.5 bits), block_q5_K 176 (5.5), block_q6_K 210 (6.5625); block_q8_0 34 bytes per 32 (8.5).
double ggml(Quantization q, double n)
{
    switch (q) {
    case Quantization::Q4K:
        return std::ceil(n / 256.0) * 144;
    case Quantization::Q5K:
        return std::ceil(n / 256.0) * 176;
    case Quantization::Q6K:
        return std::ceil(n / 256.0) * 210;
    case Quantization::Q8_0:
        return std::ceil(n / 32.0) * 34;
    default:
        return 0;
    }
}

double oneMatrix(Quantization q, const QuantizationOptions &o, double in, double out)
{
    const double n = in * out;
    const double bits = static_cast<double>(quantBits(q, o));
    const double group = static_cast<double>(quantGroupSize(q, o, in));
    switch (q) {
    case Quantization::None:
        return 2 * n;
    case Quantization::Int8: // LLM.int8 (Dettmers et al. 2022): int8 plus an fp32 scale per row
        return n + 4 * out;
    case Quantization::Nf4:
    case Quantization::Fp4:
        return bitsandbytes4bit(false, n);
    case Quantization::Nf4Double:
    case Quantization::Fp4Double:
        return bitsandbytes4bit(true, n);
    case Quantization::Gptq:
        return gptq(bits, group, in, out);
    case Quantization::Awq: // AutoAWQ WQLinear_GEMM: qweight and qzeros int32-packed, fp16 scales
        return n / 2 + std::ceil(in / group) * out * (0.5 + 2);
    case Quantization::Fp8:
        return fp8(o.fp8_scales, in, out);
    case Quantization::Hqq:
        return hqq(bits, group, n);
    case Quantization::TorchaoInt4: // tinygemm: packed int4 + bf16 scale and zero per group and row
        return n / 2 + std::ceil(in / group) * out * 4;
    case Quantization::TorchaoInt8: // int8 per row: a scale in the weight dtype, an int64 zero
        return n + out * (2 + 8);
    case Quantization::Q4K:
    case Quantization::Q5K:
    case Quantization::Q6K:
    case Quantization::Q8_0:
        return ggml(q, n);
    }
    return 2 * n;
}

} // namespace

double quantizedMatrixBytes(
    Quantization q, const QuantizationOptions &o, double in, double out, double count)
{
    return count * oneMatrix(q, o, in, out);
}

double quantizedBitsPerWeight(Quantization q, const QuantizationOptions &o, double in, double out)
{
    const double n = in * out;
    return n > 0 ? 8 * oneMatrix(q, o, in, out) / n : 0;
}

double layoutBitsPerWeight(const ParameterLayout &layout,
                           Quantization q,
                           const QuantizationOptions &o)
{
    double bytes = 0, elements = 0;
    for (const TensorGroup &g : layout) {
        const bool head = g.role == TensorRole::LmHead;
        if (!(head ? o.lm_head : g.linear))
            continue;
        const double count = static_cast<double>(g.count);
        bytes += quantizedMatrixBytes(q,
                                      o,
                                      static_cast<double>(g.rows),
                                      static_cast<double>(g.cols),
                                      count);
        elements += g.totalElements();
    }
    return elements > 0 ? 8 * bytes / elements : 0;
}

// bitsandbytes matmul_4bit (autograd/_functions.py): an input of one row that needs no gradient
// goes to gemv_4bit, which reads the packed weight; anything else to MatMul4Bit, which dequantizes.
// AutoAWQ gemm.py: FP16_MATMUL_HEURISTIC_CONDITION = tokens >= 1024.
bool linearRunsAsMatmul(Quantization q, double tokens, bool gradients)
{
    if (q == Quantization::None)
        return true;
    if (q == Quantization::Int8)
        return false; // bitsandbytes' int8 matmul
    return dequantizesWeight(q, tokens, gradients) && quantKernel(q) != QuantKernel::Fp8Input;
}

bool dequantizesWeight(Quantization q, double tokens, bool gradients)
{
    switch (quantKernel(q)) {
    case QuantKernel::Bitsandbytes:
        return q == Quantization::Int8 || tokens > 1 || gradients;
    case QuantKernel::Dequantize:
        return true;
    case QuantKernel::DequantizeFrom1024:
        return tokens >= 1024;
    default:
        return false;
    }
}

const char *weightFormatSource(Quantization q)
{
    switch (q) {
    case Quantization::None:
        return "";
    case Quantization::Int8:
        return "Dettmers et al. 2022 (LLM.int8), bitsandbytes Int8Params";
    case Quantization::Nf4:
    case Quantization::Nf4Double:
    case Quantization::Fp4:
    case Quantization::Fp4Double:
        return "Dettmers et al. 2023 (QLoRA, section 3), bitsandbytes quantize_4bit";
    case Quantization::Gptq:
        return "AutoGPTQ / GPTQModel QuantLinear (qweight, qzeros, scales, g_idx)";
    case Quantization::Awq:
        return "AutoAWQ WQLinear_GEMM (qweight, qzeros, scales)";
    case Quantization::Fp8:
        return "float8 e4m3 with fp32 scales (FBGEMM fp8, compressed-tensors, FineGrainedFP8)";
    case Quantization::Hqq:
        return "HQQ hqq/core/quantize.py and bitpack.py";
    case Quantization::TorchaoInt4:
        return "torchao int4_weight_only (tinygemm TensorCoreTiledLayout)";
    case Quantization::TorchaoInt8:
        return "torchao int8_weight_only (per-row affine)";
    case Quantization::Q4K:
    case Quantization::Q5K:
    case Quantization::Q6K:
    case Quantization::Q8_0:
        return "llama.cpp ggml-common.h block layouts";
    }
    return "";
}

} // namespace membudget
