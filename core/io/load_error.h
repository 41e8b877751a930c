// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>

namespace membudget {

// Where and why a file could not be used. Line and column are 1-based; 0 means "the whole file".
// Binary files (PyTorch memory snapshots) give a byte offset instead of a line and column.
struct LoadError
{
    std::string file;
    int line = 0;
    int column = 0;
    std::int64_t offset = -1; // byte offset in a binary file; -1 when the error has none
    std::string message;

    // "file:line:column: message" (text files) or "file: offset N: message" (binary files), the
    // one-line form the command line prints. File names and messages are escaped to one line.
    std::string toString() const;
};

} // namespace membudget
