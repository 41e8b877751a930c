// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/gpu_spec.h"

#include "base/enum_names.h"

namespace membudget {

const char *const kInterconnectNames[4] = {"pcie", "nvlink", "infinity-fabric", "ethernet"};
const char *const kGpuArchitectureNames[9]
    = {"unknown", "volta", "turing", "ampere", "ada", "hopper", "blackwell", "cdna", "rdna"};

const char *interconnectName(Interconnect v)
{
    return kInterconnectNames[static_cast<int>(v)];
}

bool parseInterconnect(const std::string &s, Interconnect &v)
{
    return parseEnumName(kInterconnectNames, s, v);
}

const char *gpuArchitectureName(GpuArchitecture v)
{
    return kGpuArchitectureNames[static_cast<int>(v)];
}

bool parseGpuArchitecture(const std::string &s, GpuArchitecture &v)
{
    return parseEnumName(kGpuArchitectureNames, s, v);
}

std::string computeCapabilityName(ComputeCapability cc)
{
    return cc.known() ? std::to_string(cc.major) + "." + std::to_string(cc.minor) : std::string();
}

bool parseComputeCapability(const std::string &s, ComputeCapability &cc)
{
    const std::size_t dot = s.find('.');
    const auto digits = [](const std::string &part) {
        return !part.empty() && part.size() <= 2
               && part.find_first_not_of("0123456789") == std::string::npos;
    };
    if (dot == std::string::npos || !digits(s.substr(0, dot)) || !digits(s.substr(dot + 1)))
        return false;
    const ComputeCapability read{std::stoi(s.substr(0, dot)), std::stoi(s.substr(dot + 1))};
    if (!read.known())
        return false;
    cc = read;
    return true;
}

GpuArchitecture architectureOfComputeCapability(ComputeCapability cc)
{
    switch (cc.major) {
    case 7:
        return cc.minor < 5 ? GpuArchitecture::Volta
                            : (cc.minor == 5 ? GpuArchitecture::Turing : GpuArchitecture::Unknown);
    case 8:
        return cc.minor < 8 ? GpuArchitecture::Ampere
                            : (cc.minor == 9 ? GpuArchitecture::Ada : GpuArchitecture::Unknown);
    case 9:
        return GpuArchitecture::Hopper;
    case 10:
    case 11:
    case 12:
        return GpuArchitecture::Blackwell;
    default:
        return GpuArchitecture::Unknown;
    }
}

std::string capacityNote(const GpuSpec &gpu, ByteUnit unit)
{
    const std::string usable = formatCapacity(gpu.memory_bytes, unit, 2);
    if (gpu.cudaTotalKnown() && gpu.driver_total_bytes == gpu.memory_bytes)
        return usable + " usable, the total CUDA reports, which is the driver's total";
    if (gpu.cudaTotalKnown())
        return usable + " usable, the total CUDA reports; the driver reports "
               + formatCapacity(gpu.driver_total_bytes, unit, 2) + " and keeps the "
               + formatBytes(gpu.driver_total_bytes - gpu.memory_bytes, unit) + " between them";
    // Reserves seen: 0.3-0.9 GiB (docs/research/cuda-reported-memory.md).
    return usable
           + ", the total the driver reports; CUDA's usable total is not known for this "
             "GPU and is often 0.3-0.9 GiB less, so a tight verdict may be optimistic";
}

} // namespace membudget
