// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <string>

namespace membudget {

// Where and why a file could not be used. Line and column are 1-based; 0 means "the whole file".
struct LoadError
{
    std::string file;
    int line = 0;
    int column = 0;
    std::string message;

    // "file:line:column: message", the one-line form the command line prints.
    std::string toString() const;
};

} // namespace membudget
