// SPDX-License-Identifier: GPL-3.0-or-later
#include "estimate_table.h"

#include "advice/explanation.h"
#include "advice/fit_solver.h"
#include "advice/gpu_verdict.h"
#include "base/time_format.h"
#include "model/pipeline_parallel.h"
#include "model/stack_profile.h"
#include "model/weight_format.h"
#include "throughput/throughput_model.h"

#include <algorithm>

namespace membudget::cli {

std::string padded(const std::string &text, std::size_t width, bool right)
{
    std::size_t length = 0;
    for (char c : text)
        length += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0; // lead bytes
    if (length >= width)
        return text;
    const std::string fill(width - length, ' ');
    return right ? fill + text : text + fill;
}

namespace {

// "Per GPU is the pipeline's stage 1 of 4: …" and every stage's allocated peak on one line.
std::string pipelineStagesText(const EstimateInput &input, const std::string &stage, ByteUnit unit)
{
    std::string out = "Per GPU is the pipeline's " + stage
                      + (input.pipeline_stage >= 0 ? ", as --stage asks"
                                                   : ", the stage that allocates the most")
                      + ".\nAllocated peak by stage:";
    const std::vector<PipelineStagePeak> peaks = pipelineStagePeaks(input);
    for (const PipelineStagePeak &p : peaks)
        out += std::string(p.stage ? "," : "") + " " + std::to_string(p.stage + 1) + ": "
               + formatBytes(p.peak_allocated, unit);
    return out + ".\n";
}

// ": optimizer adamw-fused, loss hf" - the choices the stack made (none for plain-torch).
std::string stackDefaultsText(const EstimateInput &in)
{
    if (in.training.stack.name == Stack::PlainTorch)
        return "";
    std::string s;
    for (const StackChoice &c : stackChoices(in)) {
        if (!c.from_stack)
            continue;
        const std::size_t dot = c.key.rfind('.');
        s += (s.empty() ? ": " : ", ") + c.key.substr(dot + 1) + " " + c.value;
    }
    return s;
}

std::string bitsText(double bits)
{
    char text[16];
    std::snprintf(text, sizeof text, "%.2f", bits);
    return text;
}

std::string describeTraining(const EstimateInput &in)
{
    const TrainingConfig &t = in.training;
    std::string s = "stack " + describeStack(t.stack) + stackDefaultsText(in) + "\n";
    s += std::string(modeName(t.mode)) + " · " + methodName(t.method);
    if (t.method != Method::Full && t.mode == Mode::Train) {
        if (t.method != Method::Ia3)
            s += " r" + std::to_string(t.lora.rank) + (t.lora.use_dora ? " dora" : "")
                 + (t.lora.use_rslora ? " rslora" : "")
                 + (t.lora.loraplus_lr_ratio > 0 ? " lora+" : "");
        const auto names = loraTargetNames(t.method == Method::Ia3 ? t.ia3.targets : t.lora.targets);
        s += " [";
        for (std::size_t i = 0; i < names.size(); ++i)
            s += (i ? "," : "") + names[i];
        s += "]";
    }
    s += std::string(" · ") + precisionName(deepSpeedPrecision(t, in.parallelism));
    if (t.quantization != Quantization::None)
        s += std::string(" · ") + quantizationName(t.quantization) + " "
             + bitsText(layoutBitsPerWeight(parameterLayout(in.arch),
                                            t.quantization,
                                            t.quantization_options))
             + " bits/weight";
    if (t.mode == Mode::Train)
        s += std::string(" · ") + optimizerName(t.optimizer)
             + (t.optimizer_in_backward ? " (step in backward)" : "");
    if (t.mode == Mode::Inference) {
        const InferenceConfig &i = t.inference;
        s += " · " + std::to_string(t.micro_batch_size) + " sequences x "
             + std::to_string(t.sequence_length) + " prompt + " + std::to_string(i.generated_tokens)
             + " generated tokens · " + kvCacheKindName(i.kv_cache) + " KV cache";
        if (i.kv_cache_dtype != KvCacheDtype::Model)
            s += std::string(" ") + kvCacheDtypeName(i.kv_cache_dtype);
    } else {
        s += " · batch " + std::to_string(t.micro_batch_size) + " x "
             + std::to_string(t.sequence_length) + " tokens";
    }
    if (t.gradient_accumulation_steps > 1)
        s += " x " + std::to_string(t.gradient_accumulation_steps) + " accumulation";
    if (t.mode == Mode::Train)
        s += std::string(" · checkpointing ") + checkpointingName(t.checkpointing);
    if (t.checkpointing == Checkpointing::Full && checkpointedLayers(t, in.arch.layers) > 0
        && t.checkpoint_every > 1)
        s += " (1 in " + std::to_string(t.checkpoint_every) + " layers)";
    if (t.mode == Mode::Train && t.activation_offloading)
        s += " + activation offloading";
    if (t.mode == Mode::Train && t.float8)
        s += " · float8 linears";
    s += std::string(" · ") + attentionName(t.attention) + " attention";
    if (in.parallelism.gpus > 1)
        s += " · " + std::to_string(in.parallelism.gpus) + " GPUs "
             + shardingName(in.parallelism.sharding);
    if (in.parallelism.tensor_parallel > 1)
        s += " TP" + std::to_string(in.parallelism.tensor_parallel)
             + (tensorParallelPlan(in.parallelism, t.stack).sequence_parallel ? " + SP" : "");
    if (in.parallelism.context_parallel > 1)
        s += " CP" + std::to_string(in.parallelism.context_parallel);
    if (in.parallelism.pipeline_parallel > 1)
        s += " PP" + std::to_string(in.parallelism.pipeline_parallel) + " "
             + pipelineScheduleName(in.parallelism.pipeline_schedule);
    return s;
}

std::string percent(double fraction)
{
    char text[16];
    std::snprintf(text, sizeof text, "%.0f%%", 100 * fraction);
    return text;
}

// Step time, tokens per second and MFU on each GPU, and with a dataset the run's time, GPU-hours and
// cost (docs/throughput-model.md).
std::string speedTable(const Scenario &scenario,
                       const EstimateInput &input,
                       const std::vector<GpuSpec> &gpus)
{
    const bool train = input.training.mode == Mode::Train;
    const std::int64_t count = input.parallelism.gpus;
    std::string out = "\nSpeed (modelled, docs/throughput-model.md)";
    out += count > 1 ? ", " + std::to_string(count) + " GPUs of each:\n" : ":\n";
    out += padded("GPU", 24) + padded(train ? "Step" : "Prefill", 12, true)
           + padded("Tokens/s", 12, true) + padded("per GPU", 11, true) + padded("MFU", 6, true);
    if (!train)
        out += padded("Decode tok/s", 14, true);
    if (scenario.dataset)
        out += padded("Run", 14, true) + padded("GPU-hours", 11, true) + padded("$/GPU-h", 9, true)
               + padded("Cost", 11, true);
    out += "\n";
    for (const GpuSpec &g : gpus) {
        const ThroughputEstimate t = estimateThroughput(input, g.performance);
        out += padded(g.id, 24);
        if (!t.valid) {
            out += "  no estimate: " + t.problem + "\n";
            continue;
        }
        out += padded(formatDuration(t.step_seconds), 12, true)
               + padded(formatRate(t.tokens_per_second), 12, true)
               + padded(formatRate(t.tokens_per_second_per_gpu), 11, true)
               + padded(percent(t.mfu), 6, true);
        if (!train)
            out += padded(formatRate(t.decode_tokens_per_second), 14, true);
        if (scenario.dataset) {
            const double price = gpuHourPrice(scenario, g.id, g.performance.price_per_hour);
            const RunEstimate run = estimateRun(t, input, *scenario.dataset, price);
            char hours[32];
            std::snprintf(hours, sizeof hours, "%.2f", run.gpu_hours);
            out += padded(formatDuration(run.run_seconds), 14, true) + padded(hours, 11, true)
                   + padded(run.has_price ? formatCost(price) : std::string("-"), 9, true)
                   + padded(run.has_price ? formatCost(run.cost) : std::string("no price"),
                            11,
                            true);
        }
        out += "\n";
    }
    if (scenario.dataset) {
        const ThroughputEstimate any = estimateRelativeThroughput(input, GpuPerformance{});
        const RunEstimate run = estimateRun(any, input, *scenario.dataset, 0);
        const DatasetConfig &d = *scenario.dataset;
        char epochs[32];
        std::snprintf(epochs, sizeof epochs, "%g", d.epochs);
        out += "Dataset: " + formatCount(static_cast<double>(d.examples)) + " examples x "
               + formatCount(static_cast<double>(d.tokens_per_example > 0
                                                     ? d.tokens_per_example
                                                     : input.training.sequence_length))
               + " tokens x " + epochs + (d.epochs == 1 ? " epoch" : " epochs") + " = "
               + formatCount(run.tokens) + " tokens, " + formatCount(run.steps)
               + (train ? " optimizer steps of " : " prefills of ")
               + formatCount(any.tokens_per_step) + " tokens.\n";
    }
    return out;
}

} // namespace

std::string estimateTable(const Scenario &scenario,
                          const EstimateInput &input,
                          const MemoryEstimate &est,
                          const std::vector<GpuSpec> &gpus,
                          ByteUnit unit)
{
    std::string out;
    out += scenario.name.empty() ? std::string("Scenario") : scenario.name;
    out += "\n";
    out += "Model: "
           + (scenario.model.preset.empty() ? std::string("custom architecture")
                                            : scenario.model.preset)
           + " · " + formatCount(static_cast<double>(est.parameters)) + " parameters";
    if (est.training) {
        const std::string share
            = formatFixed(100.0 * static_cast<double>(est.trainable_parameters)
                              / std::max<double>(1.0, static_cast<double>(est.parameters)),
                          2);
        out += ", " + formatCount(static_cast<double>(est.trainable_parameters)) + " trainable ("
               + share + "%)";
    }
    out += '\n';
    out += describeTraining(input);
    out += "\n\n";

    const int phaseCount = est.training ? kPhaseCount : 1;
    out += padded("Per GPU", 19);
    for (int p = 0; p < phaseCount; ++p) {
        std::string label = phaseLabel(static_cast<Phase>(p));
        if (!est.training)
            label = "Inference";
        if (static_cast<Phase>(p) == est.peak_phase)
            label += " *";
        out += padded(label, 17, true);
    }
    out += "\n";
    for (int c = 0; c < kComponentCount; ++c) {
        const auto comp = static_cast<Component>(c);
        if (!componentApplies(comp, est.training))
            continue; // no gradient rows in inference, no KV cache row in training
        const std::string name = componentLabel(comp);
        out += padded(name, 19);
        for (int p = 0; p < phaseCount; ++p)
            out += padded(formatBytes(est.phases[static_cast<std::size_t>(p)][comp], unit),
                          17,
                          true);
        out += "\n";
    }
    out += padded("Allocated", 19);
    for (int p = 0; p < phaseCount; ++p)
        out += padded(formatBytes(est.phases[static_cast<std::size_t>(p)].allocated(), unit),
                      17,
                      true);
    out += "\n";
    out += padded("Device total", 19);
    for (int p = 0; p < phaseCount; ++p)
        out += padded(formatBytes(est.phases[static_cast<std::size_t>(p)].total(), unit), 17, true);
    out += "\n\n";

    out += "Peak: " + formatBytes(est.peak_allocated, unit)
           + " allocated (torch max_memory_allocated), " + formatBytes(est.peak_reserved, unit)
           + " reserved, " + formatBytes(est.device_total, unit) + " on the device (nvidia-smi)";
    if (est.training)
        out += std::string(", in the ") + phaseLabel(est.peak_phase) + " phase";
    out += ".\n";
    out += explainPhase(input, est, est.peak_phase, unit) + "\n";
    if (const std::string stage = pipelineStageSummary(input.parallelism, est.derivation);
        !stage.empty())
        out += pipelineStagesText(input, stage, unit);
    if (est.paged_optimizer_bytes > 0)
        out += "Paged optimizer states: " + formatBytes(est.paged_optimizer_bytes, unit)
               + " per GPU in CUDA managed memory, outside the caching allocator (paged to CPU "
                 "RAM when the GPU is full; not in the totals above).\n";
    if (est.cpu_offload_total > 0)
        out += "CPU RAM for offload: " + formatBytes(est.cpu_offload_bytes, unit) + " per GPU, "
               + formatBytes(est.cpu_offload_total, unit) + " in all.\n";
    if (est.too_large)
        out += "Warning: some figures are too large to represent (over 8 EiB).\n";

    const std::int64_t context = input.arch.context_length;
    if (context > 0 && input.training.sequence_length > context)
        out += "Warning: " + formatCount(static_cast<double>(input.training.sequence_length))
               + " tokens is beyond the model's context length of "
               + formatCount(static_cast<double>(context))
               + " (max_position_embeddings); set model.rope_scaling_factor if you extend it.\n";

    out += "\nHow each component at the peak comes about:\n";
    for (int c = 0; c < kComponentCount; ++c) {
        const auto comp = static_cast<Component>(c);
        if (!componentApplies(comp, est.training))
            continue;
        out += "  " + padded(componentLabel(comp), 18) + " "
               + explainComponent(input, est, est.peak_phase, comp, unit) + "\n";
    }

    if (!gpus.empty()) {
        const StepModel model(input);
        const MemoryBand band = memoryBand(model, est);
        out += "\nOn the device: " + formatBytes(band.expected, unit) + " expected, "
               + formatBytes(band.low, unit) + " to " + formatBytes(band.high, unit)
               + " (allocator, CUDA context and NCCL buffers at their low and high ends).\n";
        // Max batch and Max seq.: "none" where even 1 does not fit, thousands separators, and a
        // mark where the model's context length, not the memory, is the limit.
        const auto count = [](std::int64_t v) {
            return v > 0 ? formatCount(static_cast<double>(v)) : std::string("none");
        };
        bool contextMarked = false;
        out += "\n" + padded("GPU", 24) + padded("Capacity", 12, true) + padded("Verdict", 14, true)
               + padded("Headroom", 12, true) + padded("Max batch", 11, true)
               + padded("Max seq", 12, true) + "\n";
        std::string reasons;
        for (const GpuSpec &g : gpus) {
            const GpuVerdict v = gpuVerdict(model, est, g.memory_bytes, unit);
            // Headroom is capacity minus need ("-3.2 GB" when over); "n/a" when the need is too
            // large to represent.
            const std::string head = formatByteChange(est.device_total, g.memory_bytes, unit, 1);
            const std::int64_t seq = maxSequenceLength(model, g.memory_bytes);
            const bool atContext = context > 0 && seq == context;
            contextMarked = contextMarked || atContext;
            out += padded(g.id, 24) + padded(formatCapacity(g.memory_bytes, unit), 12, true)
                   + padded(verdictLabel(v.verdict), 14, true)
                   + padded(head.front() == '+' ? head.substr(1) : head, 12, true)
                   + padded(count(maxMicroBatch(model, g.memory_bytes)), 11, true)
                   + padded(count(seq) + (atContext ? "*" : ""), 12, true) + "\n";
            if (!v.reason.empty())
                reasons += "  " + g.id + ": " + v.reason + ".\n";
        }
        if (contextMarked)
            out += "* the model's context length (max_position_embeddings x rope_scaling_factor)\n";
        out += reasons;
        out += speedTable(scenario, input, gpus);
    }
    return out;
}

} // namespace membudget::cli
