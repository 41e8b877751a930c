// SPDX-License-Identifier: GPL-3.0-or-later
// The model's context length (issue #16, item 7): max_position_embeddings of a preset, a scenario
// override or a config.json, stretched by model.rope_scaling_factor; unknown in quick mode. The fit
// solver stops there (tst_fit); here: where the figure comes from and the scenario key.
#include "io/preset_catalog.h"
#include "io/scenario_yaml.h"

#include <QtTest>

using namespace membudget;

namespace {

std::int64_t contextOf(const std::string &modelYaml, std::string *problem = nullptr)
{
    LoadError error;
    const auto s = parseScenario("format: membudget/1\nmodel: " + modelYaml + "\n",
                                 "s.yaml",
                                 error,
                                 &PresetCatalog::bundled());
    if (!s) {
        if (problem)
            *problem = error.message;
        return -1;
    }
    std::string message;
    const auto input = resolveScenario(*s, PresetCatalog::bundled(), message);
    if (!input) {
        if (problem)
            *problem = message;
        return -1;
    }
    return input->arch.context_length;
}

} // namespace

class TestContextLength : public QObject
{
    Q_OBJECT
private slots:
    void fromPresetsOverridesAndRopeScaling()
    {
        // Llama 3.1: max_position_embeddings 131072 (its config.json).
        QCOMPARE(contextOf("{preset: llama-3.1-8b}"), std::int64_t(131072));
        // Mistral 7B v0.1: 32768.
        QCOMPARE(contextOf("{preset: mistral-7b-v0.1}"), std::int64_t(32768));
        QCOMPARE(contextOf("{preset: mistral-7b-v0.1, rope_scaling_factor: 4}"),
                 std::int64_t(131072));
        QCOMPARE(contextOf("{preset: llama-2-7b, max_position_embeddings: 16384}"),
                 std::int64_t(16384));
        // Quick mode says nothing about positions: no limit.
        QCOMPARE(contextOf("{parameters: 7e9}"), std::int64_t(0));
        QCOMPARE(contextOf("{parameters: 7e9, rope_scaling_factor: 2}"), std::int64_t(0));
        // Every bundled model states its context length.
        for (const ModelPreset &m : PresetCatalog::bundled().models())
            QVERIFY2(m.arch.context_length > 0, m.id.c_str());
    }

    void ropeScalingIsCheckedAndSaved()
    {
        std::string problem;
        QCOMPARE(contextOf("{preset: gpt2, rope_scaling_factor: 2}", &problem), std::int64_t(-1));
        QVERIFY2(problem.find("rotary") != std::string::npos, problem.c_str());
        QCOMPARE(contextOf("{preset: llama-3.1-8b, rope_scaling_factor: 0.5}", &problem),
                 std::int64_t(-1));

        Scenario s = defaultScenario();
        s.model.rope_scaling_factor = 4.0;
        const std::string yaml = scenarioToYaml(s);
        QVERIFY(yaml.find("rope_scaling_factor: 4") != std::string::npos);
        LoadError error;
        const auto back = parseScenario(yaml, "back.yaml", error, &PresetCatalog::bundled());
        QVERIFY2(back, error.toString().c_str());
        QVERIFY(*back == s);
    }
};

QTEST_APPLESS_MAIN(TestContextLength)
#include "tst_context_length.moc"
