// SPDX-License-Identifier: GPL-3.0-or-later
#include "snapshot/snapshot_calibration.h"

#include "allocator/allocator_settings.h"
#include "base/one_line.h"
#include "model/step_model.h"
#include "snapshot/snapshot_replay.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace membudget::snapshot {

namespace {

constexpr double kReserveTolerance = 0.02; // reserved / allocated, absolute

std::string bytesText(Bytes b, ByteUnit unit)
{
    return b == 0 ? std::string("0")
                  : formatBytes(b, unit) + " (" + formatCount(double(b)) + " bytes)";
}

std::string ratioText(double r)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", r);
    return buf;
}

std::string confText(const std::string &text)
{
    if (text.empty())
        return "PyTorch's defaults";
    std::string quoted(1, '\'');
    quoted.append(oneLine(text, 200)).push_back('\'');
    return quoted;
}

CalibrationItem allocatorConf(OverheadConfig &o, const MemorySnapshot &snapshot)
{
    CalibrationItem item{"allocator_conf", false, o.allocator_conf, o.allocator_conf, {}};
    if (!snapshot.allocator_settings) {
        item.why = "The snapshot did not record the allocator's settings (PyTorch before about "
                   "2.2): kept.";
        return item;
    }
    AllocatorSettings run, scenario;
    std::string problem;
    if (!modelSettings(snapshot.allocator_settings, run, problem)) {
        item.why = "The run's allocator settings have one the allocator model cannot take ("
                   + oneLine(problem, 200) + "): kept.";
        return item;
    }
    parseAllocatorConf(o.allocator_conf, scenario, problem); // the scenario reader checked it
    const std::string text = allocatorConfText(run);
    if (text == allocatorConfText(scenario)) {
        item.why = "The scenario already has the run's allocator settings: " + confText(text) + ".";
        return item;
    }
    o.allocator_conf = text;
    item.taken = true;
    item.after = text;
    std::string variable = "unset";
    if (!snapshot.allocator_settings->alloc_conf.empty()) {
        variable = oneLine(snapshot.allocator_settings->alloc_conf, 200);
        variable.insert(variable.begin(), '\'');
        variable.push_back('\'');
    }
    item.why = "The run's caching allocator ran with " + confText(text)
               + ", as the snapshot recorded it (PYTORCH_CUDA_ALLOC_CONF " + variable + ").";
    return item;
}

CalibrationItem extraResident(OverheadConfig &o, const EstimateComparison &c, ByteUnit unit)
{
    CalibrationItem item{"extra_resident",
                         false,
                         bytesText(o.extra_resident_bytes, unit),
                         bytesText(o.extra_resident_bytes, unit),
                         {}};
    if (!c.resident.both()) {
        item.why = "Not measured: " + c.resident_source + ".";
        return item;
    }
    const Bytes measured = *c.resident.measured, modelled = *c.resident.estimated;
    const Bytes more = measured - modelled;
    const std::string figures = formatBytes(measured, unit) + " was live when the step began, "
                                + formatBytes(modelled, unit) + " is modelled";
    if (std::llabs(more) < std::max<Bytes>(kMiB, modelled / 200)) {
        item.why = "The run's resident bytes match the scenario's: " + figures + ".";
        return item;
    }
    Bytes next = o.extra_resident_bytes + more;
    if (next < 0) {
        if (o.extra_resident_bytes == 0) {
            item.why = "Less was live than the scenario models (" + figures
                       + "): a negative amount would hide a modelling difference, so nothing is "
                         "taken; check precision, optimizer and method against the run.";
            return item;
        }
        next = 0;
    }
    o.extra_resident_bytes = next;
    item.taken = true;
    item.after = bytesText(next, unit);
    item.why = figures
               + " (weights, master weights, optimizer states, kept gradients and the "
                 "extra resident before): the difference is what the program keeps "
                 "beyond what the scenario describes.";
    return item;
}

