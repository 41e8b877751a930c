// SPDX-License-Identifier: GPL-3.0-or-later
#include "throughput/throughput_model.h"

#include "model/dataset_config.h"
#include "model/pipeline_parallel.h"
#include "model/stack_profile.h"
#include "throughput/attention_kernel.h"
#include "throughput/communication.h"
#include "throughput/context_parallel_work.h"
#include "throughput/device_model.h"
#include "throughput/optimizer_traffic.h"
#include "throughput/step_work.h"
#include "throughput/throughput_constants.h"

#include <algorithm>
#include <cmath>

namespace membudget {

namespace {

// The reference for relative comparisons: an A100 80GB SXM's figures (presets/gpus.yaml).
GpuPerformance referenceGpu()
{
    GpuPerformance g;
    g.architecture = GpuArchitecture::Ampere;
    g.bf16_tflops = g.fp16_tflops = 312;
    g.tf32_tflops = 156;
    g.fp32_tflops = 19.5;
    g.memory_bandwidth_gbps = 2039;
    g.multiprocessors = 108;
    g.matmul_efficiency = 0.869;
    g.interconnect = Interconnect::NvLink;
    g.interconnect_gbps = 300;
    g.pcie_generation = 4;
    g.network_gbps = 25;
    g.power_limited = true;
    return g;
}

// The optimizer step and gradient accumulation on the GPU, per step: bound by memory.
double optimizerSeconds(const EstimateInput &in, const DeviceModel &device)
{
    const TrainingConfig &tr = in.training;
    if (tr.mode != Mode::Train || tr.offload.optimizer)
        return 0;
    const ParallelismConfig &par = in.parallelism;
    const double dp = static_cast<double>(std::max<std::int64_t>(1, par.dataParallel()));
    const double trainable = rankTrainableParameters(in);
    const bool shardStates = par.sharding != Sharding::None;
    const bool shardGrads = par.sharding != Sharding::None && par.sharding != Sharding::Zero1;
    double perParameter = optimizerBytesPerParameter(tr.optimizer, tr.precision);
    if (deepSpeedStepsOnGpu(in)) {
        DeepSpeedStepCopies copies;
        copies.overflow_check = par.sharding == Sharding::Zero3 && deepSpeedZero3ChecksOverflow(tr);
        copies.cloned_master_bytes = deepSpeedClonedMasterBytes(in);
        perParameter = deepSpeedStepBytesPerParameter(tr.optimizer, tr.precision, copies);
    }
    double bytes = trainable / (shardStates ? dp : 1.0) * perParameter;
    // Autograd adds each later micro-batch's gradient to .grad: read both, write one.
    bytes += static_cast<double>(tr.gradient_accumulation_steps - 1) * 3
             * gradientBytes(tr.precision) * trainable / (shardGrads ? dp : 1.0);
    return device.memorySeconds(bytes);
}

} // namespace

namespace {

ThroughputEstimate stageThroughput(const EstimateInput &given, const GpuPerformance &gpu)
{
    // What the step runs as: the Trainer's autocast, DeepSpeed's precision and module cast.
    EstimateInput in = given;
    in.training.trainer_autocast = trainerAutocast(given);
    castModuleForDeepSpeed(in.training, in.parallelism);
    const TrainingConfig &tr = in.training;
    ThroughputEstimate out;
    const DeviceModel device(gpu, tr.precision, sdpaKernel(in, gpu));
    if (!device.usable()) {
        out.problem = std::string("this GPU preset has no speed figures for ")
                      + precisionName(tr.precision) + " (it needs " + peakTflopsKey(tr.precision)
                      + " and memory_bandwidth_gbps)";
        return out;
    }
    if (tr.float8 && tr.mode == Mode::Train && !device.hasFloat8()) {
        out.problem = "float8 training needs FP8 tensor cores (Hopper, Ada, Blackwell, MI300): "
                      "this GPU preset has no fp8_tflops";
        return out;
    }
    if (tr.micro_batch_size < 1 || tr.sequence_length < 1 || in.arch.layers < 1) {
        out.problem = "nothing to run";
        return out;
    }
    const bool train = tr.mode == Mode::Train;
    const MicroBatchWork work
        = contextParallelShare(microBatchWork(in.arch, tr, in.parallelism.tensor_parallel, device),
                               in,
                               device);
    const double gpu_seconds = work.gpuSeconds();
    // The host launches kernels asynchronously: the GPU runs at its own pace unless the host takes
    // longer to issue the operators than the GPU takes to run them.
    const double host_seconds = work.hostOps() * kHostSecondsPerOp;
    const double micro = std::max(gpu_seconds, host_seconds);
    const double accumulation = train ? static_cast<double>(tr.gradient_accumulation_steps) : 1.0;
    const CommunicationTime comm = communicationTime(in, gpu, work);

    ThroughputBreakdown &b = out.breakdown;
    auto add = [&](const WorkTally &w) {
        b.matmul += accumulation * w.matmul;
        b.attention += accumulation * w.attention;
        b.elementwise += accumulation * w.elementwise;
        b.dequantize += accumulation * w.dequantize;
    };
    add(work.forward);
    add(work.backward);
    add(work.recompute);
    b.host_wait = accumulation * (micro - gpu_seconds);
    b.communication = comm.exposed;
    b.offload = comm.offload_exposed;
    b.optimizer = optimizerSeconds(in, device);

    const double gpus = static_cast<double>(std::max<std::int64_t>(1, in.parallelism.gpus));
    // Sequences a step runs side by side: context-parallel GPUs share theirs.
    const double dp = static_cast<double>(in.parallelism.batchReplicas());
    const double tokensPerMicro = static_cast<double>(tr.micro_batch_size)
                                  * static_cast<double>(tr.sequence_length);
    out.step_seconds = b.total();
    out.micro_batch_seconds = micro;
    out.tokens_per_step = tokensPerMicro * accumulation * dp;
    out.tokens_per_second = out.step_seconds > 0 ? out.tokens_per_step / out.step_seconds : 0;
    out.tokens_per_second_per_gpu = out.tokens_per_second / gpus;
    out.model_flops_per_step = work.model_flops * accumulation * gpus;
    out.peak_flops_per_gpu = device.peakFlops();
    if (out.step_seconds > 0)
        out.mfu = out.model_flops_per_step / (out.step_seconds * device.peakFlops() * gpus);
    if (!train) {
        const WorkTally decode = decodeStepWork(in.arch,
                                                tr,
                                                in.parallelism.tensor_parallel,
                                                tr.sequence_length,
                                                device);
        const double step = std::max(decode.gpuSeconds(), decode.host_ops * kHostSecondsPerOp)
                            + comm.exposed / static_cast<double>(tr.sequence_length);
        out.decode_tokens_per_second = step > 0
                                           ? static_cast<double>(tr.micro_batch_size) * dp / step
                                           : 0;
    }
    out.valid = std::isfinite(out.step_seconds) && out.step_seconds > 0;
    if (!out.valid)
        out.problem = "the step time is out of range";
    return out;
}

// Pipeline parallelism: every stage runs each micro-batch once, so the step goes at the pace of the
// slowest of the candidate stages (pipelineCandidateStages), and each stage idles while the
// pipeline fills and drains: the bubble, (p - 1) / (v m) of its compute (pipeline_parallel.h).
ThroughputEstimate pipelineThroughput(const EstimateInput &in, const GpuPerformance &gpu)
{
    const std::int64_t p = in.parallelism.pipeline_parallel;
    ThroughputEstimate out = stageThroughput(pipelineStageInput(in, 0), gpu);
    if (!out.valid)
        return out;
    for (const std::int64_t i : pipelineCandidateStages(in)) {
        if (i == 0)
            continue;
        const ThroughputEstimate stage = stageThroughput(pipelineStageInput(in, i), gpu);
        if (stage.valid && stage.step_seconds > out.step_seconds)
            out = stage;
    }
    ThroughputBreakdown &b = out.breakdown;
    const double compute = b.matmul + b.attention + b.elementwise + b.dequantize + b.host_wait;
    b.pipeline_bubble = compute
                        * pipelineBubbleFraction(in.parallelism,
                                                 in.training.gradient_accumulation_steps);
    EstimateInput whole = in;
    whole.parallelism.pipeline_parallel = 1;
    const double gpus = static_cast<double>(std::max<std::int64_t>(1, in.parallelism.gpus));
    // The whole model's work once per micro-batch replica, whichever stage sets the pace.
    out.model_flops_per_step = stageThroughput(whole, gpu).model_flops_per_step
                               / static_cast<double>(p);
    out.step_seconds = b.total();
    out.tokens_per_second = out.step_seconds > 0 ? out.tokens_per_step / out.step_seconds : 0;
    out.tokens_per_second_per_gpu = out.tokens_per_second / gpus;
    out.mfu = out.step_seconds > 0
                  ? out.model_flops_per_step / (out.step_seconds * out.peak_flops_per_gpu * gpus)
                  : 0;
    out.valid = std::isfinite(out.step_seconds) && out.step_seconds > 0;
    return out;
}

} // namespace

ThroughputEstimate estimateThroughput(const EstimateInput &in, const GpuPerformance &gpu)
{
    if (in.parallelism.pipeline_parallel > 1 && in.training.mode == Mode::Train)
        return pipelineThroughput(in, gpu);
    return stageThroughput(in, gpu);
}

ThroughputEstimate estimateRelativeThroughput(const EstimateInput &input, const GpuPerformance &gpu)
{
    ThroughputEstimate t = estimateThroughput(input, gpu);
    if (t.valid)
        return t;
    return estimateThroughput(input, referenceGpu());
}

RunEstimate estimateRun(const ThroughputEstimate &t,
                        const EstimateInput &in,
                        const DatasetConfig &data,
                        double pricePerHour)
{
    RunEstimate run;
    if (!t.valid || data.examples <= 0 || !(data.epochs > 0) || t.tokens_per_step <= 0)
        return run;
    const double perExample = data.tokens_per_example > 0
                                  ? static_cast<double>(data.tokens_per_example)
                                  : static_cast<double>(in.training.sequence_length);
    run.tokens = static_cast<double>(data.examples) * perExample * data.epochs;
    run.steps = std::ceil(run.tokens / t.tokens_per_step - 1e-9);
    run.run_seconds = run.steps * t.step_seconds;
    run.gpu_hours = run.run_seconds
                    * static_cast<double>(std::max<std::int64_t>(1, in.parallelism.gpus)) / 3600.0;
    run.has_price = pricePerHour > 0;
    run.price_per_hour = pricePerHour;
    run.cost = run.has_price ? run.gpu_hours * pricePerHour : 0;
    run.valid = std::isfinite(run.run_seconds);
    return run;
}

} // namespace membudget
