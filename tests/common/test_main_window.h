// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// A main window as the GUI tests start it: the bundled presets, settings in a file of the test's
// own temporary folder (nothing of the user's is read or written), and the test's prompts in place
// of dialogs (`Prompts` is a UserPrompts the test defines; `prompts` receives it).

#include "document/app_settings.h"
#include "io/preset_catalog.h"
#include "main_window.h"

#include <QTemporaryDir>

#include <memory>

namespace membudget::test {

template<typename Prompts>
MainWindow *newTestMainWindow(const QTemporaryDir &dir, Prompts *&prompts)
{
    auto *window = new MainWindow(PresetCatalog::bundled(),
                                  std::make_unique<AppSettings>(
                                      dir.filePath(QStringLiteral("settings.ini"))));
    auto owned = std::make_unique<Prompts>();
    prompts = owned.get();
    window->setPrompts(std::move(owned));
    return window;
}

} // namespace membudget::test
