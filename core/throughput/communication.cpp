// SPDX-License-Identifier: GPL-3.0-or-later
#include "throughput/communication.h"

#include "model/graph_precision.h"
#include "model/model_ends_graph.h"
#include "model/parameter_layout.h"
#include "model/stack_profile.h"
#include "model/weight_format.h"
#include "throughput/context_parallel_work.h"
#include "throughput/optimizer_traffic.h"
#include "throughput/throughput_constants.h"

#include <algorithm>
#include <cmath>

namespace membudget {

namespace {

// Ring collectives over n ranks (Patarasuk & Yuan 2009; NCCL's ring algorithm): an all-reduce sends
// 2 (n-1)/n of the buffer through each rank's link, an all-gather or a reduce-scatter (n-1)/n of the
// whole (unsharded) buffer.
double allReduceSeconds(double bytes, double n, double bandwidth)
{
    return n > 1 ? 2 * (n - 1) / n * bytes / bandwidth : 0;
}

double gatherSeconds(double bytes, double n, double bandwidth)
{
    return n > 1 ? (n - 1) / n * bytes / bandwidth : 0;
}

// Bytes per second a collective over a group reaches: the GPU-to-GPU link inside a node; once the
// group spans nodes, what crosses a node's boundary shares all of that node's network links (one
// NIC per GPU in the reference systems, rail-aligned: NCCL runs one ring per rail), so the node's
// aggregate network bandwidth bounds it (a ring is as fast as its slowest link).
double collectiveBandwidth(const GpuPerformance &g, bool spansNodes)
{
    double link = g.interconnect_gbps > 0 ? g.interconnect_gbps : pcieGbps(g.pcie_generation);
    if (spansNodes) {
        const double nic = g.network_gbps > 0 ? g.network_gbps : kDefaultNetworkGbps;
        link = std::min(link, nic * std::max(1, g.gpus_per_node));
    }
    return link * 1e9 * kCollectiveEfficiency;
}

double pcieBandwidth(const GpuPerformance &g)
{
    return pcieGbps(g.pcie_generation) * 1e9 * kPcieEfficiency;
}

double storedWeightBytes(const ModelArchitecture &arch, const TrainingConfig &t)
{
    // Quantized weights travel in their stored format, scales included (weight_format.cpp).
    if (t.quantization != Quantization::None)
        return layoutBitsPerWeight(parameterLayout(arch), t.quantization, t.quantization_options)
               / 8.0;
    // FSDP and ZeRO gather the 16-bit copy under mixed precision, the fp32 weights under AMP.
    return isMixedMaster(t.precision) ? 2.0 : weightBytes(t.precision);
}

// FSDP's MixedPrecision gathers the parameters in param_dtype and reduce-scatters the gradients in
// reduce_dtype (FSDP2 MixedPrecisionPolicy; the stack's choice, stack_profile.h): bf16 weights on
// the wire under accelerate's and torchtitan's AMP rather than the stored fp32.
void fsdpWireBytes(const EstimateInput &input, double &weight, double &gradient)
{
    const EstimateInput in = resolveStackChoices(input);
    const ParallelismConfig &p = in.parallelism;
    const bool fsdp = p.sharding == Sharding::FsdpFull || p.sharding == Sharding::FsdpGradOp;
    if (!fsdp || p.gpus < 2 || in.training.quantization != Quantization::None)
        return;
    if (graphTrainingConfig(in).precision != in.training.precision)
        weight = paramDtypeBytes(*p.fsdp_param_dtype);
    if (p.fsdp_reduce_dtype && isAmp(in.training.precision))
        gradient = paramDtypeBytes(*p.fsdp_reduce_dtype);
}

// Activation offloading (torchtune's OffloadActivations with streams): each checkpointed layer's
// input goes to pinned CPU RAM on a side stream in forward and comes back in backward, each copy
// overlapping the next layer's compute; what a layer's compute does not cover waits, and the first
// copy back has nothing before it. Per micro-batch.
double activationOffloadSeconds(const EstimateInput &in, const MicroBatchWork &work, double pcie)
{
    const TrainingConfig &tr = in.training;
    if (tr.mode != Mode::Train || !tr.activation_offloading || pcie <= 0)
        return 0;
    const double L = static_cast<double>(std::max<std::int64_t>(1, in.arch.layers));
    // A layer input in the residual stream's dtype, as the memory model sizes it.
    const double bytes = graphPrecision(tr).stream;
    const double copy = tokensPerGpu(in) * static_cast<double>(in.arch.hidden_size) * bytes / pcie;
    const double forwardLayer = work.forward.gpuSeconds() / L;
    const double backwardLayer = (work.backward.gpuSeconds() + work.recompute.gpuSeconds()) / L;
    return L * (std::max(0.0, copy - forwardLayer) + std::max(0.0, copy - backwardLayer)) + copy;
}

} // namespace

double rankParameters(const ModelArchitecture &arch, std::int64_t tensorParallel)
{
    const double t = static_cast<double>(std::max<std::int64_t>(1, tensorParallel));
    double total = 0;
    for (const TensorGroup &g : parameterLayout(arch))
        total += g.totalElements() / (g.tensor_parallel_split ? t : 1.0);
    return total;
}

double rankTrainableParameters(const EstimateInput &in)
{
    const double t = static_cast<double>(std::max<std::int64_t>(1, in.parallelism.tensor_parallel));
    if (in.training.method == Method::Full)
        return rankParameters(in.arch, in.parallelism.tensor_parallel);
    return loraParameters(parameterLayout(in.arch), in.training.lora.targets, in.training.lora.rank)
           / t;
}

// Per sharding (ZeRO paper, Rajbhandari et al. 2020, section 7: stage 1 and 2 move 2 Psi per step
// like DDP, stage 3 3 Psi; FSDP, Zhao et al. 2023, section 3):
//  - DDP: one all-reduce of the gradients per step, overlapped with the last micro-batch's backward
//    in buckets (the last bucket waits);
//  - ZeRO-1: a reduce-scatter of the gradients per step, an all-gather of the updated weights after
//    the optimizer step (not overlapped);
//  - ZeRO-2: the reduce-scatter in every micro-batch's backward, the all-gather after the step;
//  - ZeRO-3 / FSDP FULL_SHARD: weights all-gathered in every forward and again in every backward,
//    gradients reduce-scattered in every backward; prefetching hides them behind compute except
//    for the first unit;
//  - FSDP SHARD_GRAD_OP: weights gathered once per micro-batch and kept through backward;
//  - hybrid sharding (shard_group): the above within each group, then one all-reduce of the
//    gradient shards across the groups per step, overlapped with backward like DDP's;
//  - tensor parallelism: two all-reduces of the activations per layer in forward, two in backward
//    (Megatron-LM, Shoeybi et al. 2019, section 3), two more in a recomputed forward; not overlapped.
//    Sequence parallelism swaps each for an all-gather and a reduce-scatter that move the same
//    bytes (Korthikanti et al. 2022, section 4.2.2): the same time.
CommunicationTime communicationTime(const EstimateInput &in,
                                    const GpuPerformance &gpu,
                                    const MicroBatchWork &work)
{
    CommunicationTime out;
    const TrainingConfig &tr = in.training;
    const ParallelismConfig &par = in.parallelism;
    const bool train = tr.mode == Mode::Train;
    const double t = static_cast<double>(std::max<std::int64_t>(1, par.tensor_parallel));
    const double dp = static_cast<double>(std::max<std::int64_t>(1, par.dataParallel()));
    const double gpus = static_cast<double>(std::max<std::int64_t>(1, par.gpus));
    const double accumulation = train ? static_cast<double>(tr.gradient_accumulation_steps) : 1.0;
    const double L = static_cast<double>(std::max<std::int64_t>(1, in.arch.layers));
    const double forward = work.forward.gpuSeconds();
    const double backward = work.backward.gpuSeconds() + work.recompute.gpuSeconds();

    // Tensor parallelism.
    if (t > 1) {
        const double tokens = tokensPerGpu(in);
        const double bytes = tokens * static_cast<double>(in.arch.hidden_size)
                             * (tr.precision == Precision::Fp32 ? 4.0 : 2.0);
        double count = 2 * L;
        if (train)
            count += 2 * L + 2 * static_cast<double>(checkpointedLayers(tr, in.arch.layers));
        const double bw = collectiveBandwidth(gpu, t > gpu.gpus_per_node);
        double perMicroBatch = count * allReduceSeconds(bytes, t, bw);
        // lm_head's output gathered whole on every rank (Hugging Face's colwise_rep); its
        // gradient is each rank's own slice again, no traffic. TRL's chunked loss gathers the
        // weight instead (full_tensor(); its gradient is narrowed back to the slice).
        const double elementBytes = tr.precision == Precision::Fp32 ? 4.0 : 2.0;
        const double vocab = static_cast<double>(in.arch.vocab_size);
        if (train && tr.loss == LossImplementation::TrlChunkedNll)
            perMicroBatch += gatherSeconds(vocab * static_cast<double>(in.arch.hidden_size)
                                               * elementBytes,
                                           t,
                                           bw);
        else if (!tensorParallelPlan(par, tr.stack).loss_parallel)
            perMicroBatch += gatherSeconds(tokens * vocab * elementBytes, t, bw);
        out.total += accumulation * perMicroBatch;
        out.exposed += accumulation * perMicroBatch;
    }

    // Pipeline parallelism: a stage sends each micro-batch's output to the next stage and its
    // gradient back (torch.distributed.pipelining's batch_isend_irecv, Megatron-LM's
    // p2p_communication.py), waited on before the next compute: exposed. The stages are the
    // outermost mesh dimension (torchtitan), so neighbours sit on other nodes once the job does.
    if (train && par.pipeline_parallel > 1) {
        const double bytes = tokensPerGpu(in) * static_cast<double>(in.arch.hidden_size)
                             * (tr.precision == Precision::Fp32 ? 4.0 : 2.0);
        const int ends = (in.arch.holds_embedding ? 1 : 0) + (in.arch.holds_head ? 1 : 0);
        const double transfers = 2.0 * (2 - ends);
        const double seconds = accumulation * transfers * bytes
                               / collectiveBandwidth(gpu, gpus > gpu.gpus_per_node);
        out.total += seconds;
        out.exposed += seconds;
    }

    // Context parallelism: ring attention's keys and values inside the tensor x context group,
    // laid out innermost (torchtitan's mesh [dp_replicate, dp_shard, cp, tp]).
    if (par.context_parallel > 1) {
        const double group = t * static_cast<double>(par.context_parallel);
        const RingTraffic ring
            = ringAttentionTraffic(in, work, collectiveBandwidth(gpu, group > gpu.gpus_per_node));
        out.total += accumulation * ring.total;
        out.exposed += accumulation * ring.exposed;
    }

    const double weights = rankParameters(in.arch, par.tensor_parallel);
    const double trainable = rankTrainableParameters(in);
    double wBytes = storedWeightBytes(in.arch, tr);
    double gBytes = gradientBytes(tr.precision);
    fsdpWireBytes(in, wBytes, gBytes);
    if (train && dp > 1) {
        const double bw = collectiveBandwidth(gpu, gpus > gpu.gpus_per_node);
        // Hybrid sharding: the sharded collectives stay in the shard group (on one node when it
        // fits); the gradient shards are then all-reduced across the replicas.
        const double group = par.sharding == Sharding::None
                                 ? dp
                                 : static_cast<double>(par.shardDegree());
        const double groupBw = collectiveBandwidth(gpu, group * t > gpu.gpus_per_node);
        const double gather = gatherSeconds(weights * wBytes, group, groupBw);
        const double trainableGather = gatherSeconds(trainable * weightBytes(tr.precision),
                                                     group,
                                                     groupBw);
        const double scatter = gatherSeconds(trainable * gBytes, group, groupBw);
        const double reduce = allReduceSeconds(trainable * gBytes, dp, bw);
        if (group < dp) {
            const double replicas = allReduceSeconds(trainable * gBytes / group, dp / group, bw);
            out.total += replicas;
            out.exposed += std::max(0.0, replicas - backward) + replicas / L;
        }
        double perMicro = 0, exposedMicro = 0, perStep = 0, exposedStep = 0;
        switch (par.sharding) {
        case Sharding::None:
            perStep = reduce;
            exposedStep = std::max(0.0, reduce - backward) + reduce / L;
            break;
        case Sharding::Zero1:
            perStep = scatter + trainableGather;
            exposedStep = std::max(0.0, scatter - backward) + scatter / L + trainableGather;
            break;
        case Sharding::Zero2:
            perMicro = scatter;
            exposedMicro = std::max(0.0, scatter - backward) + scatter / L;
            perStep = trainableGather;
            exposedStep = trainableGather;
            break;
        case Sharding::Zero3:
        case Sharding::FsdpFull:
            perMicro = 2 * gather + scatter;
            exposedMicro = std::max(0.0, gather - forward)
                           + std::max(0.0, gather + scatter - backward) + gather / L;
            break;
        case Sharding::FsdpGradOp:
            perMicro = gather + scatter;
            exposedMicro = std::max(0.0, gather - forward) + std::max(0.0, scatter - backward)
                           + gather / L;
            break;
        }
        // TRL's chunked loss under ZeRO-3 gathers lm_head in every chunk's forward and
        // recomputation (trlGathersHeadPerChunk), inside the chunk, with nothing to hide behind:
        // two gathers per chunk where the head module would have had two per micro-batch.
        if (trlGathersHeadPerChunk(in)) {
            const double valid = static_cast<double>(tr.micro_batch_size)
                                 * static_cast<double>(
                                     std::max<std::int64_t>(1, tr.sequence_length - 1));
            const double chunks = std::ceil(valid / kTrlLossChunkTokens);
            const double head = static_cast<double>(in.arch.vocab_size)
                                * static_cast<double>(in.arch.hidden_size) * wBytes;
            const double extra = 2 * (chunks - 1) * gatherSeconds(head, group, groupBw);
            perMicro += extra;
            exposedMicro += extra;
        }
        out.total += accumulation * perMicro + perStep;
        out.exposed += accumulation * exposedMicro + exposedStep;
    }

    // Offload over PCIe. Parameters (ZeRO-3 / FSDP offload_params): the rank's shard comes to the GPU
    // for every forward and backward and its gradients go back, prefetched behind compute. Optimizer
    // (ZeRO-Offload, Ren et al. 2021): gradients down, the step on the CPU, weights back up, once per
    // step and not overlapped (DeepSpeed's default, without delayed parameter update).
    const double pcie = pcieBandwidth(gpu);
    if (train && tr.offload.parameters) {
        const double shard = weights / static_cast<double>(par.shardDegree());
        const double perMicro = 2 * shard * wBytes / pcie + trainable / dp * gBytes / pcie;
        out.offload_exposed += accumulation
                               * (std::max(0.0, perMicro - forward - backward) + perMicro / L);
    }
    if (train && tr.offload.optimizer) {
        const bool sharded = par.sharding != Sharding::None;
        const double shard = trainable / (sharded ? static_cast<double>(par.shardDegree()) : 1.0);
        const double copies = shard * (gBytes + weightBytes(tr.precision)) / pcie;
        const double cpuStep = shard
                               * optimizerBytesPerParameter(Optimizer::AdamWFused,
                                                            Precision::MixedBf16)
                               / (kHostMemoryGbps * 1e9);
        out.offload_exposed += copies + cpuStep;
    }
    out.offload_exposed += accumulation * activationOffloadSeconds(in, work, pcie);
    return out;
}

} // namespace membudget
