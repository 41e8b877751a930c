// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// UTF-8 decoding shared by the input check (core/input_file) and the one-line error form
// (core/load_error).

#include <cstddef>
#include <string>
#include <string_view>

namespace membudget {

// Length of the UTF-8 sequence starting at byte `i` of `s`, with its code point in `codePoint`, or
// 0 when it is not well-formed (truncated, overlong, a surrogate or past U+10FFFF).
std::size_t utf8SequenceLength(std::string_view s, std::size_t i, char32_t &codePoint);

// `s` with every byte that does not start a well-formed sequence replaced by U+FFFD (Unicode 15,
// section 3.9, "U+FFFD Substitution of Maximal Subparts" simplified to one per byte).
std::string validUtf8(const std::string &s);

} // namespace membudget
