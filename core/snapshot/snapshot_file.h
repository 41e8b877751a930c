// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Opening a memory snapshot a user chose: a regular file (never a FIFO or a device, which could
// block) of at most kMaxSnapshotFileBytes, read once, then parsed by the restricted pickle reader.

#include "io/load_error.h"
#include "snapshot/memory_snapshot.h"

#include <cstdint>
#include <optional>
#include <string>

namespace membudget::snapshot {

// Real snapshots run from kilobytes to hundreds of megabytes (a 100,000-entry trace with C++ and
// Python stacks is about 17 MB; the largest of the 23 in the project's collection is 3.9 MB).
// Anything larger is refused by its size before it is read.
inline constexpr std::uint64_t kMaxSnapshotFileBytes = std::uint64_t{512} << 20;

// Reads at most `limit` + 1 bytes of `path` into `bytes`; false with `error` set when the file is
// missing, special, unreadable or larger than `limit`.
bool readSnapshotBytes(const std::string &path,
                       std::string &bytes,
                       LoadError &error,
                       std::uint64_t limit = kMaxSnapshotFileBytes);

std::optional<MemorySnapshot> loadMemorySnapshotFile(const std::string &path, LoadError &error);

} // namespace membudget::snapshot
