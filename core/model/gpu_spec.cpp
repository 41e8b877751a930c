// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/gpu_spec.h"

namespace membudget {

const char *const kInterconnectNames[3] = {"pcie", "nvlink", "infinity-fabric"};
const char *const kGpuArchitectureNames[9]
    = {"unknown", "volta", "turing", "ampere", "ada", "hopper", "blackwell", "cdna", "rdna"};

namespace {

template<typename Enum, std::size_t N>
bool parseFrom(const char *const (&names)[N], const std::string &text, Enum &out)
{
    for (std::size_t i = 0; i < N; ++i) {
        if (text == names[i]) {
            out = static_cast<Enum>(i);
            return true;
        }
    }
    return false;
}

} // namespace

const char *interconnectName(Interconnect v)
{
    return kInterconnectNames[static_cast<int>(v)];
}

bool parseInterconnect(const std::string &s, Interconnect &v)
{
    return parseFrom(kInterconnectNames, s, v);
}

const char *gpuArchitectureName(GpuArchitecture v)
{
    return kGpuArchitectureNames[static_cast<int>(v)];
}

bool parseGpuArchitecture(const std::string &s, GpuArchitecture &v)
{
    return parseFrom(kGpuArchitectureNames, s, v);
}

} // namespace membudget
