// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Text on its way to a terminal (the command line's output, error lines, membudget-gui's stderr).
// Names, descriptions, ids and paths come from files a user did not write; printed raw, an escape
// sequence could retitle the terminal or hide a line (ESC, CSI U+009B, OSC), and a bidi override
// could make text read differently from what it is. This is the one place that makes such text
// harmless for that sink.

#include <cstddef>
#include <string>
#include <string_view>

namespace membudget {

enum class LineBreaks {
    Keep,  // tables and listings: line feeds and tabs pass
    Escape // one-line messages: "\n", "\r" shown escaped, a tab becomes a space
};

// Returns `text` with every control character (C0, DEL, C1), bidi control, invisible format
// character and line or paragraph separator shown as an escape (\x1B, \u202E, \U000E0001), and
// every byte that is not part of well-formed UTF-8 as \xFF. A carriage return is always escaped (it
// would let a later part of the line overwrite an earlier one). Past `limit` bytes of output the
// text is cut and "..." appended. Printable text in any script passes unchanged.
std::string escapeForTerminal(std::string_view text,
                              LineBreaks breaks = LineBreaks::Keep,
                              std::size_t limit = std::string_view::npos);

// True for the code points escapeForTerminal escapes besides C0 and DEL: C1 controls, the
// Bidi_Control characters and other default-ignorable format characters, U+2028 and U+2029.
bool isInvisibleOrControl(char32_t codePoint);

} // namespace membudget
