// SPDX-License-Identifier: GPL-3.0-or-later
// torchao float8 training (training.float8): the casts around each decoder-layer linear, what it
// keeps (unchanged), the checks, the matmuls on FP8 tensor cores, the scenario key.
#include "io/preset_catalog.h"
#include "io/scenario_yaml.h"
#include "model/memory_estimator.h"
#include "model/step_model.h"
#include "test_architectures.h"
#include "test_presets.h"
#include "throughput/throughput_model.h"

#include <QtTest>

#include <cstring>

using namespace membudget;
using namespace membudget::testing;

class TestFloat8 : public QObject
{
    Q_OBJECT
private:
    static EstimateInput input(bool float8)
    {
        EstimateInput in;
        in.arch = llama3_8b();
        in.training.method = Method::Full;
        in.training.precision = Precision::Bf16;
        in.training.optimizer = Optimizer::AdamWFused;
        in.training.attention = Attention::Sdpa;
        in.training.micro_batch_size = 1;
        in.training.sequence_length = 2048;
        in.training.float8 = float8;
        return in;
    }

private slots:
    // Each linear's forward makes fp8 copies of its input and weight (one byte per element) that
    // live while its matmul runs; what autograd keeps is the 16-bit input, as without float8.
    void castsComeAndGoKeepsStayBf16()
    {
        const StepModel plain(input(false));
        const StepModel fp8(input(true));
        const double T = 2048;
        double largest = 0;
        int count = 0;
        for (const TimelineTensor &t : fp8.timeline().tensors)
            if (std::strcmp(t.name, "float8 casts of input and weight") == 0) {
                largest = std::max(largest, t.size.at(T, T));
                ++count;
            }
        QCOMPARE(count, 7); // q, k, v, o, gate, up, down; lm_head stays 16-bit
        QCOMPARE(largest, T * 14336 + 14336.0 * 4096); // down_proj: input and weight
        for (const StepModel *m : {&plain, &fp8})
            for (const TimelineTensor &t : m->timeline().tensors)
                QVERIFY(m == &fp8 || std::strcmp(t.name, "float8 casts of input and weight") != 0);
        const MemoryEstimate a = plain.estimate();
        const MemoryEstimate b = fp8.estimate();
        QCOMPARE(b.phase(Phase::Forward)[Component::Activations],
                 a.phase(Phase::Forward)[Component::Activations]);
        QCOMPARE(b.phase(Phase::Forward)[Component::Weights],
                 a.phase(Phase::Forward)[Component::Weights]);
    }

    void validation_data()
    {
        QTest::addColumn<QString>("what");
        QTest::newRow("lora") << "lora";
        QTest::newRow("fp16") << "fp16";
        QTest::newRow("fp32") << "fp32";
    }
    void validation()
    {
        QFETCH(QString, what);
        EstimateInput in = input(true);
        QVERIFY(validateInput(in).empty());
        if (what == "lora")
            in.training.method = Method::Lora;
        else if (what == "fp16")
            in.training.precision = Precision::MixedFp16;
        else
            in.training.precision = Precision::Fp32;
        std::string key;
        QVERIFY(!validateInput(in, &key).empty());
        QCOMPARE(QString::fromStdString(key), QStringLiteral("training.float8"));
        in.training.float8 = false;
        QVERIFY(validateInput(in).empty());
    }

    // The decoder layers' matmuls run at the fp8 rate (twice bf16 on an H100), lm_head does not;
    // the casts add element-wise time; a GPU without FP8 tensor cores cannot run it.
    void matmulsOnFp8TensorCores()
    {
        const ThroughputEstimate a = estimateThroughput(input(false), bundledGpu("h100-80gb"));
        const ThroughputEstimate b = estimateThroughput(input(true), bundledGpu("h100-80gb"));
        QVERIFY(a.valid && b.valid);
        QVERIFY(b.breakdown.matmul < 0.75 * a.breakdown.matmul);
        QVERIFY(b.breakdown.matmul > 0.5 * a.breakdown.matmul);
        QVERIFY(b.breakdown.elementwise > a.breakdown.elementwise);
        QVERIFY(b.tokens_per_second > a.tokens_per_second);
        QCOMPARE(b.model_flops_per_step, a.model_flops_per_step);
        const ThroughputEstimate ampere = estimateThroughput(input(true), bundledGpu("a100-80gb"));
        QVERIFY(!ampere.valid);
        QVERIFY(QString::fromStdString(ampere.problem).contains(QStringLiteral("FP8")));
    }

    void scenarioKey()
    {
        const std::string text = "format: membudget/1\n"
                                 "model: {preset: llama-3.1-8b}\n"
                                 "training: {method: full, precision: bf16, float8: true}\n"
                                 "gpus: [h100-80gb]\n";
        LoadError error;
        const std::optional<Scenario> s = parseScenario(text, "f8.yaml", error);
        QVERIFY2(s.has_value(), error.toString().c_str());
        QVERIFY(s->training.float8);
        QVERIFY(scenarioToYaml(*s).find("float8: true") != std::string::npos);
        QCOMPARE(*parseScenario(scenarioToYaml(*s), "again.yaml", error), *s);
        QVERIFY(!parseScenario("format: membudget/1\nmodel: {preset: llama-3.1-8b}\n"
                               "training: {float8: 2}\n",
                               "bad.yaml",
                               error)
                     .has_value());
        QCOMPARE(error.line, 3);
    }
};

QTEST_APPLESS_MAIN(TestFloat8)
#include "tst_float8.moc"
