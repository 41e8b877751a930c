// SPDX-License-Identifier: GPL-3.0-or-later
// Core speed: one estimate, the fit solvers, a sweep curve, a scenario parse (issue: performance).
// Run: build/tests/bench/bench_core -median 11   (QBENCHMARK reports per-iteration times)
#include "advice/fit_solver.h"
#include "io/preset_catalog.h"
#include "io/scenario_yaml.h"
#include "model/memory_estimator.h"

#include <QtTest>

using namespace membudget;

class BenchCore : public QObject
{
    Q_OBJECT
private:
    EstimateInput m_input;

private slots:
    void initTestCase()
    {
        std::string error;
        auto in = resolveScenario(defaultScenario(), PresetCatalog::bundled(), error);
        QVERIFY2(in.has_value(), error.c_str());
        m_input = *in;
    }

    void oneEstimate()
    {
        Bytes sink = 0;
        QBENCHMARK
        {
            sink += estimateMemory(m_input).device_total;
        }
        QVERIFY(sink > 0);
    }

    void maxMicroBatch80GB()
    {
        std::int64_t b = 0;
        QBENCHMARK
        {
            b = maxMicroBatch(m_input, 80LL << 30);
        }
        QVERIFY(b > 0);
    }

    void maxSequence80GB()
    {
        std::int64_t s = 0;
        QBENCHMARK
        {
            s = maxSequenceLength(m_input, 80LL << 30);
        }
        QVERIFY(s > 0);
    }

    void sweep512Points()
    {
        Bytes sink = 0;
        QBENCHMARK
        {
            EstimateInput probe = m_input;
            for (int i = 0; i < 512; ++i) {
                probe.training.sequence_length = 128 + i * 256;
                sink += estimateMemory(probe).peak_allocated;
            }
        }
        QVERIFY(sink > 0);
    }

    void everyPresetMethodPrecision()
    {
        Bytes sink = 0;
        QBENCHMARK
        {
            for (const ModelPreset &m : PresetCatalog::bundled().models()) {
                EstimateInput in = m_input;
                in.arch = m.arch;
                for (int method = 0; method < 3; ++method) {
                    in.training.method = static_cast<Method>(method);
                    in.training.quantization = method == 2 ? Quantization::Nf4 : Quantization::None;
                    for (int p = 0; p < 7; ++p) {
                        in.training.precision = static_cast<Precision>(p);
                        sink += estimateMemory(in).device_total;
                    }
                }
            }
        }
        QVERIFY(sink > 0);
    }

    void parseScenarioText()
    {
        const std::string text = scenarioToYaml(defaultScenario());
        QBENCHMARK
        {
            LoadError error;
            auto s = parseScenario(text, "bench", error, &PresetCatalog::bundled());
            QVERIFY(s.has_value());
        }
    }
};

QTEST_APPLESS_MAIN(BenchCore)
#include "bench_core.moc"
