// SPDX-License-Identifier: GPL-3.0-or-later
#include "advice/fit_advisor.h"
#include "advice/fit_solver.h"
#include "advice/gpu_verdict.h"
#include "io/preset_catalog.h"
#include "test_architectures.h"
#include "throughput/throughput_model.h"

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
        const GpuSpec gpu = *PresetCatalog::bundled().findGpu("a100-80gb");
        const Bytes capacity = gpu.memory_bytes;
        QVERIFY(estimateMemory(in).device_total > capacity);
        const auto fits = suggestFits(in, gpu, 8);
        QVERIFY(!fits.empty());
        const ThroughputEstimate original = estimateThroughput(in, gpu.performance);
        double last = 0;
        for (const FitSuggestion &s : fits) {
            QVERIFY(!s.changes.empty());
            QVERIFY(s.device_total <= capacity);
            QCOMPARE(estimateMemory(s.input).device_total, s.device_total);
            QVERIFY(s.slowdown >= last / 1.01); // fastest first, in steps of 1%
            last = s.slowdown;
            // The cost in time is the model's, on this GPU: time per token relative to the original.
            const ThroughputEstimate t = estimateThroughput(s.input, gpu.performance);
            QCOMPARE(s.step_seconds, t.step_seconds);
            QVERIFY(qAbs(s.slowdown - original.tokens_per_second / t.tokens_per_second) < 1e-9);
        }
    }

    // Offloading parameters over PCIe costs more time per token than checkpointing does: the order
    // comes from the model, not from fixed factors.
    void offloadRanksBelowCheckpointing()
    {
        EstimateInput in = lora8b();
        in.training.method = Method::Full;
        in.training.checkpointing = Checkpointing::None;
        in.training.micro_batch_size = 8;
        in.parallelism.gpus = 8;
        const GpuSpec gpu = *PresetCatalog::bundled().findGpu("a100-80gb");
        const auto fits = suggestFits(in, gpu, 40);
        double checkpointing = 0, offload = 0;
        for (const FitSuggestion &s : fits) {
            if (s.changes.size() != 1)
                continue;
            if (s.changes.front().rfind("gradient checkpointing: full", 0) == 0)
                checkpointing = s.slowdown;
            if (s.changes.front().rfind("CPU offload of optimizer states and parameters", 0) == 0)
                offload = s.slowdown;
        }
        if (checkpointing > 0 && offload > 0)
            QVERIFY(offload > checkpointing);
        for (const FitSuggestion &s : fits)
            QVERIFY(s.slowdown > 0.2 && s.slowdown < 50);
    }
};

QTEST_APPLESS_MAIN(TestFit)
#include "tst_fit.moc"
