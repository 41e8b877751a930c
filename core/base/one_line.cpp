// SPDX-License-Identifier: GPL-3.0-or-later
#include "base/one_line.h"

#include "base/terminal_text.h"

namespace membudget {

std::string oneLine(std::string_view text, std::size_t limit)
{
    // The terminal's escaping (C1 controls, bidi and invisible characters too), on one line.
    return escapeForTerminal(text, LineBreaks::Escape, limit);
}

} // namespace membudget
