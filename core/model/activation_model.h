// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/model_architecture.h"
#include "model/training_options.h"

namespace membudget {

// Bytes that autograd keeps for backward, per token, as the sum of the tensors each op really saves
// in Hugging Face transformers + PyTorch 2.x on CUDA (derived op by op in docs/memory-model.md).
// Terms that grow with the sequence (eager attention's s x s probabilities) are kept apart as a
// coefficient: bytes per token = linear + score_coefficient * sequence_length.
struct ActivationProfile
{
    double layer_linear = 0;      // one decoder layer, bytes per token
    double layer_score = 0;       // one decoder layer, bytes per token per unit of sequence length
    double layer_checkpoint = 0;  // full checkpointing: the saved layer input, bytes per token
    double layer_full_linear = 0; // what one recomputed layer saves (checkpointing), per token
    double layer_full_score = 0;
    double model_level = 0;        // token ids, final norm, lm_head input, per token
    double model_per_position = 0; // rotary cos/sin ([1, s, d], shared by the batch), per position
    double checkpoint_mask
        = 0; // eager + full checkpointing: the [b, 1, s, s] mask kept as a checkpoint
             // input, bytes per token per unit of sequence length
    double first_layer_linear = 0; // LoRA without checkpointing: what the first layer does not save,
    double first_layer_score = 0;  // because frozen embeddings give it an input without gradient
    double loss_per_token = 8;     // int64 targets kept by nll_loss
    double backward_linear = 0;    // gradient buffers alive inside one layer's backward, per token
    double backward_score = 0;     // their s x s part, per token per unit of sequence length
    double logits_forward = 0;  // bytes per token per vocabulary entry held at the end of forward
    double logits_backward = 0; // ... at the start of backward (the loss gradient chain)
    double compute_bytes = 2;   // bytes of the compute dtype
    double stream_bytes = 2;    // bytes of the residual stream dtype
};

// tensor_parallel divides heads, MLP width and vocabulary (Megatron layout, no sequence parallel).
ActivationProfile activationProfile(const ModelArchitecture &arch,
                                    const TrainingConfig &training,
                                    std::int64_t tensor_parallel);

} // namespace membudget
