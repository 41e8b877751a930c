// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <string>

namespace membudget {

// Looks `text` up in a table of the names of an enum's values, in the enum's order. Returns false
// (leaving `out` alone) for a name not in the table.
template<typename Enum, std::size_t N>
bool parseEnumName(const char *const (&names)[N], const std::string &text, Enum &out)
{
    for (std::size_t i = 0; i < N; ++i) {
        if (text == names[i]) {
            out = static_cast<Enum>(i);
            return true;
        }
    }
    return false;
}

} // namespace membudget
