// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/load_error.h"

#include "base/utf8.h"

#include <cstdio>

namespace membudget {

namespace {

// Messages quote what the file said; keep them to one readable line whatever the file held:
// control characters escaped, invalid UTF-8 shown as hex, long quotes cut.
std::string oneLine(const std::string &text, std::size_t limit)
{
    std::string out;
    out.reserve(std::min(text.size(), limit) + 8);
    std::size_t i = 0;
    while (i < text.size()) {
        if (out.size() >= limit) {
            out += "...";
            break;
        }
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += ' ';
        } else if (c < 0x20 || c == 0x7F) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", c);
            out += buf;
        } else if (c < 0x80) {
            out += static_cast<char>(c);
        } else {
            // Copy a well-formed multi-byte sequence whole; escape a stray byte.
            char32_t codePoint = 0;
            if (const std::size_t n = utf8SequenceLength(text, i, codePoint); n > 0) {
                out.append(text, i, n);
                i += n;
                continue;
            }
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", c);
            out += buf;
        }
        ++i;
    }
    return out;
}

} // namespace

std::string LoadError::toString() const
{
    std::string out;
    out.reserve(file.size() + message.size() + 32);
    out.append(file.empty() ? "<input>" : oneLine(file, 4096));
    if (line > 0) {
        out.append(":").append(std::to_string(line));
        if (column > 0)
            out.append(":").append(std::to_string(column));
    }
    out.append(": ").append(oneLine(message, 400));
    return out;
}

} // namespace membudget
