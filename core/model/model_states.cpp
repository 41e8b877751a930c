// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/model_states.h"

#include "model/stack_profile.h"
#include "model/weight_format.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace membudget {

bool shardsParameters(Sharding s)
{
    return s == Sharding::Zero3 || s == Sharding::FsdpFull;
}
bool shardsGradients(Sharding s)
{
    return s != Sharding::None && s != Sharding::Zero1;
}
bool shardsStates(Sharding s)
{
    return s != Sharding::None;
}
bool isDeepSpeed(Sharding s)
{
    return s == Sharding::Zero1 || s == Sharding::Zero2 || s == Sharding::Zero3;
}

bool isZeroStage12(Sharding s)
{
    return s == Sharding::Zero1 || s == Sharding::Zero2;
}

// Optimizer state bytes of `count` tensors of rows x cols elements, `stateBytes` per element for
// full-precision states.
//  - torch AdamW: exp_avg and exp_avg_sq, in the parameter dtype (torch/optim/adamw.py);
//  - bitsandbytes 8-bit Adam: two uint8 states plus one fp32 absmax per block of 256 values; tensors
//    under 4096 elements keep two fp32 states (bitsandbytes/optim/optimizer.py, min_8bit_size);
//  - SGD with momentum and Lion (Chen et al. 2023, arXiv:2302.06675): one state;
//  - Adafactor (Shazeer & Stern 2018, arXiv:1804.04235, section 3): row and column second-moment
//    vectors for matrices, a full one for vectors, no first moment (transformers' default beta1=None).
double optimizerStateBytes(Optimizer opt, double rows, double cols, double count, double stateBytes)
{
    const double n = rows * cols;
    switch (opt) {
    case Optimizer::AdamW:
    case Optimizer::AdamWFused:
    case Optimizer::PagedAdamW:
        return count * 2 * stateBytes * n;
    case Optimizer::AdamW8bit:
    case Optimizer::PagedAdamW8bit:
        if (n < 4096)
            return count * 8 * n;
        return count * 2 * (n + 4 * std::ceil(n / 256.0));
    case Optimizer::Sgd:
        return 0;
    case Optimizer::SgdMomentum:
    case Optimizer::Lion:
        return count * stateBytes * n;
    case Optimizer::Adafactor:
        if (rows > 1 && cols > 1)
            return count * stateBytes * (rows + cols);
        return count * stateBytes * n;
    }
    return 0;
}

