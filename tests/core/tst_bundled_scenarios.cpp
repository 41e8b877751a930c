// SPDX-License-Identifier: GPL-3.0-or-later
// Every bundled scenario is true to its description (issue #16): its `expected` claims (the GPUs
// it fits and does not fit, which the description states in words) hold by the core's verdict
// (gpuVerdict: fits, tight or does not fit),
// every GPU it compares against is claimed one way or the other, and it loads, resolves and saves
// back as it was.
#include "advice/gpu_verdict.h"
#include "io/bundled_presets.h"
#include "io/preset_catalog.h"
#include "io/scenario_yaml.h"

#include <QtTest>

#include <algorithm>

using namespace membudget;

class TestBundledScenarios : public QObject
{
    Q_OBJECT
private slots:
    void claimsHold_data()
    {
        QTest::addColumn<QString>("id");
        // Every file in presets/scenarios/ parsed (the bundled catalog skips files it cannot read).
        const auto &scenarios = PresetCatalog::bundled().scenarios();
        const auto files = std::count_if(bundledPresetFiles().begin(),
                                         bundledPresetFiles().end(),
                                         [](const EmbeddedFile &f) {
                                             return f.path.substr(0, 10) == "scenarios/";
                                         });
        QVERIFY(files >= 8);
        QCOMPARE(static_cast<qsizetype>(scenarios.size()), static_cast<qsizetype>(files));
        for (const ScenarioPreset &s : scenarios)
            QTest::newRow(s.id.c_str()) << QString::fromStdString(s.id);
    }

    void claimsHold()
    {
        QFETCH(QString, id);
        const PresetCatalog &catalog = PresetCatalog::bundled();
        const ScenarioPreset *preset = catalog.findScenario(id.toStdString());
        QVERIFY(preset);
        const Scenario &s = preset->scenario;
        QVERIFY2(!s.name.empty() && !s.description.empty(), "a bundled scenario says what it is");
        QVERIFY2(!s.expected_fits.empty() || !s.expected_tight.empty()
                     || !s.expected_not_fits.empty(),
                 "a bundled scenario states what fits (scenario key `expected`)");
        std::string error;
        const auto input = resolveScenario(s, catalog, error);
        QVERIFY2(input, error.c_str());
        const StepModel model(*input);
        const MemoryEstimate est = estimateMemory(*input);
        // The core's three-way verdict: a claim holds only where the verdict is clear (a scenario
        // whose description says "fits" must not be "tight" there).
        auto verdictOn = [&](const std::string &gpuId) {
            const GpuSpec *gpu = catalog.findGpu(gpuId);
            if (!gpu)
                qFatal("unknown GPU %s", gpuId.c_str());
            return gpuVerdict(model, est, gpu->memory_bytes).verdict;
        };
        for (const std::string &gpu : s.expected_fits)
            QVERIFY2(verdictOn(gpu) == FitVerdict::Fits,
                     qPrintable(QStringLiteral("%1 claims to fit %2, the verdict is %3")
                                    .arg(id, gpu.c_str(), verdictLabel(verdictOn(gpu)))));
        for (const std::string &gpu : s.expected_tight)
            QVERIFY2(verdictOn(gpu) == FitVerdict::Tight,
                     qPrintable(QStringLiteral("%1 claims to be tight on %2, the verdict is %3")
                                    .arg(id, gpu.c_str(), verdictLabel(verdictOn(gpu)))));
        for (const std::string &gpu : s.expected_not_fits)
            QVERIFY2(verdictOn(gpu) == FitVerdict::DoesNotFit,
                     qPrintable(QStringLiteral("%1 claims not to fit %2, the verdict is %3")
                                    .arg(id, gpu.c_str(), verdictLabel(verdictOn(gpu)))));
        for (const std::string &gpu : s.gpus) {
            const bool claimed = std::count(s.expected_fits.begin(), s.expected_fits.end(), gpu)
                                 + std::count(s.expected_tight.begin(), s.expected_tight.end(), gpu)
                                 + std::count(s.expected_not_fits.begin(),
                                              s.expected_not_fits.end(),
                                              gpu);
            QVERIFY2(claimed,
                     qPrintable(QStringLiteral("%1 compares against %2 but claims nothing about it")
                                    .arg(id, gpu.c_str())));
        }
    }

    // The claims survive a save and a load, and a wrong claim is what the test above would catch.
    void claimsRoundTripAndCanFail()
    {
        const ScenarioPreset *preset = PresetCatalog::bundled().findScenario(
            "qlora-llama-3.1-70b-2gpu-fsdp");
        QVERIFY(preset);
        LoadError error;
        const auto back = parseScenario(scenarioToYaml(preset->scenario),
                                        "back.yaml",
                                        error,
                                        &PresetCatalog::bundled());
        QVERIFY2(back, error.toString().c_str());
        QCOMPARE(back->expected_fits, preset->scenario.expected_fits);
        QCOMPARE(back->expected_tight, preset->scenario.expected_tight);
        QCOMPARE(back->expected_not_fits, preset->scenario.expected_not_fits);
        QVERIFY(*back == preset->scenario);

        const auto wrong = parseScenario(
            "format: membudget/1\nmodel: {preset: llama-3.1-70b}\n"
            "training: {method: full, precision: fp32}\nexpected: {fits: [rtx-4090]}\n",
            "wrong.yaml",
            error,
            &PresetCatalog::bundled());
        QVERIFY(wrong);
        std::string problem;
        const auto input = resolveScenario(*wrong, PresetCatalog::bundled(), problem);
        QVERIFY(input);
        QCOMPARE(gpuVerdict(StepModel(*input),
                            estimateMemory(*input),
                            PresetCatalog::bundled().findGpu("rtx-4090")->memory_bytes)
                     .verdict,
                 FitVerdict::DoesNotFit);

        QVERIFY(!parseScenario("format: membudget/1\nexpected: {fits: [rtx-9999]}\n",
                               "bad.yaml",
                               error,
                               &PresetCatalog::bundled()));
        QVERIFY2(error.message.find("unknown GPU 'rtx-9999'") != std::string::npos,
                 error.message.c_str());
        QCOMPARE(error.line, 2);
        QVERIFY(!parseScenario("format: membudget/1\nexpected: {fit: [rtx-4090]}\n",
                               "bad.yaml",
                               error,
                               &PresetCatalog::bundled()));
    }
};

QTEST_APPLESS_MAIN(TestBundledScenarios)
#include "tst_bundled_scenarios.moc"
