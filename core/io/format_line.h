// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The `format:` line every MemBudget file starts with: "membudget/1" (scenarios) or
// "membudget-presets/1" (preset files).

#include <string>

namespace membudget {

// Why `format` is not `expected` ("membudget/1"), for a file whose format line says `format`:
// "membudget/2" was written by a newer MemBudget; "membudget/0", "membudget/" or "membudget/1.0"
// name no version there ever was; anything else is not this kind of file (`kind`: "a MemBudget
// scenario"). Empty when `format` is `expected`.
std::string formatLineProblem(const std::string &format,
                              const std::string &expected,
                              const std::string &kind);

} // namespace membudget
