// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/estimate_json.h"

#include "advice/explanation.h"
#include "advice/fit_solver.h"
#include "advice/gpu_verdict.h"
#include "model/pipeline_parallel.h"
#include "model/scenario.h"
#include "model/stack_profile.h"
#include "model/step_model.h"
#include "model/timeline_expand.h"
#include "model/timeline_live.h"
#include "model/weight_format.h"
#include "throughput/throughput_model.h"

namespace membudget {

namespace {

nlohmann::json breakdownJson(const Breakdown &b)
{
    nlohmann::json j = nlohmann::json::object();
    for (int i = 0; i < kComponentCount; ++i)
        j[componentKey(static_cast<Component>(i))] = b.bytes[static_cast<std::size_t>(i)];
    j["allocated"] = b.allocated();
    return j;
}

nlohmann::json breakdownJson(const ThroughputBreakdown &b)
{
    return {{"matmul", b.matmul},
            {"attention", b.attention},
            {"elementwise", b.elementwise},
            {"dequantize", b.dequantize},
            {"host_wait", b.host_wait},
            {"communication", b.communication},
            {"offload", b.offload},
            {"optimizer", b.optimizer},
            {"pipeline_bubble", b.pipeline_bubble}};
}

} // namespace

nlohmann::json timelineToJson(const StepModel &model)
{
    const StepTimeline &tl = model.timeline();
    const double seq = static_cast<double>(model.input().training.sequence_length);
    const double tokens = static_cast<double>(model.input().training.micro_batch_size) * seq;
    nlohmann::json events = nlohmann::json::array();
    Bytes allocated = 0;
    for (const ExpandedEvent &e : expandTimeline(tl, tokens, seq)) {
        const TimelineBlock &b = tl.blocks[static_cast<std::size_t>(e.block)];
        const TimelineTensor &t = tl.tensors[static_cast<std::size_t>(e.tensor)];
        allocated += e.alloc ? e.bytes : -e.bytes;
        events.push_back({{"stage", stageKey(b.stage)},
                          {"phase", phaseKey(b.phase)},
                          {"layer", e.layer},
                          {"tensor", timelineTensorName(t)},
                          {"component", componentKey(t.component)},
                          {"bytes", e.bytes},
                          {"alloc", e.alloc},
                          {"allocated", allocated}});
    }
    return events;
}

nlohmann::json throughputToJson(const Scenario &scenario,
                                const EstimateInput &input,
                                const GpuSpec &gpu)
{
    const ThroughputEstimate t = estimateThroughput(input, gpu.performance);
    if (!t.valid)
        return nullptr;
    nlohmann::json j;
    j["step_seconds"] = t.step_seconds;
    j["tokens_per_second"] = t.tokens_per_second;
    j["tokens_per_second_per_gpu"] = t.tokens_per_second_per_gpu;
    j["mfu"] = t.mfu;
    j["peak_flops_per_gpu"] = t.peak_flops_per_gpu;
    if (input.training.mode == Mode::Inference)
        j["decode_tokens_per_second"] = t.decode_tokens_per_second;
    j["breakdown_seconds"] = breakdownJson(t.breakdown);
    const double price = gpuHourPrice(scenario, gpu.id, gpu.performance.price_per_hour);
    j["price_per_gpu_hour"] = price > 0 ? nlohmann::json(price) : nlohmann::json(nullptr);
    if (scenario.dataset) {
        const RunEstimate run = estimateRun(t, input, *scenario.dataset, price);
        if (run.valid) {
            j["run_seconds"] = run.run_seconds;
            j["gpu_hours"] = run.gpu_hours;
            j["cost"] = run.has_price ? nlohmann::json(run.cost) : nlohmann::json(nullptr);
        }
    }
    return j;
}

// The stack and the byte-deciding choices it resolved: {"name", "version", "choices": [{"key",
// "value", "from_stack"}]}. version is null when the newest known behaviour was used.
nlohmann::json stackToJson(const EstimateInput &input)
{
    const StackConfig &s = input.training.stack;
    nlohmann::json j;
    j["name"] = stackName(s.name);
    j["version"] = s.version.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.version);
    j["description"] = describeStack(s);
    nlohmann::json choices = nlohmann::json::array();
    for (const StackChoice &c : stackChoices(input))
        choices.push_back({{"key", c.key}, {"value", c.value}, {"from_stack", c.from_stack}});
    j["choices"] = choices;
    return j;
}

