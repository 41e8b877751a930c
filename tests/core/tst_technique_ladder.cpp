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
