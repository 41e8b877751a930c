// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "model/memory_estimator.h"
#include "model/parameter_layout.h"

#include <vector>

namespace membudget {

// What one GPU holds of the model between steps, and what its gradients weigh: exact, tensor group
// by tensor group, before and after ZeRO / FSDP sharding and CPU offload.
struct ModelStates
{
    // This GPU's slice after tensor parallelism, before sharding.
    double params = 0;                  // parameters
    double layer_params = 0;            // ... of all decoder layers
    double root_params = 0;             // ... of embeddings, final norm, lm_head
    double head_params = 0;             // ... of the final norm and an untied lm_head
    double trainable = 0;               // trainable parameters (adapters for LoRA)
    double weights = 0;                 // bytes of weights (quantized base and adapters included)
    double layer_weights = 0;           // ... of all decoder layers
    double root_weights = 0;            // ... of embeddings, final norm, lm_head
    double head_weights = 0;            // ... of the final norm and an untied lm_head
    double lm_head_weights = 0;         // ... of an untied lm_head alone
    double grads = 0;                   // bytes of all gradients
    double layer_grads = 0;             // ... of the decoder layers
    double master = 0;                  // fp32 master copy (mixed precision)
    double layer_master = 0;            // ... of the decoder layers
    double states = 0;                  // optimizer states
    double layer_states = 0;            // ... of the decoder layers
    double layer_tensors = 0;           // weight tensors per decoder layer (adapters included)
    double root_tensors = 0;            // ... outside the layers
    double trainable_layer_tensors = 0; // trainable tensors per decoder layer
    double trainable_root_tensors = 0;
    double largest_trainable = 0; // elements of the largest trainable tensor
    // Inside a decoder layer, in parameter order: the most of 2 x a trainable tensor's elements plus
    // those of the one before it (the previous layer's last before the first), which torch < 2.0's
    // per-tensor AdamW holds at once (step_timeline_builder.cpp, adamWWorkspace).
    double layer_step_window = 0;
    // Elements of the largest group of trainable parameters the optimizer steps at once on this GPU:
    // all of them, but a DeepSpeed ZeRO-3 sub-group (sub_group_size) when that is less.
    double largest_step_group = 0;
    double trainable_state_bytes = 0; // bytes per element of a trainable tensor's state
    // Elements of each trainable tensor on this GPU in the order the model registers them: the
    // embeddings, one decoder layer's, then the final norm and lm_head (what torch's optimizers
    // walk, one parameter at a time, when they make their states).
    std::vector<double> trainable_order_before, trainable_order_layer, trainable_order_after;
    double linear_elements = 0; // elements of all linear weights (autocast copies)
    double trainable_all = 0;   // trainable parameters of the whole model
    double grad_bytes_per_param = 0;
    double master_bytes_per_param = 0;
    double state_bytes = 2; // bytes of a full-precision optimizer state element

    // Sharding divisors and what stays on the GPU.
    Sharding sharding = Sharding::None; // in effect (none on one GPU without offload)
    double data_parallel = 1;
    double weight_shard = 1, grad_shard = 1, state_shard = 1;
    double resident_weights = 0;  // between steps
    double forward_weights = 0;   // during forward and backward (FSDP SHARD_GRAD_OP: more)
    double resident_grads = 0;    // after backward
    double resident_master = 0;   // not offloaded
    double resident_states = 0;   // not offloaded
    double cpu_offload_bytes = 0; // CPU RAM per GPU
    double paged_states = 0;      // paged optimizer states (all GPUs' shards), not in `states`
    double paged_state_bytes = 0; // per GPU: CUDA managed memory, outside torch's allocator
    bool gathers = false;         // parameters are gathered unit by unit (ZeRO-3 / FSDP)
};

ModelStates modelStates(const EstimateInput &input, const ParameterLayout &layout);

// Optimizer state bytes of `count` tensors of rows x cols elements (see model_states.cpp).
double optimizerStateBytes(Optimizer opt, double rows, double cols, double count, double stateBytes);

bool shardsParameters(Sharding s);
bool shardsGradients(Sharding s);
bool shardsStates(Sharding s);
bool isDeepSpeed(Sharding s);
// DeepSpeed's ZeRO-1 or ZeRO-2 (stage_1_and_2.py, DeepSpeedZeroOptimizer).
bool isZeroStage12(Sharding s);

} // namespace membudget
