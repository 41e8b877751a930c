// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Context parallelism as PyTorch runs it (torch.distributed.tensor.experimental.context_parallel,
// torchtitan's parallelism.context_parallel_degree): `cp` GPUs share every sequence. The inputs,
// labels and rotary tables are split along the sequence into 2 x cp chunks, each GPU taking chunks
// r and 2cp - 1 - r (load-balanced causal attention), so every activation, the logits and the loss
// are 1/cp of the single-GPU ones. Attention is ring attention over SDPA's kernels
// (_templated_ring_attention): each GPU's queries attend to every GPU's keys and values in cp rounds.

#include "model/op_graph.h"
#include "model/step_timeline.h"
#include "model/training_options.h"

#include <string>

namespace membudget {

// Why the scenario cannot run with its context parallelism (empty: it can, or cp is 1); sets *key
// to the scenario key at fault.
std::string validateContextParallel(const TrainingConfig &training,
                                    const ParallelismConfig &parallelism,
                                    std::string *key);

// The scratch of one ring attention call on one GPU, per token of the whole sequence, for keys and
// values of `kvElementsPerToken` elements (both together, as SDPA gets them) of `elementBytes` each,
// queries of `qElementsPerToken`, and `cp` GPUs (torch/distributed/tensor/experimental/
// _attention.py, rotate method all-gather and convert_to_f32, the defaults):
struct RingAttentionScratch
{
    // Forward: the all-gathered keys and values of every GPU (one all_gather_tensor of the local
    // cat) with the local keys and values made contiguous and flattened into the cat; a round's
    // output and the fp32 merge of the rounds' outputs (_SDPAMerger: the running output, the
    // round's output in fp32 and the sigmoid-weighted difference).
    SizeExpr keys_values;
    SizeExpr merge;
    // Backward: the all-gathered keys and values again and a round's cat of them; fp32 dq, dk and
    // dv accumulators and a round's dq, dk, dv; the fp32 dk/dv cat sent round the ring and the one
    // received (all-to-all rotater).
    SizeExpr backward;
};
RingAttentionScratch ringAttentionScratch(double qElementsPerToken,
                                          double kvElementsPerToken,
                                          double elementBytes,
                                          double cp);

// Sizes built for whole sequences become the sizes on one of `cp` GPUs: every per-token and
// per-position size is divided by cp (per-sequence and fixed sizes stay). Ring buffers that hold the
// whole sequence are built with a factor cp so that they come out whole.
void shardSequence(StepTimeline &timeline, double cp);

} // namespace membudget
