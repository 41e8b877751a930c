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

} // namespace membudget
