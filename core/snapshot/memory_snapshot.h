// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// A PyTorch CUDA memory snapshot (torch.cuda.memory._snapshot(), saved by _dump_snapshot) as typed
// data: the allocator's segments and blocks when the snapshot was taken, the trace of allocator
// events per device when history was recorded (_record_memory_history), and the allocator
// settings. Field meanings follow the TypedDicts documented in torch/cuda/memory.py (Segment,
// Block, Frame, TraceEntry) and what torch/cuda/_memory_viz.py reads.
//
// Two layouts are read:
//  - Current (torch 2.1 and later): blocks carry 'address' and 'frames'; trace entries carry
//    'time_us'; 'allocator_settings' is present from torch 2.2 or so.
//  - Legacy (torch 2.0): blocks carry no address but a 'history' of {addr, real_size, frames};
//    addresses are recovered by laying the blocks end to end from the segment's address (checked
//    against the history's addr), and trace entries have no times.

#include "base/units.h"
#include "io/load_error.h"
#include "snapshot/frame_table.h"
#include "snapshot/pickle_reader.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace membudget::snapshot {

enum class BlockState : std::uint8_t {
    ActiveAllocated,   // used by a tensor
    ActivePendingFree, // freed by the program, waiting for another stream ("active_awaiting_free")
    Inactive,          // cached, free for reuse
};

struct Block
{
    std::int64_t address = 0;
    Bytes size = 0;           // as the allocator rounded it
    Bytes requested_size = 0; // as the program asked
    BlockState state = BlockState::Inactive;
    StackId stack = kEmptyStack; // where it was allocated, when recorded
};

// The caching allocator's two pools (c10/cuda/CUDACachingAllocator.cpp): requests up to 1 MiB are
// served from 2 MiB "small" segments, larger ones from "large" segments.
enum class SegmentPool : std::uint8_t { Large, Small };

struct Segment
{
    int device = 0;
    std::int64_t address = 0;
    Bytes total_size = 0; // reserved from CUDA
    std::int64_t stream = 0;
    SegmentPool pool = SegmentPool::Large;
    bool is_expandable = false;
    StackId stack = kEmptyStack; // where the segment was first allocated, when recorded
    std::vector<Block> blocks;   // in address order

    Bytes requestedBytes() const; // requested sizes of the active_allocated blocks
    Bytes allocatedBytes() const; // their rounded sizes (what torch.cuda.memory_allocated counts)
};

enum class TraceAction : std::uint8_t {
    Alloc,         // the program got memory (size: requested bytes)
    FreeRequested, // the program released it
    FreeCompleted, // the allocator can reuse it (after other streams are done with it)
    SegmentAlloc,  // cudaMalloc of a new segment
    SegmentFree,   // cudaFree of a segment
    SegmentMap,    // expandable segments: pages mapped into a segment
    SegmentUnmap,  // expandable segments: pages unmapped
    Oom,           // an allocation failed; size is what was asked, device_free what was free
    Snapshot,      // a snapshot was taken at this point
};

const char *traceActionName(TraceAction action); // "alloc", "free_requested"...

inline constexpr std::int64_t kNoTime = INT64_MIN; // legacy snapshots record no times

struct TraceEvent
{
    std::int64_t address = 0; // 0 for oom
    Bytes size = 0;
    std::int64_t stream = 0;
    std::int64_t time_us = kNoTime; // microseconds since the epoch
    Bytes device_free = 0;          // oom only
    StackId stack = kEmptyStack;
    TraceAction action = TraceAction::Alloc;
};

struct DeviceTrace
{
    int device = 0;
    std::vector<TraceEvent> events; // in the order they happened
};

// CUDA caching-allocator configuration as the snapshot recorded it (PYTORCH_CUDA_ALLOC_CONF and
// what it resolved to).
struct RecordedAllocatorSettings
{
    std::string alloc_conf;                    // the variable's text, "" when unset
    std::int64_t max_split_size = -1;          // bytes; -1: no limit
    double garbage_collection_threshold = 0.0; // 0: off
    bool expandable_segments = false;
    std::vector<std::pair<std::int64_t, std::int64_t>> roundup_power2_divisions; // size MiB, divisions
    nlohmann::json raw; // every setting as recorded (numbers, strings, booleans, nested dicts)
};

enum class SnapshotLayout { Current, Legacy };

struct MemorySnapshot
{
    SnapshotLayout layout = SnapshotLayout::Current;
    std::vector<Segment> segments;          // all devices
    std::vector<DeviceTrace> device_traces; // one per device, by device index; empty without history
    std::optional<RecordedAllocatorSettings> allocator_settings;
    FrameTable frames;
    std::size_t external_annotations = 0; // user annotations recorded beside the trace

    std::size_t eventCount() const;
    // The trace of `device` (empty without one).
    const std::vector<TraceEvent> &traceOf(int device) const;
    // The device whose trace has the most events (the lowest such index); -1 without any trace.
    int busiestDevice() const;
    // Bytes the allocator held (reserved) and handed out (live blocks: their rounded sizes, and
    // the sizes the program requested) on `device` when the snapshot was taken.
    Bytes reservedAtSnapshot(int device) const;
    Bytes allocatedAtSnapshot(int device) const;
    Bytes requestedAtSnapshot(int device) const;
};

inline constexpr int kMaxDevices = 1024;

// Reads a snapshot from the bytes of its pickle (the restricted reader, then the conversion to
// typed data). Unknown keys are ignored; a missing required key, a value of the wrong kind or a
// block outside its segment is an error at the byte offset of the dict that holds it. `fileName`
// names the file in `error`.
std::optional<MemorySnapshot> readMemorySnapshot(std::string bytes,
                                                 const std::string &fileName,
                                                 LoadError &error,
                                                 const pickle::Limits &limits = {});

} // namespace membudget::snapshot
