// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/model_architecture.h"
#include "model/step_graphs.h"
#include "model/tensor_parallel_plan.h"
#include "model/training_options.h"

namespace membudget {

// Bytes that autograd keeps for backward, per token, summed over the op graphs of a step (what
// Hugging Face transformers + PyTorch 2.x on CUDA really keep, op by op: decoder_layer_graph.cpp,
// model_ends_graph.cpp; derivation in docs/memory-model.md). Terms that grow with the sequence
// (eager attention's s x s probabilities) are kept apart as a coefficient: bytes per token =
// linear + score_coefficient * sequence_length.
struct ActivationProfile
{
    double layer_linear = 0; // one decoder layer (all it keeps without checkpointing), per token
    double layer_score = 0;  // one decoder layer, bytes per token per unit of sequence length
    double layer_checkpoint = 0;   // a checkpointed layer: its saved input (and the outputs an
                                   // op-level policy keeps), bytes per token
    double model_level = 0;        // token ids, final norm, lm_head input, per token
    double model_per_position = 0; // rotary cos/sin ([1, s, d], shared by the batch), per position
    double checkpoint_mask = 0;    // eager + full checkpointing: the [b, 1, s, s] mask kept as a
                                   // checkpoint input, bytes per token per unit of sequence length
    double first_layer_linear = 0; // LoRA without checkpointing: what the first layer does not
    double first_layer_score = 0;  // keep, its input (frozen embeddings) needing no gradient
    double loss_per_token = 8;     // int64 targets kept by nll_loss
    double logits_forward = 0;  // the loss's largest moment in forward, per token per vocab entry
    double logits_backward = 0; // ... in backward (the loss gradient chain)
    double compute_bytes = 2;   // bytes of the compute dtype
    double stream_bytes = 2;    // bytes of the residual stream dtype
};

ActivationProfile activationProfile(const ModelArchitecture &arch,
                                    const TrainingConfig &training,
                                    const StepGraphs &graphs,
                                    TensorParallelPlan tensorParallel);

// The same, building the graphs (tensor_parallel divides heads, MLP width and vocabulary).
ActivationProfile activationProfile(const ModelArchitecture &arch,
                                    const TrainingConfig &training,
                                    TensorParallelPlan tensorParallel);

} // namespace membudget
