// SPDX-License-Identifier: GPL-3.0-or-later
// Test helper for tst_safe_save: saves two different scenarios to one path, alternately and as
// fast as it can, until it is killed. `app` saves through the application's ScenarioDocument
// (QSaveFile); `core` through the core's saveScenarioFile (what `membudget import-config -o` uses).
//   save_writer app|core PATH
// once-app and once-core save scenario B once and print the error, if any.
#include "document/scenario_document.h"
#include "io/scenario_yaml.h"
#include "test_scenarios.h"

#include <QCoreApplication>

#include <cstdio>

int main(int argc, char **argv)
{
    using namespace membudget;
    QCoreApplication app(argc, argv);
    if (argc != 3)
        return 2;
    const std::string mode = argv[1];
    const bool viaApp = mode == "app" || mode == "once-app";
    const QString path = QString::fromLocal8Bit(argv[2]);
    const Scenario scenarios[2] = {savedScenarioA(), savedScenarioB()};
    ScenarioDocument doc(PresetCatalog::bundled());
    if (mode == "once-app" || mode == "once-core") {
        // One save of scenario B; the error, if any, on stderr (tst_safe_save, full disk).
        QString appError;
        std::string coreError;
        doc.reset(scenarios[1]);
        const bool ok = viaApp ? doc.saveAs(path, appError)
                               : saveScenarioFile(scenarios[1], path.toStdString(), coreError);
        std::fputs((viaApp ? appError.toStdString() : coreError).c_str(), stderr);
        return ok ? 0 : 1;
    }
    // One document per scenario, each estimated once before the loop: the loop is all saving, and
    // a sanitizer build's slower estimate does not keep the first save from finishing.
    ScenarioDocument other(PresetCatalog::bundled());
    ScenarioDocument *docs[2] = {&doc, &other};
    if (viaApp) {
        doc.reset(scenarios[0]);
        other.reset(scenarios[1]);
    }
    std::puts("saving");
    std::fflush(stdout);
    for (unsigned long i = 0;; ++i) {
        // B first: the file starts as A, so any completed save shows (a loaded machine may finish
        // only one before the kill).
        const Scenario &s = scenarios[(i + 1) % 2];
        if (viaApp) {
            QString error;
            if (!docs[(i + 1) % 2]->saveAs(path, error))
                return 1;
        } else {
            std::string error;
            if (!saveScenarioFile(s, path.toStdString(), error))
                return 1;
        }
    }
}
