// SPDX-License-Identifier: GPL-3.0-or-later
#include "throughput/throughput_constants.h"

namespace membudget {

double pcieGbps(int generation)
{
    switch (generation) {
    case 3:
        return 16;
    case 4:
        return 32;
    case 5:
        return 64;
    default:
        return generation > 5 ? 128 : 16;
    }
}

double flashAttentionEfficiency(GpuArchitecture architecture)
{
    switch (architecture) {
    case GpuArchitecture::Ampere:
    case GpuArchitecture::Ada:
        return 0.60;
    default:
        return 0.35;
    }
}

} // namespace membudget
