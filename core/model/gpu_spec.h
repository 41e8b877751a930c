// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <cstdint>
#include <string>

namespace membudget {

struct GpuSpec
{
    std::string id;                // lowercase, hyphenated: "a100-80gb"
    std::string name;              // "NVIDIA A100 80GB"
    std::string vendor;            // "NVIDIA" | "AMD" | ...
    std::string segment;           // "consumer" | "workstation" | "datacenter"
    std::int64_t memory_bytes = 0; // total device memory as the driver reports it
};

} // namespace membudget
