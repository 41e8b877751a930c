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

std::string capacityNote(const GpuSpec &gpu, ByteUnit unit)
{
    const std::string usable = formatCapacity(gpu.memory_bytes, unit, 2);
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
