// SPDX-License-Identifier: GPL-3.0-or-later
#include "base/one_line.h"

#include "base/utf8.h"

#include <algorithm>
#include <cstdio>

namespace membudget {

namespace {

void appendHex(std::string &out, unsigned char c)
{
    char buf[8];
    std::snprintf(buf, sizeof buf, "\\x%02X", c);
    out += buf;
}

} // namespace

std::string oneLine(std::string_view text, std::size_t limit)
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
            appendHex(out, c);
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
            appendHex(out, c);
        }
        ++i;
    }
    return out;
}

} // namespace membudget
