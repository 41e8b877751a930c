// SPDX-License-Identifier: GPL-3.0-or-later
#include "snapshot/trace_phases.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string_view>
#include <unordered_map>

namespace membudget::snapshot {

namespace {

// The stages a stack can tell, in the order a step runs them.
enum class Told : std::uint8_t { Nothing, Forward, Loss, Backward, Optimizer };

int rank(Told t)
{
    return static_cast<int>(t);
}

Stage stageOf(Told t)
{
    switch (t) {
    case Told::Loss:
        return Stage::Loss;
    case Told::Backward:
        return Stage::Backward;
    case Told::Optimizer:
        return Stage::OptimizerStep;
    default:
        return Stage::Forward;
    }
}

bool contains(std::string_view text, std::string_view part)
{
    return text.find(part) != std::string_view::npos;
}

bool containsNoCase(std::string_view text, std::string_view lowerPart)
{
    const auto it = std::search(text.begin(),
                                text.end(),
                                lowerPart.begin(),
                                lowerPart.end(),
                                [](char a, char b) {
                                    return std::tolower(static_cast<unsigned char>(a)) == b;
                                });
    return it != text.end();
}

// The path's components, either separator (snapshots from Windows keep backslashes).
std::string_view fileName(std::string_view path)
{
    const std::size_t slash = path.find_last_of("/\\");
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool inFolder(std::string_view path, std::string_view folder)
{
    std::size_t start = 0;
    for (std::size_t end; (end = path.find_first_of("/\\", start)) != std::string_view::npos;
         start = end + 1)
        if (path.substr(start, end - start) == folder)
            return true;
    return false;
}

bool isOptimizerFrame(std::string_view file)
{
    return inFolder(file, "optim") || containsNoCase(fileName(file), "optim");
}

bool isBackwardFrame(std::string_view file, std::string_view name, bool python)
{
    if (!python)
        return contains(name, "torch::autograd::Engine::")
               || contains(name, "torch::autograd::generated::");
    const std::string_view base = fileName(file);
    return inFolder(file, "torch")
           && ((base == "_tensor.py" && name == "backward")
               || (base == "__init__.py" && inFolder(file, "autograd") && name == "backward")
               || (base == "graph.py" && inFolder(file, "autograd")
                   && name == "_engine_run_backward"));
}

bool isLossFrame(std::string_view file, std::string_view name)
{
    const std::string_view base = fileName(file);
    return containsNoCase(name, "loss") || containsNoCase(name, "cross_entropy")
           || containsNoCase(name, "nll") || base == "loss.py" || base == "losses.py";
}

Told classify(const FrameTable &frames, StackId stack)
{
    bool python = false, loss = false, backward = false;
    for (FrameId id : frames.stack(stack)) {
        const Frame &f = frames.frame(id);
        const std::string_view file = frames.text(f.file);
        const std::string_view name = frames.text(f.name);
        const bool isPython = FrameTable::isPythonFile(file);
        if (isPython && isOptimizerFrame(file))
            return Told::Optimizer;
        backward = backward || isBackwardFrame(file, name, isPython);
        loss = loss || (isPython && isLossFrame(file, name));
        python = python || isPython;
    }
    if (backward)
        return Told::Backward;
    if (loss)
        return Told::Loss;
    return python ? Told::Forward : Told::Nothing;
}

} // namespace

const TracePhaseSpan *TracePhases::span(Stage stage) const
{
    for (const TracePhaseSpan &s : spans)
        if (s.stage == stage)
            return &s;
    return nullptr;
}

Phase phaseOfTraceStage(Stage stage)
{
    switch (stage) {
    case Stage::Backward:
        return Phase::Backward;
    case Stage::OptimizerStep:
        return Phase::OptimizerStep;
    default:
        return Phase::Forward;
    }
}

TracePhases traceStages(const MemorySnapshot &snapshot, int device)
{
    TracePhases out;
    const std::vector<TraceEvent> &events = snapshot.traceOf(device);
    std::unordered_map<StackId, Told> told; // stacks are shared by many events
    Told current = Told::Nothing;
    std::size_t end = events.size();
    for (std::size_t i = 0; i < events.size(); ++i) {
        const TraceEvent &e = events[i];
        if (e.action != TraceAction::Alloc)
            continue;
        ++out.allocations;
        auto it = told.find(e.stack);
        if (it == told.end())
            it = told.emplace(e.stack, classify(snapshot.frames, e.stack)).first;
        const Told t = it->second;
        if (t == Told::Nothing)
            continue;
        ++out.classified;
        if (t == Told::Forward && current == Told::Optimizer) {
            out.more_steps = true; // the next step: the first one ends here
            end = i;
            --out.classified;
            break;
        }
        if (rank(t) > rank(current)) {
            if (!out.spans.empty())
                out.spans.back().end = i;
            // The first phase also holds whatever came before its first telling allocation.
            out.spans.push_back({stageOf(t), out.spans.empty() ? 0 : i, i, 0});
            current = t;
        }
        if (t == current)
            ++out.spans.back().allocations;
    }
    if (!out.spans.empty())
        out.spans.back().end = end;
    return out;
}

} // namespace membudget::snapshot
