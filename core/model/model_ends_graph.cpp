// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/model_ends_graph.h"

#include "model/dtensor_collective_graph.h"
#include "model/graph_builder.h"
#include "model/graph_precision.h"
#include "model/norm_graph.h"
#include "model/quantized_linear_graph.h"

#include <algorithm>
#include <cmath>

namespace membudget {

namespace {

SizeExpr tok(double width)
{
    return SizeExpr::perToken(width);
}

double parameterElements(const ParameterLayout &layout, TensorRole role, double tp)
{
    double n = 0;
    for (const TensorGroup &g : layout)
        if (g.role == role)
            n += g.totalElements() / (g.tensor_parallel_split ? tp : 1.0);
    return n;
}

// An integer tensor of the batch (token ids, labels), 8 bytes per token.
int ids(GraphBuilder &b, const char *name)
{
    const int source = b.shared("batch");
    const int t = b.copy(source, tok(1), 8, name);
    b.graph().tensors[static_cast<std::size_t>(t)].differentiable = false;
    return t;
}

int finalNorm(
    GraphBuilder &b, const ModelArchitecture &arch, const GraphPrecision &p, int x, double share)
{
    const double h = static_cast<double>(arch.hidden_size);
    const double perNorm = arch.norm == NormKind::LayerNorm ? 2 * h : h;
    const int w = arch.norm == NormKind::LayerNormNoParams
                      ? -1
                      : b.parameter("final norm", perNorm * p.grad, p.train_base);
    return addNorm(b, arch.norm, x, w, SizeExpr::perToken(share), "final norm");
}

// lm_head's weight (the embedding's when tied) as a parameter; `elements`: its values on this GPU.
int lmHeadParameter(GraphBuilder &b,
                    const ModelArchitecture &arch,
                    const GraphPrecision &p,
                    const ParameterLayout &layout,
                    double tp,
                    double &elements)
{
    const TensorRole role = arch.tied_embeddings ? TensorRole::Embedding : TensorRole::LmHead;
    elements = parameterElements(layout, role, tp);
    return b.parameter("lm_head", elements * p.grad, p.train_base);
}

// lm_head: F.linear over the final hidden states; under autocast the input and the (cached) weight
// are cast to 16-bit. Never quantized (bitsandbytes keeps lm_head in 16-bit).
int lmHead(GraphBuilder &b,
           const ModelArchitecture &arch,
           const GraphPrecision &p,
           int x,
           double vocab,
           const ParameterLayout &layout,
           double tp,
           double rows)
{
    const double h = static_cast<double>(arch.hidden_size);
    double elements = 0;
    const int w = lmHeadParameter(b, arch, p, layout, tp, elements);
    const SizeExpr out = b.elements(x) * (vocab / h);
    int logits;
    const bool quantized = p.quantization != Quantization::None && !arch.tied_embeddings
                           && p.quantization_options.lm_head;
    if (quantized) { // GPTQModel lm_head=True and the like: the head runs the format's kernel
        logits = quantizedMatmul(b, p, x, w, elements, out, "lm_head logits", rows);
    } else if (p.amp && p.head_weight == 4) {
        const int copy = b.autocastWeightCopy(w, elements, "autocast lm_head copy");
        logits = b.matmul(b.cast(x, 2, "autocast input copy"), copy, out, 2, "lm_head logits");
    } else {
        logits = b.matmul(p.amp ? b.cast(x, 2, "autocast input copy") : x,
                          w,
                          out,
                          p.amp ? 2 : p.compute,
                          "lm_head logits");
    }
    b.graph().tensors[static_cast<std::size_t>(logits)].use = TensorUse::Logits;
    return logits;
}

void markLogits(GraphBuilder &b, int t)
{
    b.graph().tensors[static_cast<std::size_t>(t)].use = TensorUse::Logits;
}

// log_softmax keeping its output for backward, then nll_loss over it, which keeps the (shifted,
// contiguous) int64 targets. Loss parallel (`vocabParallel`) runs DTensor's handlers instead
// (torch/distributed/tensor/parallel/loss.py): nll_loss's backward also does log_softmax's,
// `(grad_input + torch.exp(x)) * grad_output` with grad_input = zeros_like(x), so beside the
// saved log-probabilities x and the gradient it returns two more buffers of x's size live at once
// (grad_input, and exp(x) or the sum), and log_softmax's backward hands that gradient on
// unchanged (_log_softmax_backward_no_computation). The forward's shifted copy and exp(shifted)
// are not added: they pass below the backward's start.
int logSoftmaxNll(GraphBuilder &b, int x, double lsmBytes, bool vocabParallel)
{
    const SizeExpr n = b.elements(x);
    const int lsm = b.keepsOutput(x, n, lsmBytes, "log_softmax");
    markLogits(b, lsm);
    if (vocabParallel)
        b.lastOp().grad_passthrough = 1;
    const int targets = ids(b, "shifted labels");
    const int loss = b.scalarOp(lsm, SizeExpr::constant(1), 4, "nll_loss");
    b.lastOp().inputs.push_back(targets);
    b.lastOp().saves = {{targets, -1}};
    if (vocabParallel) {
        b.lastOp().backward_workspace = n * (2 * lsmBytes);
        b.lastOp().workspace_buffers = 2;
    }
    markLogits(b, targets);
    return loss;
}

// A tensor of the loss's chain (`elements` values of `elementBytes` bytes), no gradient of its own.
int lossTensor(GraphBuilder &b, const char *name, SizeExpr elements, double elementBytes)
{
    GraphTensor t;
    t.name = name;
    t.size = elements * elementBytes;
    t.element_bytes = elementBytes;
    t.use = TensorUse::Logits;
    t.differentiable = false;
    return b.graph().addTensor(t);
}

// logits.float() held until `upcastHold`, a shifted contiguous fp32 copy, log-softmax and NLL.
// logits[..., :-1, :].contiguous() and CrossEntropyLoss on it, after an upcast to `copyBytes`
// (none when the logits already have that size: then `upcastHold` is the logits' own); the
// log-softmax output in `lsmBytes`.
int shiftedCopyLoss(GraphBuilder &b,
                    int logits,
                    bool vocabParallel,
                    Hold upcastHold,
                    const char *upcastName,
                    double copyBytes = 4,
                    double lsmBytes = 4)
{
    const SizeExpr n = b.elements(logits);
    const int l32 = b.cast(logits, copyBytes, upcastName);
    markLogits(b, l32);
    b.graph().tensors[static_cast<std::size_t>(l32)].hold = upcastHold;
    const int shifted = b.copy(l32, n, copyBytes, "shift_logits contiguous");
    markLogits(b, shifted);
    return logSoftmaxNll(b, shifted, lsmBytes, vocabParallel);
}

int torchtuneChunkedLoss(GraphBuilder &b, int logits)
{
    constexpr double kChunks = 8; // CEWithChunkedOutputLoss(num_output_chunks=8)
    const SizeExpr n = b.elements(logits);
    b.graph().tensors[static_cast<std::size_t>(logits)].hold = Hold::ForwardEnd;
    const int targets = ids(b, "shifted labels");
    markLogits(b, targets);
    const int chunk = lossTensor(b, "logits chunk .float()", n * (1 / kChunks), 4);
    const int lsm = lossTensor(b, "log_softmax of every chunk", n, 4);
    const int loss = lossTensor(b, "chunked cross_entropy", SizeExpr::constant(1), 4);
    b.graph().tensors[static_cast<std::size_t>(loss)].differentiable = true;
    GraphOp &op = b.graph().addOp("chunked cross_entropy");
    op.inputs = {logits, targets};
    op.outputs = {chunk, lsm, loss};
    op.saves = {{lsm, -1}, {targets, -1}};
    op.backward_workspace = n * (2 * 4 / kChunks); // a chunk's fp32 gradient and its softmax
    return loss;
}

// torchtune's output layer and loss (measured on CPU by tools/measure/compare_timeline.py):
// TransformerDecoder with num_output_chunks runs the projection on each of 8 chunks of the hidden
// states (modules/transformer.py, chunked_output), and CEWithChunkedOutputLoss upcasts each chunk
// and keeps its fp32 log-softmax; the recipe deletes the 16-bit logits before backward. Autograd
// then runs every chunk's cross-entropy backward first (they were recorded last), one chunk's
// fp32 gradient and the log-softmax backward's output at a time while the log-softmaxes are freed
// one by one, leaving 16-bit gradients, and the projections' backward after. So the loss op hands
// no logits-sized gradient on (the chunks' 16-bit gradients are the projection op's workspace).
int torchtuneChunkedHead(GraphBuilder &b, const GraphPrecision &p, int x, int w, SizeExpr n)
{
    constexpr double kChunks = 8;
    const int logits = lossTensor(b, "lm_head logits, 8 chunks", n, p.compute);
    b.graph().tensors[static_cast<std::size_t>(logits)].differentiable = true;
    b.graph().tensors[static_cast<std::size_t>(logits)].hold = Hold::ForwardEnd;
    GraphOp &head = b.graph().addOp("lm_head over 8 chunks");
    head.inputs = {x, w};
    head.outputs = {logits};
    head.saves = {{x, 1}, {w, 0}};           // x for the weight's gradient, the weight for x's
    head.backward_workspace = n * p.compute; // every chunk's 16-bit gradient

    const int targets = ids(b, "shifted labels");
    markLogits(b, targets);
    const int loss = lossTensor(b, "chunked cross_entropy", SizeExpr::constant(1), 4);
    b.graph().tensors[static_cast<std::size_t>(loss)].differentiable = true;
    const int chunk = lossTensor(b, "logits chunk .float()", n * (1 / kChunks), 4);
    const int lsm = lossTensor(b, "log_softmax of every chunk", n, 4);
    GraphOp &ce = b.graph().addOp("chunked cross_entropy");
    ce.inputs = {logits, targets};
    ce.outputs = {loss, chunk, lsm};
    ce.saves = {{lsm, -1}, {targets, -1}};
    ce.grad_passthrough = 1u; // see above: no T x V gradient handed to the projections at once
    ce.backward_workspace = n * (2 * 4 / kChunks); // nll_loss_backward's and log_softmax's
    return loss;
}

// Liger's LigerFusedLinearCrossEntropyLoss (src/liger_kernel/ops/fused_linear_cross_entropy.py):
// the T x V logits never exist; tokens go through lm_head in chunks of T / ceil(V / H), so a
// chunk's logits are about T x H elements (Liger rounds the chunk up to a power of two: up to
// twice that, not counted); the cross-entropy kernel writes the logits' gradient in place and
// forward already computes grad_input (T x H, the input's dtype) and, when lm_head trains,
// grad_weight (V x H), both kept for backward.
int ligerFusedLoss(
    GraphBuilder &b, const GraphPrecision &p, int x, int w, double vocab, double h, double wElements)
{
    const SizeExpr n = b.elements(x);
    const double chunkTokens = 1.0 / std::max(1.0, std::ceil(vocab / h)); // of T
    const double logitBytes = p.amp ? 2 : p.compute;
    const int targets = ids(b, "shifted labels");
    markLogits(b, targets);
    const int c = lossTensor(b, "fused CE logits chunk", n * (vocab / h * chunkTokens), logitBytes);
    const int gradInput = lossTensor(b, "grad_input (fused CE)", n, b.elementBytes(x));
    int gradWeight = -1;
    if (p.train_base)
        gradWeight = lossTensor(b, "grad_weight (fused CE)", SizeExpr::constant(wElements), p.grad);
    const int loss = lossTensor(b, "fused linear cross_entropy", SizeExpr::constant(1), 4);
    b.graph().tensors[static_cast<std::size_t>(loss)].differentiable = true;
    GraphOp &op = b.graph().addOp("fused linear cross_entropy");
    op.inputs = {x, w, targets};
    op.outputs = {c, gradInput, loss};
    op.saves = {{gradInput, 0}};
    if (gradWeight >= 0) {
        op.outputs.push_back(gradWeight);
        op.saves.push_back({gradWeight, 1});
    }
    return loss;
}

// One chunk of TRL's chunked_nll (see trlChunkedNllHead): `h.float() @ w.float().t()` (under
// autocast the matmul casts both to 16-bit again and log_softmax its logits to fp32), log_softmax,
// nll_loss and the logged entropy, whose graph dies unused: its ops take no differentiable input
// here, so backward gives them nothing. `logits` and `log_p` are the chunk function's names, alive
// to its end. Autocast makes the 16-bit copy of the weight anew in every chunk, even of an fp32
// lm_head that trains: the matmul gets `w.t()`, a view, which autocast_mode.cpp's cached_cast does
// not cache (CPU harness, amp-bf16 full fine-tuning). Returns the chunk's loss.
int trlLossChunk(GraphBuilder &b,
                 const GraphPrecision &p,
                 int hidden,
                 int w,
                 int targets,
                 SizeExpr hiddenElements,
                 double wElements,
                 SizeExpr logitsElements)
{
    int hc = hidden; // a slice of it: .float() of an fp32 stream returns the view itself
    if (p.stream != 4)
        hc = b.copy(hidden, hiddenElements, 4, "hidden chunk .float()");
    // Under ZeRO-3 the matmul runs inside DeepSpeed's GatheredParameters on lm_head: the whole
    // weight is gathered for it and partitioned again when the context exits after it, in the
    // forward and again in the chunk's recomputation, before the chunk's backward.
    const int gathered = p.head_gathered_per_chunk ? b.copy(w,
                                                            SizeExpr::constant(wElements),
                                                            p.head_weight,
                                                            "lm_head GatheredParameters (ZeRO-3)")
                                                   : -1;
    if (gathered >= 0) { // the parameter's own storage for autograd: no gradient of its own
        GraphTensor &t = b.graph().tensors[static_cast<std::size_t>(gathered)];
        t.use = TensorUse::WeightCopy;
        t.differentiable = false;
    }
    int wc = w;
    if (p.head_weight != 4) {
        wc = b.copy(w, SizeExpr::constant(wElements), 4, "lm_head weight .float()");
        b.graph().tensors[static_cast<std::size_t>(wc)].use = TensorUse::WeightCopy;
    }
    int logits;
    int l32;
    if (p.amp || p.trainer_autocast) {
        // The expression's fp32 temporaries live until the matmul returns.
        const int h32 = hc, w32 = wc;
        hc = b.copy(hc, hiddenElements, 2, "autocast chunk copy");
        wc = b.copy(wc, SizeExpr::constant(wElements), 2, "autocast lm_head copy");
        b.graph().tensors[static_cast<std::size_t>(wc)].use = TensorUse::WeightCopy;
        logits = b.matmul(hc, wc, logitsElements, 2, "chunk logits");
        if (gathered >= 0)
            b.holdThroughLastOp(gathered);
        if (h32 != hidden)
            b.holdThroughLastOp(h32);
        if (w32 != w)
            b.holdThroughLastOp(w32);
        l32 = b.cast(logits, 4, "autocast chunk logits fp32");
        markLogits(b, l32);
    } else {
        logits = b.matmul(hc, wc, logitsElements, 4, "chunk logits");
        if (gathered >= 0)
            b.holdThroughLastOp(gathered);
        l32 = logits;
    }
    markLogits(b, logits);
    const int lsm = b.keepsOutput(l32, logitsElements, 4, "chunk log_softmax");
    markLogits(b, lsm);
    const int loss = b.scalarOp(lsm, SizeExpr::constant(1), 4, "chunk nll_loss");
    b.lastOp().inputs.push_back(targets);
    b.lastOp().saves = {{targets, -1}};
    const int e = lossTensor(b, "log_p.exp() (entropy)", logitsElements, 4);
    b.graph().addOp("log_p.exp() (entropy)").outputs = {e};
    const int product = lossTensor(b, "exp * log_p (entropy)", logitsElements, 4);
    GraphOp &mul = b.graph().addOp("exp * log_p (entropy)");
    mul.inputs = {e};
    mul.outputs = {product};
    const int entropy = lossTensor(b, "chunk entropy", SizeExpr::constant(1), 4);
    GraphOp &sum = b.graph().addOp("entropy sum");
    sum.inputs = {product};
    sum.outputs = {entropy};
    b.holdThroughLastOp(logits);
    b.holdThroughLastOp(lsm);
    return loss;
}

// TRL's SFTTrainer with loss_type "chunked_nll" (trl/trainer/sft_trainer.py,
// _chunked_cross_entropy_loss; PR #5575, the default from TRL 1.7, PR #5846; measured on CPU by
// tools/measure). The model stops at the final norm, whose output the patched forward keeps; the
// shifted hidden states are flattened (a copy) and gathered labelled tokens first (a copy that
// lives until backward is done with it), and each 256 of them go through lm_head and the loss in a
// non-reentrant torch.utils.checkpoint: nothing is kept in forward and each chunk runs again in
// backward, with a 16-bit weight's fp32 copy and, when lm_head trains, its fp32 gradient before
// the cast back. Two chunks are built: the one backward meets first, which makes the weight's and
// the hidden states' gradients, and one that adds into them, as every later chunk does.
int trlChunkedNllHead(
    GraphBuilder &b, const GraphPrecision &p, int x, int w, double vocab, double h, double wElements)
{
    const SizeExpr n = b.elements(x);
    const double bytes = b.elementBytes(x);
    const int flat = b.copy(x, n, bytes, "hidden[..., :-1, :].reshape");
    const int order = ids(b, "argsort order");
    const int sorted = b.copy(flat, n, bytes, "hidden[order]");
    b.lastOp().inputs.push_back(order);
    b.lastOp().saves = {{order, -1}};
    const int targets = ids(b, "labels[order]");
    markLogits(b, targets);
    constexpr double kTokens = kTrlLossChunkTokens;
    const SizeExpr chunkHidden = SizeExpr::constant(kTokens * h);
    const SizeExpr chunkLogits = SizeExpr::constant(kTokens * vocab);
    int loss = -1;
    for (int chunk = 0; chunk < 2; ++chunk) {
        const int first = static_cast<int>(b.graph().ops.size());
        const int chunkLoss
            = trlLossChunk(b, p, sorted, w, targets, chunkHidden, wElements, chunkLogits);
        b.addRegion(first);
        loss = loss < 0 ? chunkLoss : b.add(loss, chunkLoss, "loss + chunk_loss");
    }
    return loss;
}

// The causal-LM loss of each implementation (see LossImplementation).
//  hf: ForCausalLMLoss (transformers >= 4.46) upcasts the logits to fp32 inside the loss; the
//      model output (16-bit logits) is dropped by the Trainer when forward returns.
//  hf-legacy: LlamaForCausalLM before 4.46 returned logits.float() (kept by the training loop
//      through backward) and made a shifted contiguous fp32 copy for CrossEntropyLoss.
//  chunked: a chunked cross-entropy over 8 chunks: 16-bit logits kept, one chunk's fp32 chain
//      at a time in forward and in backward.
//  hf-4.46: ForCausalLMLoss of transformers 4.46 to 4.48 (src/transformers/loss/loss_utils.py):
//      logits.float(), then logits[..., :-1, :].contiguous(); the fp32 upcast lives until the
//      loss returns, next to the shifted copy and the log-softmax.
//  no-upcast: a model's own CrossEntropyLoss on its logits as they are, after the classic shift
//      (logits[..., :-1, :].contiguous()), as remote-code models do (Qwen (v1) modeling_qwen.py,
//      QWenLMHeadModel.forward): under a 16-bit model the copy and the log-softmax are 16-bit;
//      under autocast log_softmax runs in fp32 (autocast_mode.cpp's fp32 list), the copy not.
//  fp32-output: the model's forward ends in output(h).float() (the 16-bit logits die at the cast)
//      and the training loop drops that output before backward (torchtitan from PR #391,
//      2024-06-12, `del pred`, to PR #642, 2024-10-22, which moved .float() into the loss: hf's
//      bytes since; models/llama/model.py Transformer.forward, train.py); the labels come
//      shifted from the data loader, so F.cross_entropy takes the output as it is.
//  fp32-output-kept: the same, with the output kept by the loop through backward (torchtitan's
//      train.py before PR #391: `pred` lives until the step's end).
//  torchtune-chunked: CEWithChunkedOutputLoss (torchtune/modules/loss/ce_chunked_output_loss.py):
//      the model returns its 16-bit logits in 8 chunks and each chunk is upcast with .float()
//      before F.cross_entropy, whose log-softmax output autograd keeps: all 8 fp32 chunks live
//      until backward, one chunk's upcast at a time is a transient.
// cross_entropy on the logits cast to fp32 (`upcast`, held as `hold` says): the fp32 copy, the
// log_softmax it keeps for backward and the nll loss; the 16-bit logits die at the cast unless
// their caller holds them.
int upcastCrossEntropy(GraphBuilder &b, int logits, bool vocabParallel, const char *upcast, Hold hold)
{
    const int l32 = b.cast(logits, 4, upcast);
    markLogits(b, l32);
    b.graph().tensors[static_cast<std::size_t>(l32)].hold = hold;
    return logSoftmaxNll(b, l32, 4, vocabParallel);
}

int causalLmLoss(GraphBuilder &b,
                 const TrainingConfig &t,
                 const GraphPrecision &p,
                 int logits,
                 bool vocabParallel)
{
    const SizeExpr n = b.elements(logits);
    switch (t.loss) {
    case LossImplementation::Hf:
        b.graph().tensors[static_cast<std::size_t>(logits)].hold = Hold::ForwardEnd;
        return upcastCrossEntropy(b, logits, vocabParallel, "logits fp32 upcast", Hold::None);
    case LossImplementation::HfLegacy:
        return shiftedCopyLoss(b,
                               logits,
                               vocabParallel,
                               Hold::StepEnd,
                               "logits.float() (model output)");
    case LossImplementation::Hf446:
        b.graph().tensors[static_cast<std::size_t>(logits)].hold = Hold::ForwardEnd;
        return shiftedCopyLoss(b, logits, vocabParallel, Hold::ForwardEnd, "logits.float()");
    case LossImplementation::TorchtuneChunked:
        return torchtuneChunkedLoss(b, logits);
    case LossImplementation::NoUpcast: {
        const double bytes = b.elementBytes(logits);
        return shiftedCopyLoss(b,
                               logits,
                               vocabParallel,
                               Hold::ForwardEnd,
                               "logits",
                               bytes,
                               p.amp ? 4 : bytes);
    }
    case LossImplementation::Fp32Output:
        return upcastCrossEntropy(b, logits, vocabParallel, "output(h).float()", Hold::None);
    case LossImplementation::Fp32OutputKept:
        return upcastCrossEntropy(b, logits, vocabParallel, "output(h).float()", Hold::StepEnd);
    case LossImplementation::LigerFused:    // built with the projection (ligerFusedLoss)
    case LossImplementation::TrlChunkedNll: // ... (trlChunkedNllHead)
        return logits;
    case LossImplementation::Chunked: {
        const int targets = ids(b, "shifted labels");
        markLogits(b, targets);
        GraphTensor chunk;
        chunk.name = "loss chunk fp32 chain";
        chunk.size = n * ((p.compute == 4 ? 4 : 8) / 8.0);
        chunk.element_bytes = 4;
        chunk.use = TensorUse::Logits;
        chunk.differentiable = false;
        const int c = b.graph().addTensor(chunk);
        const int loss = b.scalarOp(logits, SizeExpr::constant(1), 4, "chunked cross_entropy");
        GraphOp &op = b.lastOp();
        op.inputs.push_back(targets);
        op.outputs.push_back(c);
        op.saves = {{logits, -1}, {targets, -1}};
        op.backward_workspace = n * (12 / 8.0);
        return loss;
    }
    }
    return logits;
}

} // namespace

OpGraph embeddingGraph(const ModelArchitecture &arch,
                       const TrainingConfig &training,
                       const ParameterLayout &layout,
                       TensorParallelPlan tensorParallel,
                       bool outputRequiresGrad)
{
    OpGraph g;
    GraphBuilder b(g);
    const GraphPrecision p = graphPrecision(training);
    const double tp = tensorParallel.ranks();
    const double h = static_cast<double>(arch.hidden_size);
    const double vocabElements = parameterElements(layout, TensorRole::Embedding, tp);
    const int w = b.parameter(kEmbeddingWeight, vocabElements * p.grad, p.train_base);
    b.graph().tensors[static_cast<std::size_t>(w)].grad_exists = arch.tied_embeddings;
    const int tokens = ids(b, "input ids");
    int x = b.matmul(tokens, w, tok(h), p.stream, "embedding lookup");
    b.lastOp().saves = {{tokens, 1}};
    if (outputRequiresGrad && !p.train_base && p.train)
        b.lastOp().inputs.push_back(b.shared("enable_input_require_grads hook", true));
    if (arch.positions == PositionKind::Learned) {
        const double posElements = parameterElements(layout, TensorRole::PositionEmbedding, tp);
        const int wp = b.parameter("position embedding", posElements * p.grad, p.train_base);
        const int positions = ids(b, "position ids");
        const int pe = b.matmul(positions, wp, tok(h), p.stream, "position lookup");
        b.lastOp().saves = {{positions, 1}};
        x = b.add(x, pe, "embeddings + positions");
    }
    if (tensorParallel.shardsSequence()) // RowwiseParallel(output_layouts=Shard(1)): torchtitan
        x = reduceScatterSequence(b,
                                  x,
                                  tok(h * tensorParallel.sequenceShare()),
                                  "embedding reduce-scatter");
    if (arch.family == ModelFamily::Gemma)
        x = b.scalarOp(x, b.elements(x), p.stream, "embeddings * sqrt(hidden)");
    x = b.dropout(x, arch.hidden_dropout, "embedding dropout");
    g.output = x;
    return g;
}

OpGraph headGraph(const ModelArchitecture &arch,
                  const TrainingConfig &training,
                  const ParameterLayout &layout,
                  TensorParallelPlan tensorParallel,
                  bool inputRequiresGrad)
{
    OpGraph g;
    GraphBuilder b(g);
    const GraphPrecision p = graphPrecision(training);
    const double tp = tensorParallel.ranks();
    const double share = tensorParallel.sequenceShare();
    const double h = static_cast<double>(arch.hidden_size);
    const double vocab = static_cast<double>(arch.vocab_size) / tp;
    const int x = b.input("last layer output", tok(h * share), p.stream, inputRequiresGrad);
    g.input = x;
    int normed = finalNorm(b, arch, p, x, share);
    if (!p.train) { // LlamaModel.forward's hidden_states: the last layer's output through the norm
        g.model_output_op = static_cast<int>(g.ops.size()) - 1;
        b.holdThroughLastOp(x);
    }
    if (p.train) // LlamaForCausalLM.forward holds the model's output while the loss is computed
        g.tensors[static_cast<std::size_t>(normed)].hold = Hold::ForwardEnd;
    if (share < 1) // ColwiseParallel(input_layouts=Shard(1)) on lm_head: the whole sequence
        normed = allGatherWithCopy(b, normed, tok(h), "sequence-parallel all-gather");
    int wholeOutput
        = -1;       // generate(): LlamaForCausalLM.forward's hidden_states, kept through lm_head
    if (!p.train) { // generate(): logits for the last position only (logits_to_keep=1), then fp32
        wholeOutput = normed;
        normed = b.copy(normed, SizeExpr::perSequence(h), b.elementBytes(normed), "last position");
    }
    if (p.train && training.loss == LossImplementation::LigerFused) {
        double elements = 0;
        const int w = lmHeadParameter(b, arch, p, layout, tp, elements);
        g.output = ligerFusedLoss(b, p, normed, w, vocab, h, elements);
        return g;
    }
    const bool quantizedHead = p.quantization != Quantization::None && !arch.tied_embeddings
                               && p.quantization_options.lm_head;
    if (p.train && training.loss == LossImplementation::TrlChunkedNll && !quantizedHead) {
        double elements = 0;
        int w = lmHeadParameter(b, arch, p, layout, tp, elements);
        double chunkVocab = vocab;
        if (tp > 1) {
            // A split lm_head is a DTensor (Shard(0)): TRL gathers it whole once with
            // full_tensor(), an all-gather along the rows into one buffer that every chunk's
            // checkpoint keeps until its backward (trl/trainer/sft_trainer.py, the patched
            // forward; PR #6077, TRL 1.7). The chunks then see the whole vocabulary.
            w = b.copy(w,
                       SizeExpr::constant(elements * tp),
                       p.head_weight,
                       "lm_head.weight.full_tensor()");
            b.graph().tensors[static_cast<std::size_t>(w)].use = TensorUse::WeightCopy;
            elements *= tp;
            chunkVocab *= tp;
        }
        g.output = trlChunkedNllHead(b, p, normed, w, chunkVocab, h, elements);
        return g;
    }
    if (p.train && training.loss == LossImplementation::TorchtuneChunked && !p.amp
        && !quantizedHead) {
        double elements = 0;
        const int w = lmHeadParameter(b, arch, p, layout, tp, elements);
        g.output = torchtuneChunkedHead(b, p, normed, w, b.elements(normed) * (vocab / h));
        return g;
    }
    // Rows lm_head sees: b x s in training, the last position of b sequences in generate().
    const double batch = static_cast<double>(training.micro_batch_size);
    const double rows = p.train ? batch * static_cast<double>(training.sequence_length) : batch;
    int logits = lmHead(b, arch, p, normed, vocab, layout, tp, rows);
    if (wholeOutput >= 0)
        b.holdThroughLastOp(wholeOutput);
    if (!tensorParallel.loss_parallel && tp > 1) { // colwise_rep: every rank gets every logit
        const int shard = logits;
        logits = allGatherToReplicate(b, shard, b.elements(shard) * tp, "logits all-gather");
        markLogits(b, logits);
        markLogits(b, b.graph().ops.back().inputs[1]); // the rank-major buffer: logits too
    }
    const bool vocabParallel = tensorParallel.loss_parallel && tp > 1;
    g.output = p.train ? causalLmLoss(b, training, p, logits, vocabParallel)
                       : b.cast(logits, 4, "logits fp32");
    return g;
}

// A pipeline stage's boundary, b x s x h hidden states. Received (torch.distributed.pipelining's
// stage.py, _RecvInfo and forward_one_chunk; Megatron-LM's p2p_communication.py): a buffer per
// micro-batch that requires a gradient, sent back in backward. Sent: the last layer's output goes
// out by isend and stays in the stage's forward cache until its backward (fwd_cache,
// stage_backward), which begins with the gradient the next stage sends back.
static OpGraph stageBoundaryGraph(const ModelArchitecture &arch,
                                  const TrainingConfig &training,
                                  TensorParallelPlan tensorParallel,
                                  bool received)
{
    OpGraph g;
    GraphBuilder b(g);
    const GraphPrecision p = graphPrecision(training);
    const SizeExpr size = tok(pipelineBoundaryWidth(arch, tensorParallel));
    if (received) {
        const int buffer = b.shared("pipeline receive", p.train);
        g.output = b.copy(buffer, size, p.stream, "received hidden states");
    } else {
        g.input = b.input("last layer output", size, p.stream, p.train);
        g.output = g.input;
    }
    return g;
}

double pipelineBoundaryWidth(const ModelArchitecture &arch, TensorParallelPlan tensorParallel)
{
    return static_cast<double>(arch.hidden_size) * tensorParallel.sequenceShare();
}

SizeExpr pipelineBoundaryBytes(const ModelArchitecture &arch,
                               const TrainingConfig &training,
                               TensorParallelPlan tensorParallel)
{
    return tok(pipelineBoundaryWidth(arch, tensorParallel) * graphPrecision(training).stream);
}

SizeExpr pipelineLogitsBytes(const ModelArchitecture &arch,
                             const TrainingConfig &training,
                             TensorParallelPlan tensorParallel)
{
    const GraphPrecision p = graphPrecision(training);
    const double shards = tensorParallel.loss_parallel ? tensorParallel.ranks() : 1.0;
    return tok(static_cast<double>(arch.vocab_size) / shards * (p.amp ? 2 : p.compute));
}

OpGraph pipelineReceiveGraph(const ModelArchitecture &arch,
                             const TrainingConfig &training,
                             TensorParallelPlan tensorParallel)
{
    return stageBoundaryGraph(arch, training, tensorParallel, true);
}

OpGraph pipelineSendGraph(const ModelArchitecture &arch,
                          const TrainingConfig &training,
                          TensorParallelPlan tensorParallel)
{
    return stageBoundaryGraph(arch, training, tensorParallel, false);
}

} // namespace membudget
