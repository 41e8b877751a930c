// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/torch_release.h"

namespace membudget {

const std::string &torchReleaseText(const StackConfig &stack)
{
    return stack.name == Stack::PlainTorch ? stack.version : stack.torch;
}

LibraryVersion torchRelease(const StackConfig &stack)
{
    const std::string &text = torchReleaseText(stack);
    LibraryVersion v;
    if (!text.empty() && parseLibraryVersion(text, v))
        return v;
    return newestKnownVersion(Stack::PlainTorch);
}

AdamWWorkspace adamWWorkspace(const LibraryVersion &torch)
{
    if (torch < LibraryVersion{2, 0, 0})
        return AdamWWorkspace::PerTensor;
    if (torch < LibraryVersion{2, 1, 0})
        return AdamWWorkspace::TwoLists;
    return AdamWWorkspace::OneList;
}

int torchReleaseRange(const StackConfig &stack)
{
    const LibraryVersion v = torchRelease(stack);
    int range = 0;
    for (const LibraryVersion first : {LibraryVersion{2, 11, 0},
                                       LibraryVersion{2, 10, 0},
                                       LibraryVersion{2, 8, 0},
                                       LibraryVersion{2, 5, 0},
                                       LibraryVersion{2, 1, 0},
                                       LibraryVersion{2, 0, 0}}) {
        if (!(v < first))
            return range;
        ++range;
    }
    return range;
}

namespace {

void setText(StackConfig &stack, const std::string &text)
{
    (stack.name == Stack::PlainTorch ? stack.version : stack.torch) = text;
}

} // namespace

void setTorchRelease(TrainingConfig &training,
                     ParallelismConfig &parallelism,
                     const std::string &text)
{
    TrainingConfig before = training;
    ParallelismConfig scratch = parallelism;
    applyStackDefaults(before, scratch);
    TrainingConfig after = training;
    setText(after.stack, text);
    applyStackDefaults(after, scratch);
    setText(training.stack, text);
    if (training.optimizer == before.optimizer)
        training.optimizer = after.optimizer;
}

void switchStack(TrainingConfig &training, ParallelismConfig &parallelism, Stack stack)
{
    const std::string torch = torchReleaseText(training.stack);
    training.stack = StackConfig{stack, {}, {}};
    setText(training.stack, torch);
    applyStackDefaults(training, parallelism);
    if (!buildsTransformersCache(stack))
        training.use_cache.reset(); // torchtune's and torchtitan's models take no cache
    if (!runsUnderTrainer(stack))
        training.trainer_mixed_precision.reset(); // the Trainer's flag
}

} // namespace membudget
