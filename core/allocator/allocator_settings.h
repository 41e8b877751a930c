// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "base/units.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace membudget {

// The options of PyTorch's CUDA caching allocator that change which bytes it holds
// (PYTORCH_CUDA_ALLOC_CONF, read in c10/cuda/CUDAAllocatorConfig.cpp, PyTorch 2.3-2.5), plus the
// capacity the model replays against. Defaults are PyTorch's defaults.
struct AllocatorSettings
{
    // Bytes the allocator may hold in segments before a device allocation fails: the GPU's memory
    // less the CUDA context, communicator buffers and anything else outside PyTorch. kBytesMax means
    // "never fails" (replay to learn the peak only).
    Bytes capacity = kBytesMax;
    // The capacity was set with torch.cuda.set_per_process_memory_fraction. PyTorch runs its
    // garbage collection only then (`set_fraction` in DeviceCachingAllocator::malloc); the
    // threshold is a fraction of this capacity.
    bool capacity_is_memory_fraction = false;
    // max_split_size_mb in bytes; nullopt is PyTorch's default (no limit). Blocks of this size or
    // more are never split and serve only requests within max_non_split_rounding of their size.
    std::optional<Bytes> max_split_size;
    // max_non_split_rounding_mb (newer PyTorch); 20 MiB (kLargeBuffer) is the fixed value of 2.3/2.4.
    Bytes max_non_split_rounding = 20 * kMiB;
    // garbage_collection_threshold: 0 = off; in (0, 1) a fraction of the capacity.
    double garbage_collection_threshold = 0.0;
    // expandable_segments:True: one growing segment per stream and pool, mapped page by page.
    bool expandable_segments = false;
    // roundup_power2_divisions per size interval: index 0 for sizes below 2 MiB, i for
    // [2^i MiB, 2^(i+1) MiB), 15 for 32 GiB and more (CUDAAllocatorConfig::roundup_power2_divisions).
    // 0 or 1 = plain 512-byte rounding.
    std::array<std::uint32_t, 16> roundup_power2_divisions{};
    // Total memory of the GPU, for the address space of expandable segments (1.125 x the GPU's
    // memory); 0 = use the capacity.
    Bytes device_total = 0;
};

// Reads the text of PYTORCH_CUDA_ALLOC_CONF ("expandable_segments:True,max_split_size_mb:128",
// "roundup_power2_divisions:[256:1,512:2,>:4]") into `settings` (capacity untouched). The options
// are those of CUDAAllocatorConfig::parseArgs; options that do not change bytes
// (backend:native, release_lock_on_cudamalloc, pinned_*) are accepted and ignored. On bad text
// returns false with a one-line message in `error` naming the column.
bool parseAllocatorConf(std::string_view text, AllocatorSettings &settings, std::string &error);

// The same settings written back as PYTORCH_CUDA_ALLOC_CONF text ("" for the defaults).
std::string allocatorConfText(const AllocatorSettings &settings);

} // namespace membudget
