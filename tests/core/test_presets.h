// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The bundled GPU presets' speed figures, for the suites that model time.

#include "io/preset_catalog.h"

#include <QtGlobal>

namespace membudget::testing {

inline const GpuPerformance &bundledGpu(const char *id)
{
    const GpuSpec *g = PresetCatalog::bundled().findGpu(id);
    if (!g)
        qFatal("no preset %s", id);
    return g->performance;
}

} // namespace membudget::testing
