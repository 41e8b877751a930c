// SPDX-License-Identifier: GPL-3.0-or-later
#include "snapshot/snapshot_file.h"

#include "io/input_file.h"

#include <cstdio>
#include <memory>

namespace membudget::snapshot {

namespace {

std::string mebibytes(std::uint64_t bytes)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
    return buf;
}

} // namespace

bool readSnapshotBytes(const std::string &path,
                       std::string &bytes,
                       LoadError &error,
                       std::uint64_t limit)
{
    std::uintmax_t size = 0;
    if (!regularFileSize(path, "memory snapshot", size, error))
        return false;
    const std::string tooLarge = " is more than this reader's limit of " + mebibytes(limit)
                                 + " for a memory snapshot";
    if (size > limit) {
        error.offset = 0;
        error.message = "the file's " + mebibytes(size) + tooLarge;
        return false;
    }
    std::unique_ptr<std::FILE, int (*)(std::FILE *)> in(std::fopen(path.c_str(), "rb"),
                                                        &std::fclose);
    if (!in) {
        error.message = "cannot open the file";
        return false;
    }
    // Read at most one byte past the limit: the file may have grown since it was measured.
    bytes.resize(static_cast<std::size_t>(size) + 1);
    std::size_t got = std::fread(bytes.data(), 1, bytes.size(), in.get());
    while (got == bytes.size() && bytes.size() <= limit) {
        bytes.resize(std::min<std::uint64_t>(limit + 1, bytes.size() * 2));
        got += std::fread(bytes.data() + got, 1, bytes.size() - got, in.get());
    }
    if (std::ferror(in.get())) {
        bytes.clear();
        error.message = "cannot read the file";
        return false;
    }
    bytes.resize(got);
    if (bytes.size() > limit) {
        bytes.clear();
        error.offset = 0;
        error.message = "the file grew while it was read and" + tooLarge;
        return false;
    }
    return true;
}

std::optional<MemorySnapshot> loadMemorySnapshotFile(const std::string &path, LoadError &error)
{
    std::string bytes;
    if (!readSnapshotBytes(path, bytes, error))
        return std::nullopt;
    return readMemorySnapshot(std::move(bytes), path, error);
}

} // namespace membudget::snapshot
