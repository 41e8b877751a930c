// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "base/units.h"

#include <array>
#include <cstdint>

namespace membudget {

// What one GPU's memory is spent on. The first eight are torch-allocated bytes; the last three are
// outside torch.cuda.memory_allocated() and bring the total to what nvidia-smi shows.
enum class Component {
    Weights,
    Gradients,
    MasterWeights,
    OptimizerStates,
    Activations,
    KvCache, // inference: keys and values of every layer for every token so far
    Logits,
    Temporaries,
    CudaContext,      // CUDA context and kernels
    Communicator,     // NCCL buffers, with more than one GPU
    AllocatorReserve, // reserved by the caching allocator beyond the allocated bytes
};
inline constexpr int kComponentCount = 11;
inline constexpr int kAllocatedComponentCount = 8;

enum class Phase { Forward, Backward, OptimizerStep };
inline constexpr int kPhaseCount = 3;

// Where in a step something happens, finer than the three phases.
enum class Stage : std::uint8_t {
    Resident,      // what exists before the step starts: weights, states, buffers
    Forward,       // embedding and decoder layers
    Loss,          // final norm, lm_head and the loss (forward or backward)
    Backward,      // decoder layers and embedding in reverse
    OptimizerStep, // the update, then zero_grad
    Prefill,       // inference: the prompt through every layer
    Decode,        // inference: the last generated token (the largest cache)
};
inline constexpr int kStageCount = 7;
const char *stageKey(Stage s);   // "optimizer_step"
const char *stageLabel(Stage s); // "Optimizer step"

// A moment of a step's timeline: after event `event` (-1: at the start) of repetition
// `repetition` of block `block`, in `stage`, while decoder layer `layer` runs (-1: outside them).
struct PeakMoment
{
    int block = -1;
    int repetition = 0;
    int event = -1;
    int layer = -1;
    Stage stage = Stage::Resident;
};

const char *componentKey(Component c);   // "optimizer_states" (JSON and scenario key)
const char *componentLabel(Component c); // "Optimizer states" (for people)
// Whether a component can hold bytes in a mode: gradients, master weights and optimizer states only
// in training, the KV cache only in inference. Tables and legends leave out those that cannot.
bool componentApplies(Component c, bool training);
const char *phaseKey(Phase p);   // "optimizer_step"
const char *phaseLabel(Phase p); // "Optimizer step"

struct Breakdown
{
    std::array<Bytes, kComponentCount> bytes{};

    Bytes &operator[](Component c) { return bytes[static_cast<int>(c)]; }
    Bytes operator[](Component c) const { return bytes[static_cast<int>(c)]; }
    Bytes allocated() const; // sum of the seven allocated components (saturating)
    Bytes total() const;     // all nine
};

// Intermediate quantities the estimate was built from, kept so that every component can be
// explained with its numbers filled in (see explanation.h) without computing anything twice.
struct Derivation
{
    double parameters = 0;           // whole model
    double active_parameters = 0;    // per token (MoE: top-k experts)
    double trainable_parameters = 0; // whole model
    double params_per_gpu = 0;       // after tensor-parallel split, before ZeRO/FSDP sharding
    double trainable_per_gpu = 0;
    double weight_bytes_full = 0;      // this GPU's slice of the model before sharding
    double weight_bytes_per_param = 0; // average
    double grad_bytes_per_param = 0;
    double master_bytes_per_param = 0;
    double optimizer_bytes_per_param = 0;                     // average over trainable parameters
    double weight_shard = 1, grad_shard = 1, state_shard = 1; // divisors from ZeRO/FSDP
    double tokens = 0;                                        // micro_batch x sequence
    double context_parallel = 1; // GPUs sharing each sequence: one holds tokens / context_parallel
    double layer_activation_per_token = 0;      // bytes saved per token per layer, excl. s^2 terms
    double layer_attention_score_per_token = 0; // bytes per token per layer of s^2 terms (x s)
    double layer_saved_bytes = 0;          // bytes one layer saves for backward at this micro-batch
    double layer_checkpoint_bytes = 0;     // with full checkpointing: the saved layer input
    double embedding_activation_bytes = 0; // before the first layer and after the last
    double saved_activation_bytes = 0;     // everything kept for backward when forward ends
    double logits_forward_bytes = 0;       // the loss's largest moment in forward
    double logits_backward_bytes = 0;      // ... in backward (the loss gradient chain)
    double logits_bytes_per_token = 0;     // backward peak bytes per token per vocab entry (x V)
    double kv_cache_bytes = 0;             // inference
    double cpu_offload_bytes = 0;          // per GPU
    double offloaded_activation_bytes = 0; // per GPU, in CPU RAM (activation offloading)
    std::int64_t data_parallel = 1;
    // Pipeline parallelism (pipeline_parallel.h): the stage this GPU runs, its decoder layers, and
    // the micro-batches whose activations it holds at once.
    std::int64_t pipeline_stages = 1;
    std::int64_t pipeline_stage = 0;
    std::int64_t stage_layers = 0;
    double pipeline_in_flight = 1;
    bool grads_live_in_forward = false; // gradient accumulation keeps gradients between micro-batches
    bool paged_optimizer = false;
};

struct MemoryEstimate
{
    bool training = true;
    std::int64_t parameters = 0;
    std::int64_t trainable_parameters = 0;
    std::array<Breakdown, kPhaseCount> phases{};   // the peak of forward, backward, optimizer step
    std::array<PeakMoment, kPhaseCount> moments{}; // when each phase peaks (see step_timeline.h)
    Phase peak_phase = Phase::Forward;
    Breakdown components;     // the breakdown at the peak moment, cuda context and reserve included
    Bytes peak_allocated = 0; // torch.cuda.max_memory_allocated()
    Bytes peak_reserved = 0;  // torch.cuda.max_memory_reserved()
    Bytes device_total = 0;   // nvidia-smi
    Bytes cpu_offload_bytes = 0;     // CPU RAM per GPU for offloaded states / parameters
    Bytes cpu_offload_total = 0;     // for all GPUs of the job
    Bytes paged_optimizer_bytes = 0; // per GPU: managed memory outside torch's allocator
    bool too_large = false;          // some figure saturated at 2^63 bytes
    bool reserve_replayed
        = true; // reserved memory from the caching-allocator model (else a fraction)
    Derivation derivation;

    const Breakdown &phase(Phase p) const { return phases[static_cast<int>(p)]; }
};

} // namespace membudget
