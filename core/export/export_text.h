// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Text pieces shared by the export formats: the header every file starts with (which scenario,
// which model, MemBudget's estimate, what could not be expressed), comment-safe text, and Python
// literals. Text from the scenario (its name) never breaks out of a comment or a string literal:
// line breaks, control characters and bidirectional overrides are replaced.

#include "export/export_plan.h"

#include <string>
#include <vector>

namespace membudget {

// The header as lines without comment markers; `target` names the libraries and versions whose
// documented keys the file uses.
std::vector<std::string> exportHeader(const ExportPlan &plan,
                                      const std::string &target,
                                      const std::vector<std::string> &notes);

// One line of comment text: control characters (C0, C1), line and paragraph separators and
// bidirectional controls become '?'; invalid UTF-8 bytes too.
std::string commentSafe(const std::string &text);

// A double-quoted Python string literal (ASCII: everything else escaped).
std::string pythonString(const std::string &text);

// A Python float literal: "0.0", "0.05", "16.0".
std::string pythonFloat(double value);

// "4,096"
std::string thousands(std::int64_t value);

} // namespace membudget
