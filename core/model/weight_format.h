// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/parameter_layout.h"
#include "model/training_options.h"

namespace membudget {

// How a quantized linear layer runs its matmul, which decides what it allocates besides its output.
enum class QuantKernel {
    Plain,        // not quantized: F.linear on the stored weight
    Bitsandbytes, // MatMul4Bit / MatMul8bitLt: the whole weight dequantized for every matmul; one
                  // token without autograd (decoding one sequence) reads 4-bit weights packed
    Dequantize,   // the whole weight dequantized for every matmul (HQQ's PyTorch backend, torchao
                  // int8 weight-only in eager mode)
    DequantizeFrom1024, // AutoAWQ GEMM: whole-weight dequantization from 1024 tokens, fused below
    Fused,              // reads the packed weight in the kernel (GPTQ Marlin / ExLlamaV2, torchao
                        // tinygemm int4, llama.cpp k-quants)
    Fp8Input,           // W8A8: the input is quantized per token to fp8 for torch._scaled_mm
};

QuantKernel quantKernel(Quantization q);
bool isBitsandbytes(Quantization q);
// Whether `q` stores 4-bit codes that bnb_4bit_compute_dtype applies to (nf4 and fp4).
bool isBitsandbytes4bit(Quantization q);

// Bits per weight and group size in effect (the format's defaults where the options say 0).
std::int64_t quantBits(Quantization q, const QuantizationOptions &o);
std::int64_t quantGroupSize(Quantization q, const QuantizationOptions &o, double in);

// Bytes of `count` quantized matrices of `in` x `out` weights (F.linear's in_features x
// out_features), codes and every scale, zero point and index the format stores (sources in
// weight_format.cpp).
double quantizedMatrixBytes(
    Quantization q, const QuantizationOptions &o, double in, double out, double count);

// Average bits per weight of an `in` x `out` matrix, for people.
double quantizedBitsPerWeight(Quantization q, const QuantizationOptions &o, double in, double out);

// Average bits per weight over the matrices `q` stores quantized (the linear layers, and lm_head
// when the options say so), scales and zero points included.
double layoutBitsPerWeight(const ParameterLayout &layout,
                           Quantization q,
                           const QuantizationOptions &o);

// Whether a quantized matmul of `tokens` input rows makes a dequantized copy of its whole weight
// (`gradients`: the input needs a gradient, which rules out bitsandbytes' packed gemv).
bool dequantizesWeight(Quantization q, double tokens, bool gradients);

// Whether a linear layer on weights in this format reaches the GPU as aten.mm: F.linear on the
// stored or the dequantized weight (bitsandbytes' MatMul4Bit, HQQ, torchao); LLM.int8, fp8
// _scaled_mm and fused low-bit kernels are ops of their own. (A bias makes it addmm.)
bool linearRunsAsMatmul(Quantization q, double tokens, bool gradients);

// Where the format's layout is defined, for explanations.
const char *weightFormatSource(Quantization q);

} // namespace membudget
