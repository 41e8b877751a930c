// SPDX-License-Identifier: GPL-3.0-or-later
#include "advice/fit_advisor.h"
#include "advice/fit_solver.h"
#include "advice/gpu_verdict.h"
#include "test_architectures.h"

#include <QtTest>

using namespace membudget;
using namespace membudget::testing;

class TestFit : public QObject
{
    Q_OBJECT
private:
    static EstimateInput lora8b()
    {
        EstimateInput in;
        in.arch = llama3_8b();
        in.training.method = Method::Lora;
        in.training.precision = Precision::Bf16;
        in.training.attention = Attention::Flash;
        in.training.checkpointing = Checkpointing::Full;
        in.training.micro_batch_size = 4;
        in.training.sequence_length = 2048;
        return in;
    }

private slots:
    void maxMicroBatchIsTheBoundary()
    {
        const EstimateInput in = lora8b();
        const Bytes capacity = 80LL << 30;
        const std::int64_t b = maxMicroBatch(in, capacity);
        QVERIFY(b > 1);
        // The largest micro-batch that runs: the caching-allocator replay serves every request.
        const StepModel model(in);
        const std::int64_t s = in.training.sequence_length;
        QVERIFY(fitsOn(model, b, s, capacity));
        QVERIFY(!fitsOn(model, b + 1, s, capacity));
    }

    void maxSequenceIsTheBoundary()
    {
        const EstimateInput in = lora8b();
        const Bytes capacity = 24LL << 30;
        const std::int64_t s = maxSequenceLength(in, capacity);
        QVERIFY(s > 128);
        const StepModel model(in);
        const std::int64_t b = in.training.micro_batch_size;
        QVERIFY(fitsOn(model, b, s, capacity));
        QVERIFY(!fitsOn(model, b, s + 1, capacity));
    }

    void nothingFitsGivesZero()
    {
        QCOMPARE(maxMicroBatch(lora8b(), 1LL << 30), std::int64_t(0));
        QCOMPARE(maxSequenceLength(lora8b(), 1LL << 30), std::int64_t(0));
    }

    void suggestionsFitAndAreOrderedByCost()
    {
        EstimateInput in = lora8b();
        in.training.method = Method::Full;
        in.training.checkpointing = Checkpointing::None;
        in.training.attention = Attention::Eager;
        const Bytes capacity = 80LL << 30;
        QVERIFY(estimateMemory(in).device_total > capacity);
        const auto fits = suggestFits(in, capacity, 8);
        QVERIFY(!fits.empty());
        double last = 0;
        for (const FitSuggestion &s : fits) {
            QVERIFY(!s.changes.empty());
            QVERIFY(s.device_total <= capacity);
            QCOMPARE(estimateMemory(s.input).device_total, s.device_total);
            QVERIFY(s.slowdown >= last);
            last = s.slowdown;
        }
    }
};

QTEST_APPLESS_MAIN(TestFit)
#include "tst_fit.moc"
