// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "base/units.h"

#include <string>

namespace membudget {

enum class ByteUnit { GB, GiB };

// "15.01 GB" / "13.98 GiB" (B, KB, MB below one unit; TB, PB, EB above), "too large" when the
// magnitude is saturated. A negative size gets a minus sign unless it rounds to zero ("0 B", never
// "-0 B"). Always with a decimal point, whatever the C locale (the desktop app sets the user's).
std::string formatBytes(Bytes bytes, ByteUnit unit = ByteUnit::GB, int decimals = 2);

// The change from `from` to `to`: "+1.20 GB", "-1.20 GB", "0 B" (no sign when nothing changed);
// "n/a" when either size is saturated (no difference of "too large" sizes means anything).
std::string formatByteChange(Bytes from, Bytes to, ByteUnit unit = ByteUnit::GB, int decimals = 2);

// A GPU's capacity for labels and lists: rounded *down* at `decimals` (an "RTX 4090 24GB" holds
// 23.99 GiB: "23.9 GiB", never "24 GiB" it does not have), a trailing ".0" dropped ("80 GiB").
std::string formatCapacity(Bytes bytes, ByteUnit unit = ByteUnit::GiB, int decimals = 1);

// "6,738,415,616": commas every three digits, the one integer format of the command line and the
// app; "too large" for non-finite counts.
std::string formatCount(double count);

// `value` with `decimals` digits after a decimal point ("16.23"), independent of the C locale.
std::string formatFixed(double value, int decimals);

// Reads "24GB", "24 GiB", "512MiB", "0.5GiB", "1e9" (bytes); units in any case, compared as ASCII
// (never with the C locale's case rules: under tr_TR, tolower('I') is not 'i'). Returns false on
// anything else.
bool parseByteSize(const std::string &text, Bytes &out);

} // namespace membudget
