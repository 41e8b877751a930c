// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "base/units.h"

#include <string>

namespace membudget {

enum class ByteUnit { GB, GiB };

// "15.01 GB" / "13.98 GiB" (MB/MiB below one unit, "too large" when saturated).
std::string formatBytes(Bytes bytes, ByteUnit unit = ByteUnit::GB, int decimals = 2);

// A GPU's capacity for labels and lists: rounded *down* at `decimals` (an "RTX 4090 24GB" holds
// 23.99 GiB: "23.9 GiB", never "24 GiB" it does not have), a trailing ".0" dropped ("80 GiB").
std::string formatCapacity(Bytes bytes, ByteUnit unit = ByteUnit::GiB, int decimals = 1);

// "6,738,415,616"
std::string formatCount(double count);

// Reads "24GB", "24 GiB", "512MiB", "0.5GiB", "1e9" (bytes). Returns false on anything else.
bool parseByteSize(const std::string &text, Bytes &out);

} // namespace membudget
