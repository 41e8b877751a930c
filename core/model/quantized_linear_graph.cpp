// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/quantized_linear_graph.h"

#include "model/weight_format.h"

namespace membudget {

namespace {

void markWeightCopy(GraphBuilder &b, int t)
{
    b.graph().tensors[static_cast<std::size_t>(t)].use = TensorUse::WeightCopy;
}

// bitsandbytes Linear4bit.forward casts x to bnb_4bit_compute_dtype; MatMul4Bit dequantizes the
// weight to the dtype it was loaded in and .to(x.dtype) (autograd/_functions.py), and the result is
// cast back to the input's dtype. A single row without autograd goes to gemv_4bit instead.
int bitsandbytesMatmul(GraphBuilder &b,
                       const GraphPrecision &p,
                       int x,
                       int w,
                       double n,
                       SizeExpr out,
                       const char *name,
                       bool dequantize)
{
    // The input is cast to the compute dtype and the output back to the input's dtype, so an fp32
    // stream (PEFT's k-bit preparation) stays fp32 around a 16-bit matmul.
    const bool fp32 = p.quant_compute == 4 && isBitsandbytes4bit(p.quantization);
    const double computeBytes = fp32 ? 4 : p.compute;
    const double inBytes = b.elementBytes(x);
    const int xc = inBytes != computeBytes ? b.cast(x, computeBytes, "4-bit input cast") : x;
    int weight = w;
    if (dequantize) {
        weight = b.copy(w, SizeExpr::constant(n), p.dequantized, "dequantized weight");
        markWeightCopy(b, weight);
        if (fp32) {
            weight = b.cast(weight, 4, "dequantized weight in the compute dtype");
            markWeightCopy(b, weight);
        }
    }
    int y = b.matmul(xc, weight, out, computeBytes, name);
    b.lastOp().saves.clear();
    const double scratch = p.dequantized + (fp32 ? 4 : 0);
    b.lastOp().backward_workspace = SizeExpr::constant(scratch * n);
    if (inBytes != computeBytes)
        y = b.cast(y, inBytes, "4-bit output cast");
    return y;
}

} // namespace

int quantizedMatmul(GraphBuilder &b,
                    const GraphPrecision &p,
                    int x,
                    int w,
                    double n,
                    SizeExpr out,
                    const char *name,
                    double tokens)
{
    const bool dequantize = dequantizesWeight(p.quantization, tokens, p.train);
    const QuantKernel kernel = quantKernel(p.quantization);
    if (kernel == QuantKernel::Bitsandbytes)
        return bitsandbytesMatmul(b, p, x, w, n, out, name, dequantize);
    int input = x;
    int weight = w;
    if (kernel == QuantKernel::Fp8Input) {
        // Per-token dynamic quantization of the input for torch._scaled_mm (FBGEMM fp8,
        // compressed-tensors W8A8): fp8 codes (and an fp32 scale per token, not counted).
        input = b.copy(x, b.elements(x), 1, "input quantized to fp8");
    } else if (dequantize) {
        // HQQ forward_pytorch (W_est = dequantize()), torchao int8 eager (w.to(x.dtype)), AutoAWQ
        // from 1024 tokens (dequantize_weights_cuda): the whole weight in the compute dtype.
        weight = b.copy(w, SizeExpr::constant(n), p.compute, "dequantized weight");
        markWeightCopy(b, weight);
    }
    const int y = b.matmul(input, weight, out, p.compute, name);
    b.lastOp().saves.clear();
    if (p.train) // the backward needs the weight in the compute dtype again
        b.lastOp().backward_workspace = SizeExpr::constant(p.compute * n);
    return y;
}

} // namespace membudget
