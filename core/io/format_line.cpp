// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/format_line.h"

#include <charconv>

namespace membudget {

namespace {

// The version number of "<family>/<N>": a whole number written without sign, spaces or leading
// zeros; -1 for anything else.
long versionOf(const std::string &text)
{
    if (text.empty() || text.size() > 9 || (text.size() > 1 && text[0] == '0'))
        return -1;
    long v = 0;
    const auto res = std::from_chars(text.data(), text.data() + text.size(), v);
    return res.ec == std::errc() && res.ptr == text.data() + text.size() ? v : -1;
}

} // namespace

std::string formatLineProblem(const std::string &format,
                              const std::string &expected,
                              const std::string &kind)
{
    if (format == expected)
        return {};
    const std::size_t slash = expected.rfind('/');
    const std::string family = expected.substr(0, slash + 1);
    const long ours = versionOf(expected.substr(slash + 1));
    if (format.rfind(family, 0) != 0)
        return "format '" + format + "' is not " + kind + "; expected " + expected;
    const long theirs = versionOf(format.substr(family.size()));
    if (theirs > ours)
        return "format '" + format + "' was written by a newer MemBudget; this version reads "
               + expected;
    return "unknown format version '" + format + "'; expected " + expected;
}

} // namespace membudget
