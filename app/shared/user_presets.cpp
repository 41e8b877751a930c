// SPDX-License-Identifier: GPL-3.0-or-later
#include "user_presets.h"

#include <QStandardPaths>
#include <QString>

#include <cstdlib>

namespace membudget {

std::string userPresetFolder()
{
    if (const char *env = std::getenv("MEMBUDGET_PRESETS"); env && *env)
        return env;
    const QString base = QStandardPaths::writableLocation(QStandardPaths::GenericDataLocation);
    if (base.isEmpty())
        return {};
    return (base + QStringLiteral("/membudget/presets")).toStdString();
}

PresetCatalog loadCatalog(std::vector<LoadError> &problems)
{
    PresetCatalog catalog = PresetCatalog::bundled();
    const std::string folder = userPresetFolder();
    if (!folder.empty())
        problems = catalog.addFolder(folder);
    return catalog;
}

} // namespace membudget
