// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>

namespace membudget {

// What a run goes through: `examples` of `tokens_per_example` tokens, `epochs` times (fractions
// allowed). Examples are taken as packed into the scenario's sequences, so a run is
// examples x tokens x epochs tokens (docs/scenario-format.md, dataset).
struct DatasetConfig
{
    std::int64_t examples = 0;
    std::int64_t tokens_per_example = 0; // 0: the scenario's sequence length
    double epochs = 1.0;

    bool operator==(const DatasetConfig &) const = default;
};

} // namespace membudget
