// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/memory_estimator.h"

#include "model/activation_model.h"
#include "model/parameter_layout.h"

#include <algorithm>
#include <cmath>

namespace membudget {

namespace {

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

// Frozen base weights in a bitsandbytes format.
//  - LLM.int8 (Dettmers et al. 2022, arXiv:2208.07339): int8 values plus an fp32 scale per output row;
//  - NF4 (Dettmers et al. 2023, arXiv:2305.14314, section 3): 4-bit values plus an fp32 absmax per
//    block of 64 (4.5 bits); double quantization stores the absmax in 8 bits with an fp32 constant
//    per 256 blocks (4 + 8/64 + 32/(64*256) = 4.127 bits).
double quantizedBytes(Quantization q, double rows, double cols, double count)
{
    const double n = rows * cols;
    switch (q) {
    case Quantization::None:
        return 0;
    case Quantization::Int8:
        return count * (n + 4 * cols);
    case Quantization::Nf4:
        return count * (n / 2 + 4 * std::ceil(n / 64.0));
    case Quantization::Nf4Double:
        return count * (n / 2 + std::ceil(n / 64.0) + 4 * std::ceil(n / (64.0 * 256.0)));
    }
    return 0;
}

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

void setAllocated(Breakdown &b,
                  double weights,
                  double grads,
                  double master,
                  double states,
                  double acts,
                  double logits,
                  double temps)
{
    b[Component::Weights] = toBytes(weights);
    b[Component::Gradients] = toBytes(grads);
    b[Component::MasterWeights] = toBytes(master);
    b[Component::OptimizerStates] = toBytes(states);
    b[Component::Activations] = toBytes(acts);
    b[Component::Logits] = toBytes(logits);
    b[Component::Temporaries] = toBytes(temps);
}

} // namespace

std::string validateInput(const EstimateInput &in, std::string *key)
{
    const ModelArchitecture &m = in.arch;
    const TrainingConfig &t = in.training;
    const ParallelismConfig &p = in.parallelism;
    auto problem = [key](const char *where, const char *message) {
        if (key)
            *key = where;
        return std::string(message);
    };
    if (m.layers < 1 || m.hidden_size < 1 || m.attention_heads < 1 || m.kv_heads < 1
        || m.head_dim < 1 || m.vocab_size < 1 || m.intermediate_size < 1)
        return problem("model",
                       "the model needs at least one layer, head, KV head and vocabulary entry and "
                       "a positive width");
    if (m.kv_heads > m.attention_heads)
        return problem("model.kv_heads", "kv_heads must not exceed attention_heads");
    if (m.attention_heads % m.kv_heads != 0)
        return problem("model.kv_heads",
                       "attention_heads must be a multiple of kv_heads (grouped-query attention)");
    if (m.experts_per_token < 1 || m.experts_per_token > m.experts)
        return problem("model.experts_per_token", "experts_per_token must be between 1 and experts");
    if (t.method == Method::Qlora && t.quantization == Quantization::None)
        return problem("training.quantization",
                       "qlora needs a quantized base: quantization int8, nf4 or nf4-double");
    if (t.mode == Mode::Train && t.method == Method::Full && t.quantization != Quantization::None)
        return problem("training.quantization",
                       "full fine-tuning cannot train quantized weights: use method qlora, or "
                       "quantization none");
    if (t.mode == Mode::Train && t.method == Method::Lora && t.quantization != Quantization::None)
        return problem("training.quantization", "a quantized base is QLoRA: use method qlora");
    if (t.method != Method::Full && t.lora.targets == 0)
        return problem("training.lora.targets", "LoRA needs at least one target module");
    if (p.tensor_parallel < 1 || p.gpus < 1)
        return problem("parallelism", "gpus and tensor_parallel must be at least 1");
    if (p.gpus % p.tensor_parallel != 0)
        return problem("parallelism.tensor_parallel", "gpus must be a multiple of tensor_parallel");
    if (m.attention_heads % p.tensor_parallel != 0)
        return problem("parallelism.tensor_parallel",
                       "attention_heads must be divisible by tensor_parallel");
    if (t.offload.parameters && !shardsParameters(p.sharding))
        return problem("training.offload",
                       "offloading parameters needs sharding zero3 or fsdp-full");
    return {};
}

MemoryEstimate estimateMemory(const EstimateInput &in)
{
    MemoryEstimate est;
    Derivation &dv = est.derivation;
    const ModelArchitecture &arch = in.arch;
    const TrainingConfig &tr = in.training;
    const ParallelismConfig &par = in.parallelism;
    if (arch.layers < 1 || arch.hidden_size < 1 || tr.micro_batch_size < 1 || tr.sequence_length < 1)
        return est;

    const Precision p = tr.precision;
    const bool train = tr.mode == Mode::Train;
    const bool full = tr.method == Method::Full;
    const bool amp = isAmp(p);
    const double tp = static_cast<double>(std::max<std::int64_t>(1, par.tensor_parallel));
    const double N = static_cast<double>(std::max<std::int64_t>(1, par.dataParallel()));
    const bool multiGpu = par.gpus > 1;
    const Sharding sharding = multiGpu || tr.offload.parameters || tr.offload.optimizer
                                  ? par.sharding
                                  : Sharding::None;

    // Bytes per element: weights in their storage dtype; gradients in the parameter dtype; fp32 master
    // copy and fp32 states for mixed precision (Rajbhandari et al. 2020, arXiv:1910.02054, section 3.1:
    // 2 + 2 + 12 bytes per parameter with Adam); torch optimizers keep states in the parameter dtype.
    const double wb = (p == Precision::Fp32 || amp) ? 4 : 2;
    const double gb = wb;
    const double mb = isMixedMaster(p) ? 4 : 0;
    const double sb = isPure16(p) ? 2 : 4;
    const double ab = tr.lora.adapter_precision == AdapterPrecision::Fp32 ? 4 : wb;
    const double asb = ab == 2 ? 2 : 4;
    const Quantization quant = (!train || tr.method == Method::Qlora) ? tr.quantization
                                                                      : Quantization::None;
    const double rank = static_cast<double>(tr.lora.rank);
    const double L = static_cast<double>(arch.layers);

    const ParameterLayout layout = parameterLayout(arch);
    double weights = 0, grads = 0, master = 0, states = 0;
    double layerWeights = 0, rootWeights = 0, layerGrads = 0, nonLayerGrads = 0;
    double params = 0, trainable = 0, trainableAll = 0, linearElements = 0, largestTrainable = 0;
    for (const TensorGroup &g : layout) {
        const double split = g.tensor_parallel_split ? tp : 1.0;
        const double rows = static_cast<double>(g.rows);
        const double cols = static_cast<double>(g.cols) / split;
        const double count = static_cast<double>(g.count);
        const double n = rows * cols * count;
        const bool inLayer = g.role != TensorRole::Embedding
                             && g.role != TensorRole::PositionEmbedding
                             && g.role != TensorRole::LmHead && g.role != TensorRole::FinalNorm;
        params += n;
        if (g.linear || g.role == TensorRole::LmHead
            || (g.role == TensorRole::Embedding && arch.tied_embeddings))
            linearElements += n;
        const bool quantized = quant != Quantization::None && g.linear
                               && g.role != TensorRole::LmHead;
        const double w = quantized ? quantizedBytes(quant, rows, cols, count) : n * wb;
        weights += w;
        (inLayer ? layerWeights : rootWeights) += w;
        if (!train)
            continue;
        double gGrad = 0;
        if (full) {
            trainable += n;
            gGrad = n * gb;
            master += n * mb;
            states += optimizerStateBytes(tr.optimizer, rows, cols, count, sb);
            largestTrainable = std::max(largestTrainable, rows * cols);
        } else if (g.linear && (g.lora_bits & tr.lora.targets) != 0) {
            // Adapter A is in x r, B is r x out (the split dimension stays split under TP).
            const double aElems = rows * rank * count;
            const double bElems = rank * cols * count;
            const double nAdapter = aElems + bElems;
            trainable += nAdapter;
            weights += nAdapter * ab;
            (inLayer ? layerWeights : rootWeights) += nAdapter * ab;
            gGrad = nAdapter * ab;
            master += nAdapter * mb;
            states += optimizerStateBytes(tr.optimizer, rows, rank, count, asb)
                      + optimizerStateBytes(tr.optimizer, rank, cols, count, asb);
            largestTrainable = std::max(largestTrainable, std::max(rows, cols) * rank);
        }
        grads += gGrad;
        (inLayer ? layerGrads : nonLayerGrads) += gGrad;
    }
    trainableAll = full ? layout.total : loraParameters(layout, tr.lora.targets, tr.lora.rank);

    est.training = train;
    est.parameters = static_cast<std::int64_t>(layout.total);
    est.trainable_parameters = train ? static_cast<std::int64_t>(trainableAll) : 0;
    dv.parameters = layout.total;
    dv.active_parameters = layout.active;
    dv.trainable_parameters = train ? trainableAll : 0;
    dv.params_per_gpu = params;
    dv.trainable_per_gpu = trainable;
    dv.weight_bytes_full = weights;
    dv.weight_bytes_per_param = params > 0 ? weights / (params + (full ? 0 : trainable)) : 0;
    dv.grad_bytes_per_param = full ? gb : ab;
    dv.master_bytes_per_param = mb;
    dv.optimizer_bytes_per_param = trainable > 0 ? states / trainable : 0;
    dv.data_parallel = static_cast<std::int64_t>(N);
    dv.paged_optimizer = tr.optimizer == Optimizer::PagedAdamW
                         || tr.optimizer == Optimizer::PagedAdamW8bit;

    const double T = static_cast<double>(tr.micro_batch_size)
                     * static_cast<double>(tr.sequence_length);
    const double s = static_cast<double>(tr.sequence_length);
    const double b = static_cast<double>(tr.micro_batch_size);
    const double vocab = static_cast<double>(arch.vocab_size) / tp;
    dv.tokens = T;

    const ActivationProfile prof = activationProfile(arch, tr, par.tensor_parallel);
    const double E = prof.compute_bytes;

    if (!train) {
        // Inference: weights, the KV cache (2 L b s k d bytes; Pope et al. 2022, arXiv:2211.05102,
        // section 2.2) and the largest working set of one prefill layer; generation computes logits
        // for the last position only, upcast to fp32.
        const double kvHeads = std::max(1.0, static_cast<double>(arch.kv_heads) / tp);
        const double d = static_cast<double>(arch.head_dim);
        const double a = static_cast<double>(arch.attention_heads) / tp;
        const double I = static_cast<double>(arch.intermediate_size) / tp;
        const double h = static_cast<double>(arch.hidden_size);
        const double kv = 2 * L * T * kvHeads * d * E;
        double attnWork = E * (2 * a + 2 * kvHeads) * d;
        if (tr.attention == Attention::Eager)
            attnWork += (2 * E + 4) * a * s;
        const double topK = arch.isMoe() ? static_cast<double>(arch.experts_per_token) : 1.0;
        const double mlpWork = (arch.isGatedMlp() ? 3 : 2) * E * I * topK;
        const double prefill = T
                               * (std::max(attnWork, mlpWork) + 3 * prof.stream_bytes * h + 4 * h);
        const double logits = b * vocab * (E + 4);
        double w = weights;
        if (shardsParameters(sharding))
            w /= N;
        dv.kv_cache_bytes = kv;
        dv.logits_forward_bytes = logits;
        Breakdown &fwd = est.phases[0];
        setAllocated(fwd, w, 0, 0, 0, 0, logits, prefill);
        fwd[Component::KvCache] = toBytes(kv);
        dv.weight_shard = shardsParameters(sharding) ? N : 1;
    } else {
        const double shardW = shardsParameters(sharding) ? N : 1.0;
        const double shardG = shardsGradients(sharding) ? N : 1.0;
        const double shardS = shardsStates(sharding) ? N : 1.0;
        dv.weight_shard = shardW;
        dv.grad_shard = shardG;
        dv.state_shard = shardS;
        const bool gathers = multiGpu || tr.offload.parameters;

        double wRest = weights / shardW;
        double wFwdBwd = wRest;
        if (sharding == Sharding::FsdpGradOp && multiGpu)
            wFwdBwd = weights / N + weights; // the unsharded parameters stay until backward ends
        if (tr.offload.parameters) {
            wRest = 0;
            wFwdBwd = sharding == Sharding::FsdpGradOp ? weights : 0;
        }
        const double gAll = grads / shardG;
        double mAll = master / shardS;
        double sAll = states / shardS;
        if (tr.offload.optimizer) {
            dv.cpu_offload_bytes = mAll + sAll + 4 * trainable / shardS;
            mAll = 0;
            sAll = 0;
        }
        if (tr.offload.parameters)
            dv.cpu_offload_bytes += weights / shardW;

        // Transient buffers of sharding and data parallelism.
        const double unit = layerWeights / L;
        const double unitGrad = layerGrads / L;
        const double h = static_cast<double>(arch.hidden_size);
        const double reduceBucket = std::min(2 * h * h * gb,
                                             gAll); // HF "auto": hidden^2, double-buffered
        double shardFwd = 0, shardBwd = 0;
        if (sharding == Sharding::FsdpFull && gathers) {
            // FSDP (Zhao et al. 2023, arXiv:2304.11277, section 3.2): the root unit (embeddings, lm_head)
            // stays gathered; at most two decoder units are gathered at once; backward also holds
            // the unit's unsharded gradients before reduce-scatter.
            shardFwd = rootWeights * (1 - 1 / N) + 2 * unit;
            shardBwd = shardFwd + unitGrad;
        } else if (sharding == Sharding::FsdpGradOp && gathers) {
            shardBwd = unitGrad;
        } else if (sharding == Sharding::Zero3 && gathers) {
            shardFwd = 2 * unit; // the current module's parameters and the prefetched next ones
            shardBwd = 2 * unit + reduceBucket;
        } else if ((sharding == Sharding::Zero1 || sharding == Sharding::Zero2) && multiGpu) {
            shardBwd = reduceBucket;
        }
        if (sharding == Sharding::None && multiGpu)
            dv.ddp_bucket_bytes
                = grads; // DDP buckets copy the gradients (gradient_as_bucket_view=False)
        dv.sharding_transient_forward = shardFwd;
        dv.sharding_transient_backward = shardBwd;

        // Optimizer-step temporaries: torch's foreach AdamW allocates sqrt(exp_avg_sq) for the whole
        // parameter group (torch/optim/adamw.py, _multi_tensor_adamw; torchtune PR #389 measured it);
        // DeepSpeed's fused Adam and the 8-bit kernels work in place; Lion and Adafactor loop per
        // tensor with tensor-sized temporaries; mixed precision needs fp32 gradients for the master;
        // torch's fused AdamW (fused=True) updates in place.
        double stepTemp = 0;
        if (!tr.offload.optimizer) {
            const bool deepspeed = sharding == Sharding::Zero1 || sharding == Sharding::Zero2
                                   || sharding == Sharding::Zero3;
            switch (tr.optimizer) {
            case Optimizer::AdamW:
            case Optimizer::PagedAdamW:
                if (!deepspeed && !isMixedMaster(p))
                    stepTemp = sb * trainable / shardS;
                break;
            case Optimizer::Lion:
                stepTemp = 2 * sb * largestTrainable;
                break;
            case Optimizer::Adafactor:
                stepTemp = 3 * 4 * largestTrainable;
                break;
            default:
                break;
            }
            if (isMixedMaster(p))
                stepTemp += 4 * trainable / shardS;
        }
        dv.optimizer_step_temporaries = stepTemp;

        // Autocast keeps a 16-bit copy of every weight a linear layer used until backward has passed it.
        dv.autocast_weight_cache = amp ? 2 * linearElements / shardW : 0;
        if (quant != Quantization::None)
            dv.dequant_transient = 2 * layout.largest_linear / tp;

        // Activations.
        const double layerFull = T * (prof.layer_full_linear + prof.layer_full_score * s);
        const double layerSaved = tr.checkpointing == Checkpointing::Full
                                      ? T * prof.layer_checkpoint
                                      : T * (prof.layer_linear + prof.layer_score * s);
        double firstLayerSaving = T * (prof.first_layer_linear + prof.first_layer_score * s);
        if (tr.checkpointing == Checkpointing::Full)
            firstLayerSaving = 0;
        const double modelLevel = T * prof.model_level + s * prof.model_per_position
                                  + T * s * prof.checkpoint_mask;
        const double actAll = L * layerSaved - firstLayerSaving + modelLevel;
        const double bwdTransient = T * (prof.backward_linear + prof.backward_score * s);
        const double recompute = tr.checkpointing == Checkpointing::Full ? layerFull : 0;
        dv.layer_activation_per_token = prof.layer_linear;
        dv.layer_attention_score_per_token = prof.layer_score;
        dv.layer_saved_bytes = T * (prof.layer_linear + prof.layer_score * s);
        dv.layer_checkpoint_bytes = T * prof.layer_checkpoint;
        dv.embedding_activation_bytes = modelLevel;
        dv.layer_backward_transient = bwdTransient;
        dv.recompute_bytes = recompute;
        dv.logits_bytes_per_token = prof.logits_backward;
        dv.logits_forward_bytes = T * (vocab * prof.logits_forward + prof.loss_per_token);
        dv.logits_backward_bytes = T * (vocab * prof.logits_backward + prof.loss_per_token);

        const bool accumulating = tr.gradient_accumulation_steps > 1;
        dv.grads_live_in_forward = accumulating;
        const double gPrev = accumulating ? gAll : 0;
        const double always = dv.ddp_bucket_bytes + dv.dequant_transient;

        Breakdown &fwd = est.phases[0];
        setAllocated(fwd,
                     wFwdBwd,
                     gPrev,
                     mAll,
                     sAll,
                     actAll,
                     dv.logits_forward_bytes,
                     shardFwd + dv.autocast_weight_cache + always);

        // Backward: activations are released layer by layer while gradients fill in, so memory is
        // linear in the layer index and its maximum is at the first or the last layer processed; the
        // loss gradient chain at the very start may top both.
        Breakdown start, first, last;
        setAllocated(start,
                     wFwdBwd,
                     gPrev,
                     mAll,
                     sAll,
                     actAll,
                     dv.logits_backward_bytes,
                     shardBwd + dv.autocast_weight_cache + always);
        const double gHead = accumulating ? gAll : (nonLayerGrads + layerGrads / L) / shardG;
        setAllocated(first,
                     wFwdBwd,
                     gHead,
                     mAll,
                     sAll,
                     actAll,
                     0,
                     shardBwd + bwdTransient + recompute + dv.autocast_weight_cache + always);
        const double lastActs = (tr.checkpointing == Checkpointing::Full
                                     ? dv.layer_checkpoint_bytes
                                     : dv.layer_saved_bytes - firstLayerSaving)
                                + modelLevel;
        setAllocated(last,
                     wFwdBwd,
                     gAll,
                     mAll,
                     sAll,
                     lastActs,
                     0,
                     shardBwd + bwdTransient + recompute + always);
        const Breakdown *best = &start;
        dv.backward_peak_at_start = 1;
        if (first.allocated() > best->allocated()) {
            best = &first;
            dv.backward_peak_at_start = 2;
        }
        if (last.allocated() > best->allocated()) {
            best = &last;
            dv.backward_peak_at_start = 0;
        }
        est.phases[1] = *best;

        Breakdown &step = est.phases[2];
        setAllocated(step, wRest, gAll, mAll, sAll, 0, 0, stepTemp + dv.ddp_bucket_bytes);
    }

    // Overheads outside torch's allocated bytes.
    const double context = static_cast<double>(in.overheads.cuda_context_bytes);
    const double communicator = multiGpu ? static_cast<double>(in.overheads.nccl_bytes) : 0.0;
    const int phaseCount = train ? kPhaseCount : 1;
    int peak = 0;
    for (int i = 0; i < phaseCount; ++i) {
        Breakdown &ph = est.phases[static_cast<std::size_t>(i)];
        const Bytes allocated = ph.allocated();
        ph[Component::CudaContext] = toBytes(context);
        ph[Component::Communicator] = toBytes(communicator);
        ph[Component::AllocatorReserve] = toBytes(static_cast<double>(allocated)
                                                  * in.overheads.allocator_reserve_fraction);
        if (allocated > est.phases[static_cast<std::size_t>(peak)].allocated())
            peak = i;
    }
    est.peak_phase = static_cast<Phase>(peak);
    est.components = est.phases[static_cast<std::size_t>(peak)];
    est.peak_allocated = est.components.allocated();
    est.peak_reserved = addSat(est.peak_allocated, est.components[Component::AllocatorReserve]);
    est.device_total = addSat(addSat(est.peak_reserved, est.components[Component::CudaContext]),
                              est.components[Component::Communicator]);
    est.cpu_offload_bytes = toBytes(dv.cpu_offload_bytes);
    est.cpu_offload_total = toBytes(dv.cpu_offload_bytes * static_cast<double>(par.gpus));
    est.too_large = isSaturated(est.device_total);
    return est;
}

} // namespace membudget