// `model`: the estimate with the calibrated settings and extra resident bytes, the allocator
// model replaying the step (no explicit fraction).
CalibrationItem allocatorReserve(OverheadConfig &o,
                                 const EstimateComparison &c,
                                 const MemoryEstimate &model,
                                 ByteUnit unit)
{
    const std::string before = o.allocator_reserve_fraction
                                   ? ratioText(*o.allocator_reserve_fraction)
                                   : std::string("(modelled)");
    CalibrationItem item{"allocator_reserve", false, before, before, {}};
    if (!c.peak_allocated.both() || !c.peak_reserved.both() || *c.peak_allocated.measured <= 0
        || model.peak_allocated <= 0) {
        item.why = "No measured peaks to take a ratio from: kept.";
        return item;
    }
    if (c.phases.found() && !c.by_phase[static_cast<std::size_t>(model.peak_phase)].in_trace) {
        item.why = std::string("The trace does not hold the estimate's peak phase (")
                   + phaseLabel(model.peak_phase)
                   + "), so its reserved-to-allocated ratio says nothing about it: kept.";
        return item;
    }
    const double run = static_cast<double>(*c.peak_reserved.measured)
                       / static_cast<double>(*c.peak_allocated.measured);
    const double modelled = static_cast<double>(model.peak_reserved)
                            / static_cast<double>(model.peak_allocated);
    const std::string figures = "the run reserved " + ratioText(run) + " times its allocated peak ("
                                + formatBytes(*c.peak_reserved.measured, unit) + " for "
                                + formatBytes(*c.peak_allocated.measured, unit)
                                + "), the allocator model " + ratioText(modelled);
    if (std::fabs(run - modelled) <= kReserveTolerance) {
        if (!o.allocator_reserve_fraction) {
            item.why = "Within 2 points: " + figures + ": the model is kept.";
            return item;
        }
        o.allocator_reserve_fraction.reset();
        item.taken = true;
        item.after = "(modelled)";
        item.why = "Within 2 points: " + figures
                   + ": the explicit fraction is removed and the "
                     "allocator model used again.";
        return item;
    }
    const double fraction = std::clamp(std::round((run - 1) * 1000) / 1000, 0.0, 10.0);
    if (o.allocator_reserve_fraction && *o.allocator_reserve_fraction == fraction) {
        item.why = "The scenario already has the run's fraction: " + figures + ".";
        return item;
    }
    o.allocator_reserve_fraction = fraction;
    item.taken = true;
    item.after = ratioText(fraction);
    item.why = figures
               + ": the program's allocation pattern differs from the modelled step, so the "
                 "measured fraction replaces the allocator model (set it back to modelled to "
                 "undo).";
    return item;
}

CalibrationItem notInSnapshot(const char *key, Bytes value, const char *what, ByteUnit unit)
{
    const std::string v = bytesText(value, unit);
    return {key,
            false,
            v,
            v,
            std::string("A snapshot records PyTorch's caching allocator only: ") + what
                + " is not in it, so it is kept (measure it with nvidia-smi and set it by hand)."};
}

} // namespace

bool SnapshotCalibration::changesAnything() const
{
    for (const CalibrationItem &i : items)
        if (i.taken)
            return true;
    return false;
}

SnapshotCalibration calibrateOverheads(const EstimateInput &input,
                                       const MemorySnapshot &snapshot,
                                       const EstimateComparison &comparison,
                                       ByteUnit unit)
{
    SnapshotCalibration out;
    const OverheadConfig &current = input.overheads;
    out.overheads = current;
    out.items.push_back(allocatorConf(out.overheads, snapshot));
    out.items.push_back(extraResident(out.overheads, comparison, unit));
    // The ratio the allocator model gives with what was just taken.
    EstimateInput calibrated = input;
    calibrated.overheads = out.overheads;
    calibrated.overheads.allocator_reserve_fraction.reset();
    const MemoryEstimate model = StepModel(calibrated).estimate();
    out.items.push_back(allocatorReserve(out.overheads, comparison, model, unit));
    out.items.push_back(notInSnapshot("cuda_context",
                                      current.cuda_context_bytes,
                                      "the CUDA context (the process's memory in nvidia-smi "
                                      "less torch.cuda.memory_reserved())",
                                      unit));
    out.items.push_back(
        notInSnapshot("nccl", current.nccl_bytes, "NCCL's communicator memory", unit));
    return out;
}

} // namespace membudget::snapshot