namespace {

// bitsandbytes paged optimizers put the states of tensors of 1e5 elements or more in CUDA managed
// memory (bitsandbytes/optim/optimizer.py, get_state_buffer; functional.py, get_paged:
// cudaMallocManaged): the driver pages them to CPU RAM under pressure and torch's caching
// allocator never sees them, so they stay out of its replay and of the fits test.
double pagedStateBytes(Optimizer opt, double rows, double cols, double count, double stateBytes)
{
    const bool paged = opt == Optimizer::PagedAdamW || opt == Optimizer::PagedAdamW8bit;
    if (!paged || rows * cols < 1e5)
        return 0;
    return optimizerStateBytes(opt, rows, cols, count, stateBytes);
}

// Bytes per element of a parameter that is not quantized: the precision's, or fp32 after PEFT's
// prepare_model_for_kbit_training (TRL before 0.26 then casts embeddings and lm_head back to bf16).
double storedBytes(const TrainingConfig &tr, TensorRole role, double precisionBytes)
{
    if (!kbitUpcast(tr))
        return precisionBytes;
    const bool head = role == TensorRole::Embedding || role == TensorRole::LmHead
                      || role == TensorRole::PositionEmbedding;
    return head && kbitKeepsHead16bit(tr) ? 2 : 4;
}

bool inDecoderLayer(TensorRole role)
{
    return role != TensorRole::Embedding && role != TensorRole::PositionEmbedding
           && role != TensorRole::LmHead && role != TensorRole::FinalNorm;
}

// An IA3 vector of `elements` values in the adapter dtype, held with the weights.
void addAdapter(ModelStates &s, bool inLayer, double elements, double bytes, double perLayer)
{
    s.trainable += elements;
    s.weights += elements * bytes;
    (inLayer ? s.layer_weights : s.root_weights) += elements * bytes;
    (inLayer ? s.layer_tensors : s.root_tensors) += perLayer;
}

// The trainable tensors' elements in the order the model registers them: the embeddings, each
// decoder layer's (the same for every layer), then the final norm and lm_head.
struct TrainableOrder
{
    std::vector<double> before, layer, after;
};

// Bytes per element: weights in their storage dtype; gradients in the parameter dtype; fp32 master
// copy and fp32 states for mixed precision (Rajbhandari et al. 2020, arXiv:1910.02054, section 3.1:
// 2 + 2 + 12 bytes per parameter with Adam); torch optimizers keep states in the parameter dtype.
void addGroups(ModelStates &s,
               const EstimateInput &in,
               const ParameterLayout &layout,
               TrainableOrder &order)
{
    const TrainingConfig &tr = in.training;
    const bool train = tr.mode == Mode::Train;
    const bool full = tr.method == Method::Full;
    const double wb = (tr.precision == Precision::Fp32 || isAmp(tr.precision)) ? 4 : 2;
    const double mb = isMixedMaster(tr.precision) ? 4 : deepSpeedClonedMasterBytes(in);
    const bool fp32States = deepSpeedFp32OptimizerStates(tr, in.parallelism);
    const double sb = isPure16(tr.precision) && !fp32States ? 2 : 4;
    const double ab = tr.lora.adapter_precision == AdapterPrecision::Fp32 ? 4 : wb;
    // 16-bit adapters keep 16-bit torch states (and DeepSpeed's bf16 optimizer states); under an
    // fp32 master copy (DeepSpeed's default) the states are fp32 as the full model's are.
    const double asb = ab == 2 && mb != 4 && !fp32States ? 2 : 4;
    const bool frozenBase = tr.method == Method::Qlora || tr.method == Method::Ia3;
    const Quantization quant = (!train || frozenBase) ? tr.quantization : Quantization::None;
    const double rank = static_cast<double>(tr.lora.rank);
    const double tp = static_cast<double>(std::max<std::int64_t>(1, in.parallelism.tensor_parallel));
    s.grad_bytes_per_param = full ? wb : ab;
    s.master_bytes_per_param = mb;
    s.state_bytes = sb;
    s.trainable_state_bytes = full ? sb : asb;
    std::vector<double> &layerSequence = order.layer;
    for (const TensorGroup &g : layout) {
        const double rows = static_cast<double>(g.rows);
        const double cols = static_cast<double>(g.cols) / (g.tensor_parallel_split ? tp : 1.0);
        const double count = static_cast<double>(g.count);
        const double n = rows * cols * count;
        const bool inLayer = inDecoderLayer(g.role);
        const bool inHead = g.role == TensorRole::LmHead || g.role == TensorRole::FinalNorm;
        s.params += n;
        (inLayer ? s.layer_params : s.root_params) += n;
        if (inHead)
            s.head_params += n;
        if (g.linear || g.role == TensorRole::LmHead
            || (g.role == TensorRole::Embedding && in.arch.tied_embeddings))
            s.linear_elements += n;
        const bool head = g.role == TensorRole::LmHead; // 16-bit unless lm_head is quantized too
        const bool quantized = quant != Quantization::None
                               && (head ? tr.quantization_options.lm_head : g.linear);
        const double w
            = quantized ? quantizedMatrixBytes(quant, tr.quantization_options, rows, cols, count)
                        : n * storedBytes(tr, g.role, wb);
        const double perLayer = inLayer ? count / static_cast<double>(in.arch.layers) : count;
        s.weights += w;
        (inLayer ? s.layer_weights : s.root_weights) += w;
        (inLayer ? s.layer_tensors : s.root_tensors) += perLayer;
        if (inHead)
            s.head_weights += w;
        if (g.role == TensorRole::LmHead)
            s.lm_head_weights += w;
        if (!train)
            continue;
        double grad = 0, master = 0, states = 0, tensors = 0, paged = 0;
        if (full) {
            s.trainable += n;
            grad = n * wb;
            master = n * mb;
            states = optimizerStateBytes(tr.optimizer, rows, cols, count, sb);
            paged = pagedStateBytes(tr.optimizer, rows, cols, count, sb);
            tensors = perLayer;
            s.largest_trainable = std::max(s.largest_trainable, rows * cols);
            const bool first = g.role == TensorRole::Embedding
                               || g.role == TensorRole::PositionEmbedding;
            std::vector<double> &seq = inLayer ? layerSequence : first ? order.before : order.after;
            seq.insert(seq.end(), static_cast<std::size_t>(perLayer), rows * cols);
        } else if (tr.method == Method::Ia3) {
            if (!g.linear || (g.lora_bits & tr.ia3.targets) == 0)
                continue;
            // PEFT IA3: a vector of out_features, or in_features for the feed-forward output.
            const double vector = (g.role == TensorRole::Down ? rows : cols) * count;
            addAdapter(s, inLayer, vector, ab, perLayer);
            s.largest_trainable = std::max(s.largest_trainable, vector / count);
            if (inLayer)
                layerSequence.insert(layerSequence.end(),
                                     static_cast<std::size_t>(perLayer),
                                     vector / count);
            grad = vector * ab;
            master = vector * mb;
            states = optimizerStateBytes(tr.optimizer, vector, 1, 1, asb);
            tensors = perLayer;
        } else if (g.linear && (g.lora_bits & tr.lora.targets) != 0) {
            // Adapter A is in x r, B is r x out (the split dimension stays split under TP).
            // DoRA adds lora_magnitude_vector, one value per output row (PEFT dora.py).
            const double magnitude = tr.lora.use_dora ? cols * count : 0;
            const double adapter = rows * rank * count + rank * cols * count + magnitude;
            const double adapterTensors = (tr.lora.use_dora ? 3 : 2) * perLayer;
            s.weights += adapter * ab;
            s.trainable += adapter;
            (inLayer ? s.layer_weights : s.root_weights) += adapter * ab;
            (inLayer ? s.layer_tensors : s.root_tensors) += adapterTensors;
            grad = adapter * ab;
            master = adapter * mb;
            states = optimizerStateBytes(tr.optimizer, rows, rank, count, asb)
                     + optimizerStateBytes(tr.optimizer, rank, cols, count, asb)
                     + optimizerStateBytes(tr.optimizer, magnitude, 1, 1, asb);
            paged = pagedStateBytes(tr.optimizer, rows, rank, count, asb)
                    + pagedStateBytes(tr.optimizer, rank, cols, count, asb);
            tensors = adapterTensors;
            s.largest_trainable = std::max(s.largest_trainable, std::max(rows, cols) * rank);
            if (inLayer) // PEFT registers lora_A, lora_B, then lora_magnitude_vector
                for (int i = 0; i < static_cast<int>(perLayer); ++i) {
                    layerSequence.push_back(rows * rank);
                    layerSequence.push_back(rank * cols);
                    if (magnitude > 0)
                        layerSequence.push_back(cols);
                }
        }
        states -= paged; // outside torch's allocator
        s.paged_states += paged;
        s.grads += grad;
        s.master += master;
        s.states += states;
        if (inLayer) {
            s.layer_grads += grad;
            s.layer_master += master;
            s.layer_states += states;
            s.trainable_layer_tensors += tensors;
        } else {
            s.trainable_root_tensors += tensors;
        }
    }
    s.trainable_all = !train ? 0 : full ? layout.total : adapterParameters(layout, tr);
    for (std::size_t i = 0; i < layerSequence.size(); ++i) {
        const double before = layerSequence[i > 0 ? i - 1 : layerSequence.size() - 1];
        s.layer_step_window = std::max(s.layer_step_window, 2 * layerSequence[i] + before);
    }
}

// CPU RAM of an offloaded optimizer per GPU: the master partition, the gradients it steps on and
// the states. DeepSpeed's ZeRO-Offload makes the master in its master dtype
// (deepSpeedOffloadedMasterBytes) and gives it a gradient of the same dtype
// (initialize_optimizer_states in stage_1_and_2.py and stage3.py). One more copy of the partition
// in the weights' dtype: ZeRO-1/2's buffer for the updated weights' way back
// (param_buffer_of_bit16_for_cpu_offload_groups), ZeRO-3's gradient partitions
// (grad_partitions_flat_buffer on the optimizer's device, in grad_accum_dtype, which defaults to
// the model's dtype: engine.py, get_data_types). ZeRO-1/2 also pin a buffer of the largest
// trainable tensor (temp_grad_buffer_for_cpu_offload). FSDP's CPU offload keeps the shards'
// gradients in the shards' dtype: the fp32 master's under mixed precision, else the weights'.
double offloadedOptimizerBytes(const ModelStates &s, const EstimateInput &in)
{
    const double partition = s.trainable / s.state_shard;
    const double deepSpeedMaster = deepSpeedOffloadedMasterBytes(in);
    const double weightDtype = s.grad_bytes_per_param; // the trainable weights' dtype
    if (deepSpeedMaster > 0) {
        return partition * (2 * deepSpeedMaster + weightDtype) + s.resident_states
               + (isZeroStage12(s.sharding) ? s.largest_trainable * weightDtype : 0);
    }
    const double grad = s.master_bytes_per_param > 0 ? s.master_bytes_per_param : weightDtype;
    return s.resident_master + s.resident_states + partition * grad;
}

// ZeRO (Rajbhandari et al. 2020, section 5): stage 1 shards optimizer states (and the master copy),
// stage 2 also gradients, stage 3 also parameters; FSDP FULL_SHARD is stage 3, SHARD_GRAD_OP stage
// 2 with the unsharded parameters kept from forward to the end of backward. Offload moves states
// (and, with stage 3, parameters) to CPU RAM.
void shard(ModelStates &s, const EstimateInput &in)
{
    const TrainingConfig &tr = in.training;
    const ParallelismConfig &par = in.parallelism;
    const bool multiGpu = par.gpus > 1;
    s.data_parallel = static_cast<double>(std::max<std::int64_t>(1, par.dataParallel()));
    // Hybrid sharding divides over the shard group only (FSDP HYBRID_SHARD, Zhao et al. 2023,
    // arXiv:2304.11277, section 3.2.3; DeepSpeed MiCS, Zhang et al. 2022, arXiv:2205.00119).
    const double N = static_cast<double>(par.shardDegree());
    s.sharding = multiGpu || tr.offload.parameters || tr.offload.optimizer ? par.sharding
                                                                           : Sharding::None;
    const bool train = tr.mode == Mode::Train;
    const bool gradOp = train && s.sharding == Sharding::FsdpGradOp && multiGpu;
    s.weight_shard = shardsParameters(s.sharding) || gradOp ? N : 1;
    s.grad_shard = train && shardsGradients(s.sharding) ? N : 1;
    s.state_shard = train && shardsStates(s.sharding) ? N : 1;
    s.gathers = (shardsParameters(s.sharding) && (multiGpu || tr.offload.parameters)) || gradOp;
    s.resident_weights = s.weights / s.weight_shard;
    s.forward_weights = s.resident_weights;
    if (gradOp)
        s.forward_weights = s.weights / N + s.weights;
    if (train && tr.offload.parameters) {
        s.resident_weights = 0;
        s.forward_weights = s.sharding == Sharding::FsdpGradOp ? s.weights : 0;
    }
    s.resident_grads = s.grads / s.grad_shard;
    s.resident_master = s.master / s.state_shard;
    s.resident_states = s.states / s.state_shard;
    if (train && tr.offload.optimizer) {
        s.cpu_offload_bytes = offloadedOptimizerBytes(s, in);
        s.resident_master = 0;
        s.resident_states = 0;
    }
    if (train && tr.offload.parameters)
        s.cpu_offload_bytes += s.weights / s.weight_shard;
    if (train && !tr.offload.optimizer)
        s.paged_state_bytes = s.paged_states / s.state_shard;
}

// DeepSpeed ZeRO-3 splits the optimizer's parameters into sub-groups at parameter boundaries,
// adding each parameter's local partition until the sum reaches sub_group_size (stage3.py,
// _create_fp16_sub_groups; one sub-group when the whole partition is no larger). The largest
// sub-group's elements on this GPU.
double largestSubGroup(const ModelStates &s, const TrainableOrder &order, const EstimateInput &in)
{
    const double whole = s.trainable / s.state_shard;
    const double limit = in.parallelism.deepspeed.sub_group_size.value_or(kDeepSpeedSubGroupSize);
    if (whole <= limit || order.layer.empty())
        return whole;
    double largest = 0, current = 0;
    auto add = [&](double elements) {
        current += elements / s.state_shard;
        if (current >= limit) {
            largest = std::max(largest, current);
            current = 0;
        }
    };
    for (double e : order.before)
        add(e);
    for (std::int64_t l = 0; l < in.arch.layers; ++l)
        for (double e : order.layer)
            add(e);
    for (double e : order.after)
        add(e);
    return std::max(largest, current);
}

} // namespace

ModelStates modelStates(const EstimateInput &in, const ParameterLayout &layout)
{
    ModelStates s;
    TrainableOrder order;
    addGroups(s, in, layout, order);
    s.trainable_order_before = order.before;
    s.trainable_order_layer = order.layer;
    s.trainable_order_after = order.after;
    shard(s, in);
    s.largest_step_group = s.trainable / s.state_shard;
    if (s.sharding == Sharding::Zero3 && in.training.mode == Mode::Train)
        s.largest_step_group = largestSubGroup(s, order, in);
    return s;
}

} // namespace membudget