namespace {

// Issue 14: the weight format, the adapter's variant and the inference shape, when they apply.
void addFormatKeys(const EstimateInput &input, nlohmann::json &j)
{
    const TrainingConfig &t = input.training;
    if (t.quantization != Quantization::None) {
        const QuantizationOptions &o = t.quantization_options;
        const ParameterLayout layout = parameterLayout(input.arch);
        j["weight_format"] = {{"quantization", quantizationName(t.quantization)},
                              {"bits", quantBits(t.quantization, o)},
                              {"bits_per_weight", layoutBitsPerWeight(layout, t.quantization, o)},
                              {"lm_head_quantized", o.lm_head},
                              {"source", weightFormatSource(t.quantization)}};
    }
    if (t.mode == Mode::Train && t.method != Method::Full)
        j["adapter"] = {{"method", methodName(t.method)},
                        {"use_dora", t.method != Method::Ia3 && t.lora.use_dora},
                        {"use_rslora", t.method != Method::Ia3 && t.lora.use_rslora},
                        {"loraplus_lr_ratio", t.lora.loraplus_lr_ratio}};
    if (t.mode == Mode::Inference) {
        const InferenceConfig &i = t.inference;
        const std::int64_t end = i.kv_cache == KvCacheKind::Static
                                     ? staticCacheLength(i, t.sequence_length)
                                     : t.sequence_length + i.generated_tokens;
        j["inference"] = {{"sequences", t.micro_batch_size},
                          {"prompt_tokens", t.sequence_length},
                          {"generated_tokens", i.generated_tokens},
                          {"cache_positions", end},
                          {"kv_cache", kvCacheKindName(i.kv_cache)},
                          {"kv_cache_dtype", kvCacheDtypeName(i.kv_cache_dtype)}};
    }
}

} // namespace

