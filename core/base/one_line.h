// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace membudget {

// Text from a file made safe for one line of a terminal, a report or an error message:
// escapeForTerminal (base/terminal_text.h) with line breaks escaped (\n, \r), tabs as spaces, and
// cut with "..." after `limit` bytes. Printable UTF-8 is kept as it is.
std::string oneLine(std::string_view text, std::size_t limit);

} // namespace membudget
