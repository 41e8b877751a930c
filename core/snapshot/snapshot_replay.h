// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// A snapshot's recorded requests replayed through MemBudget's caching-allocator model
// (core/allocator): the model's check against what PyTorch really did. The model starts from the
// state the trace implies (ReplayInput::start), applies every alloc and free_completed in order
// with the allocator settings the snapshot recorded, and reports its own peak reserved beside the
// measured one.

#include "allocator/allocator_replay.h"
#include "snapshot/replay_input.h"

#include <optional>
#include <string>

namespace membudget::snapshot {

struct SnapshotReplay
{
    bool ran = false;    // false: the input could not be turned into model requests
    std::string problem; // why not (an unknown setting, a free_completed of nothing live)
    ReplayResult result; // the model's replay, when it ran (result.error: it stopped early)
    std::size_t requests = 0;
    std::size_t skipped_ooms = 0;   // oom events: requests that failed on the device, not replayed
    std::size_t attempted_ooms = 0; // oom events replayed as their request (attemptOoms)
    // Blocks live when recording began and freed during the trace keep no size in the snapshot:
    // their size is the rounded request plus any remainder up to the next live block that the
    // allocator would not have split off (shouldSplit).
    std::size_t inferred_block_sizes = 0;
    Bytes capacity = kBytesMax; // kBytesMax: no device limit
};

// The snapshot's allocator settings as the model takes them (PyTorch's defaults when the snapshot
// recorded none). False with `problem` for a setting the model cannot take.
bool modelSettings(const std::optional<RecordedAllocatorSettings> &recorded,
                   AllocatorSettings &out,
                   std::string &problem);

// Replays `input` (see replayInput) against `capacity` bytes of device memory for segments. With
// `attemptOoms`, a request that failed on the device (an oom event) is made of the model too, so a
// replay against the device's capacity says whether the model fails where PyTorch did
// (ReplayResult::fits, failed_at); without, such requests are skipped.
SnapshotReplay replaySnapshot(const MemorySnapshot &snapshot,
                              const ReplayInput &input,
                              Bytes capacity = kBytesMax,
                              bool attemptOoms = false);

} // namespace membudget::snapshot