nlohmann::json estimateToJson(const Scenario &scenario,
                              const EstimateInput &input,
                              const MemoryEstimate &est,
                              const std::vector<GpuSpec> &gpus,
                              bool withTimeline)
{
    const StepModel model(input);
    nlohmann::json j;
    j["format"] = kScenarioFormat;
    j["name"] = scenario.name;
    j["mode"] = modeName(input.training.mode);
    j["stack"] = stackToJson(input);
    j["parameters"] = est.parameters;
    j["trainable_parameters"] = est.trainable_parameters;
    addFormatKeys(input, j);

    nlohmann::json perGpu;
    nlohmann::json components = nlohmann::json::object();
    for (int i = 0; i < kComponentCount; ++i)
        components[componentKey(static_cast<Component>(i))]
            = est.components.bytes[static_cast<std::size_t>(i)];
    perGpu["components"] = components;
    nlohmann::json phases = nlohmann::json::object();
    const int phaseCount = est.training ? kPhaseCount : 1;
    for (int p = 0; p < phaseCount; ++p)
        phases[phaseKey(static_cast<Phase>(p))] = breakdownJson(
            est.phases[static_cast<std::size_t>(p)]);
    perGpu["phases"] = phases;
    perGpu["peak_allocated"] = est.peak_allocated;
    perGpu["peak_reserved"] = est.peak_reserved;
    perGpu["device_total"] = est.device_total;
    perGpu["peak_phase"] = phaseKey(est.peak_phase);
    perGpu["saved_activations"] = toBytes(est.derivation.saved_activation_bytes);
    if (const Derivation &d = est.derivation; d.pipeline_stages > 1) {
        const ParallelismConfig &par = input.parallelism;
        perGpu["pipeline"] = {{"stage", d.pipeline_stage},
                              {"stages", d.pipeline_stages},
                              {"layers", d.stage_layers},
                              {"in_flight_micro_batches", d.pipeline_in_flight},
                              {"schedule", pipelineScheduleName(par.pipeline_schedule)},
                              {"bubble_fraction",
                               pipelineBubbleFraction(par,
                                                      input.training.gradient_accumulation_steps)}};
        nlohmann::json each = nlohmann::json::array();
        for (const PipelineStagePeak &s : pipelineStagePeaks(input))
            each.push_back({{"stage", s.stage},
                            {"layers", s.layers},
                            {"in_flight_micro_batches", s.in_flight},
                            {"peak_allocated", s.peak_allocated}});
        perGpu["pipeline"]["each_stage"] = each;
    }
    nlohmann::json moments = nlohmann::json::object();
    for (int p = 0; p < phaseCount; ++p) {
        const PeakMoment &m = est.moments[static_cast<std::size_t>(p)];
        moments[phaseKey(static_cast<Phase>(p))] = {{"stage", stageKey(m.stage)},
                                                    {"layer", m.layer}};
    }
    perGpu["peak_moments"] = moments;
    nlohmann::json formulas = nlohmann::json::object();
    for (int i = 0; i < kComponentCount; ++i) {
        const auto c = static_cast<Component>(i);
        formulas[componentKey(c)] = explainComponent(input, est, est.peak_phase, c);
    }
    perGpu["formulas"] = formulas;
    perGpu["too_large"] = est.too_large;
    perGpu["reserve_modelled"] = est.reserve_replayed;
    j["cpu_offload_bytes"] = est.cpu_offload_total;
    j["cpu_offload_bytes_per_gpu"] = est.cpu_offload_bytes;
    j["paged_optimizer_bytes_per_gpu"] = est.paged_optimizer_bytes;

    const MemoryBand band = memoryBand(model, est);
    perGpu["band"] = {{"low", band.low}, {"expected", band.expected}, {"high", band.high}};
    j["per_gpu"] = perGpu;
    nlohmann::json list = nlohmann::json::array();
    for (const GpuSpec &g : gpus) {
        const GpuVerdict v = gpuVerdict(model, est, g.memory_bytes);
        nlohmann::json gj;
        gj["id"] = g.id;
        gj["name"] = g.name;
        gj["capacity"] = g.memory_bytes; // CUDA's total where known (cuda_total_known)
        gj["cuda_total_known"] = g.cudaTotalKnown();
        gj["fits"] = v.fits;
        gj["verdict"] = verdictKey(v.verdict);
        gj["reason"] = v.reason;
        gj["expandable_segments_help"] = v.expandable_segments_help;
        gj["headroom"] = g.memory_bytes - est.device_total;
        gj["max_micro_batch_size"] = maxMicroBatch(model, g.memory_bytes);
        gj["max_sequence_length"] = maxSequenceLength(model, g.memory_bytes);
        gj["throughput"] = throughputToJson(scenario, input, g);
        list.push_back(gj);
    }
    j["gpus"] = list;
    if (withTimeline)
        j["timeline"] = timelineToJson(model);
    // What does not depend on the GPU: the work of one step and, with a dataset, of the run.
    const ThroughputEstimate reference = estimateRelativeThroughput(input, GpuPerformance{});
    nlohmann::json work;
    work["tokens_per_step"] = reference.tokens_per_step;
    work["model_flops_per_step"] = reference.model_flops_per_step;
    if (scenario.dataset) {
        const RunEstimate run = estimateRun(reference, input, *scenario.dataset, 0);
        work["dataset"] = {{"examples", scenario.dataset->examples},
                           {"tokens_per_example",
                            scenario.dataset->tokens_per_example > 0
                                ? scenario.dataset->tokens_per_example
                                : input.training.sequence_length},
                           {"epochs", scenario.dataset->epochs},
                           {"tokens", run.tokens},
                           {"steps", run.steps}};
    }
    j["throughput"] = work;
    return j;
}

} // namespace membudget
