// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/load_error.h"

#include "base/one_line.h"

namespace membudget {

std::string LoadError::toString() const
{
    std::string out;
    out.reserve(file.size() + message.size() + 32);
    out.append(file.empty() ? "<input>" : oneLine(file, 4096));
    if (offset >= 0) {
        const std::string at = std::to_string(offset);
        out += ": offset ";
        out += at;
    } else if (line > 0) {
        out.append(":").append(std::to_string(line));
        if (column > 0)
            out.append(":").append(std::to_string(column));
    }
    out.append(": ").append(oneLine(message, 400));
    return out;
}

} // namespace membudget
