// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/estimate_json.h"

#include "advice/explanation.h"
#include "advice/fit_solver.h"
#include "model/scenario.h"

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

} // namespace

nlohmann::json estimateToJson(const Scenario &scenario,
                              const EstimateInput &input,
                              const MemoryEstimate &est,
                              const std::vector<GpuSpec> &gpus)
{
    nlohmann::json j;
    j["format"] = kScenarioFormat;
    j["name"] = scenario.name;
    j["mode"] = modeName(input.training.mode);
    j["parameters"] = est.parameters;
    j["trainable_parameters"] = est.trainable_parameters;

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
    j["per_gpu"] = perGpu;
    j["cpu_offload_bytes"] = est.cpu_offload_total;
    j["cpu_offload_bytes_per_gpu"] = est.cpu_offload_bytes;

    nlohmann::json list = nlohmann::json::array();
    for (const GpuSpec &g : gpus) {
        nlohmann::json gj;
        gj["id"] = g.id;
        gj["name"] = g.name;
        gj["capacity"] = g.memory_bytes;
        gj["fits"] = est.device_total <= g.memory_bytes;
        gj["headroom"] = g.memory_bytes - est.device_total;
        gj["max_micro_batch_size"] = maxMicroBatch(input, g.memory_bytes);
        gj["max_sequence_length"] = maxSequenceLength(input, g.memory_bytes);
        list.push_back(gj);
    }
    j["gpus"] = list;
    return j;
}

} // namespace membudget
