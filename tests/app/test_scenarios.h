// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Two valid scenarios that differ everywhere, with long texts so that each save takes a while:
// what tst_safe_save's writer alternates between.

#include "model/scenario.h"

#include <string>

namespace membudget {

inline Scenario savedScenarioA()
{
    Scenario s = defaultScenario();
    s.name = "Scenario A";
    s.description = std::string(4000, 'a');
    s.training.micro_batch_size = 3;
    s.gpus = {"a100-80gb", "rtx-4090"};
    return s;
}

inline Scenario savedScenarioB()
{
    Scenario s = defaultScenario();
    s.name = "Scenario B, the other one";
    s.description = std::string(3000, 'b') + " with a longer tail " + std::string(900, 'B');
    s.training.micro_batch_size = 7;
    s.training.sequence_length = 8192;
    s.gpus = {"h100-80gb"};
    return s;
}

} // namespace membudget
