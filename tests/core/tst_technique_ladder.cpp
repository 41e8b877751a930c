// SPDX-License-Identifier: GPL-3.0-or-later
#include "advice/technique_ladder.h"
#include "test_architectures.h"

#include <QtTest>

using namespace membudget;
using namespace membudget::testing;

class TestTechniqueLadder : public QObject
{
    Q_OBJECT
private slots:
    void eachStepSavesMemory()
    {
        EstimateInput in;
        in.arch = llama3_8b();
        in.training.micro_batch_size = 4;
        in.training.sequence_length = 4096;
        const auto steps = techniqueLadder(in);
        QCOMPARE(steps.size(), std::size_t(8));
        QCOMPARE(steps.front().input.training.precision, Precision::Fp32);
        QCOMPARE(steps.back().input.training.method, Method::Qlora);
        QCOMPARE(steps.back().input.training.loss, LossImplementation::Chunked);
        Bytes last = kBytesMax;
        for (const LadderStep &s : steps) {
            QVERIFY(validateInput(s.input).empty());
            const Bytes v = estimateMemory(s.input).peak_allocated;
            QVERIFY2(v < last, s.label.c_str());
            last = v;
        }
    }

    // DeepSpeed's ZeRO optimizer keeps an fp32 master copy: its bf16 rung says so, and is
    // estimated as mixed-bf16.
    void deepSpeedBf16RungKeepsTheMasterCopy()
    {
        EstimateInput in;
        in.arch = llama3_8b();
        in.parallelism.gpus = 8;
        in.parallelism.sharding = Sharding::Zero3;
        const auto steps = techniqueLadder(in);
        QCOMPARE(steps.at(1).label, std::string("+ bf16"));
        QVERIFY(steps.at(1).detail.find("fp32 master") != std::string::npos);
        EstimateInput mixed = steps.at(1).input;
        mixed.training.precision = Precision::MixedBf16;
        QCOMPARE(estimateMemory(steps.at(1).input).peak_allocated,
                 estimateMemory(mixed).peak_allocated);
        in.parallelism.sharding = Sharding::FsdpFull;
        QVERIFY(techniqueLadder(in).at(1).detail.find("master") == std::string::npos);
    }

    void inferenceLadder()
    {
        EstimateInput in;
        in.arch = llama3_8b();
        in.training.mode = Mode::Inference;
        const auto steps = techniqueLadder(in);
        QVERIFY(steps.size() >= 4);
        QVERIFY(estimateMemory(steps.back().input).peak_allocated
                < estimateMemory(steps.front().input).peak_allocated);
    }
};

QTEST_APPLESS_MAIN(TestTechniqueLadder)
#include "tst_technique_ladder.moc"
