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

    // An A100's performance figures with another memory size (the suggestions' times are modelled).
    static GpuSpec gpuOf(Bytes memory)
    {
        GpuSpec gpu = *PresetCatalog::bundled().findGpu("a100-80gb");
        gpu.memory_bytes = memory;
        return gpu;
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

    // The estimate-only search for several GPUs at once: each answer is the estimate's boundary
    // (fits there, not one further), and the searches share their probes, so six capacities cost
    // far fewer estimates than six separate bisections (the verdict table on every slider move).
    void sharedProbesFindEachBoundary()
    {
        const StepModel model(lora8b());
        FitProbes probes(model, FitMetric::DeviceTotal);
        const std::int64_t seq = model.input().training.sequence_length;
        const std::int64_t batch = model.input().training.micro_batch_size;
        const auto total = [&](std::int64_t b, std::int64_t s) {
            return model.estimate(b, s).device_total;
        };
        std::size_t separate = 0;
        for (const int gib : {24, 40, 48, 80, 94, 141}) {
            const Bytes capacity = Bytes(gib) << 30;
            const std::int64_t b = maxMicroBatch(probes, capacity);
            QVERIFY(b > 0);
            QVERIFY(total(b, seq) <= capacity);
            QVERIFY(total(b + 1, seq) > capacity);
            const std::int64_t s = maxSequenceLength(probes, capacity);
            QVERIFY(s > 0);
            QVERIFY(total(batch, s) <= capacity);
            QVERIFY(total(batch, s + 1) > capacity);
            FitProbes alone(model, FitMetric::DeviceTotal);
            QCOMPARE(maxMicroBatch(alone, capacity), b);
            QCOMPARE(maxSequenceLength(alone, capacity), s);
            separate += alone.estimates();
        }
        qInfo("%zu estimates shared, %zu separately", probes.estimates(), separate);
        QVERIFY2(2 * probes.estimates() < separate,
                 qPrintable(QStringLiteral("%1 shared vs %2 separate estimates")
                                .arg(probes.estimates())
                                .arg(separate)));
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
        bool changingResult = false;
        for (const FitSuggestion &s : fits) {
            QVERIFY(!s.changes.empty());
            QVERIFY(s.device_total <= capacity);
            // Fits by the three-way verdict, not merely by the expected total.
            QCOMPARE(gpuVerdict(s.input, capacity).verdict, FitVerdict::Fits);
            QCOMPARE(s.verdict, FitVerdict::Fits);
            QCOMPARE(estimateMemory(s.input).device_total, s.device_total);
            // Those that keep the experiment first, each kind fastest first, in steps of 1%.
            QVERIFY2(!changingResult || s.changesResult(), "a speed-only row after a result change");
            if (s.changesResult() != changingResult)
                last = 0;
            changingResult = s.changesResult();
            QVERIFY(s.slowdown >= last / 1.01);
            last = s.slowdown;
            // The cost in time is the model's, on this GPU: time per token relative to the original.
            const ThroughputEstimate t = estimateThroughput(s.input, gpu.performance);
            QCOMPARE(s.step_seconds, t.step_seconds);
            QVERIFY(qAbs(s.slowdown - original.tokens_per_second / t.tokens_per_second) < 1e-9);
        }
    }

    // Offloading parameters over PCIe costs more time per token than checkpointing does: the order
    // comes from the model, not from fixed factors.
    // A search whose answer is no longer wanted stops and returns nothing; one left to run gives
    // the same answer as without a flag.
    void aCancelledSearchReturnsNothing()
    {
        EstimateInput in = lora8b();
        in.training.method = Method::Full;
        const GpuSpec gpu = *PresetCatalog::bundled().findGpu("rtx-4090");
        std::atomic<bool> cancelled{true};
        QVERIFY(suggestFits(in, gpu, 8, {&cancelled, 0}).empty());
        cancelled = false;
        const auto kept = suggestFits(in, gpu, 8, {&cancelled, 1}); // on one thread
        const auto plain = suggestFits(in, gpu, 8);
        QVERIFY(!plain.empty());
        QCOMPARE(kept.size(), plain.size());
        for (std::size_t i = 0; i < plain.size(); ++i)
            QCOMPARE(kept[i].changes, plain[i].changes);
    }

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

    // Full bf16 fine-tuning on one GPU that holds everything but a second copy of the weights'
    // size: stepping in backward (no gradients held) fits on its own and is offered as such;
    // with gradient accumulation it is not offered (torchtune refuses the pair).
    void optimizerInBackwardIsOffered()
    {
        EstimateInput in = lora8b();
        in.training.method = Method::Full;
        in.training.optimizer = Optimizer::AdamWFused;
        in.training.loss = LossImplementation::Chunked;
        in.training.micro_batch_size = 1;
        EstimateInput stepped = in;
        stepped.training.optimizer_in_backward = true;
        const Bytes holding = estimateMemory(in).device_total;
        const Bytes freeing = estimateMemory(stepped).device_total;
        QVERIFY(holding - freeing > (10LL << 30));
        const GpuSpec gpu = gpuOf((holding + freeing) / 2);
        const std::string label = "optimizer step in backward (frees each gradient at once)";
        bool offered = false;
        for (const FitSuggestion &s : suggestFits(in, gpu, 100))
            if (s.changes == std::vector<std::string>{label}) {
                offered = true;
                QVERIFY(s.input.training.optimizer_in_backward);
            }
        QVERIFY(offered);
        in.training.gradient_accumulation_steps = 2;
        for (const FitSuggestion &s : suggestFits(in, gpu, 100))
            QVERIFY(!s.input.training.optimizer_in_backward);
    }

    // LoRA at 32k tokens with full checkpointing on a card that holds everything but most of the
    // layer inputs: offloading them (torchtune's activation offloading) fits on its own, with the
    // layer inputs in CPU RAM and the PCIe copies in the step's time (hidden behind 32k tokens of
    // compute, so barely slower); already offloading, it is not offered again.
    void activationOffloadingIsOffered()
    {
        EstimateInput in = lora8b();
        in.training.micro_batch_size = 1;
        in.training.sequence_length = 32768;
        in.training.loss = LossImplementation::Chunked;
        EstimateInput offloaded = in;
        offloaded.training.activation_offloading = true;
        const MemoryEstimate kept = estimateMemory(in);
        const MemoryEstimate moved = estimateMemory(offloaded);
        QVERIFY(kept.device_total - moved.device_total > (4LL << 30));
        const GpuSpec gpu = gpuOf((kept.device_total + moved.device_total) / 2);
        bool offered = false;
        for (const FitSuggestion &s : suggestFits(in, gpu, 100)) {
            if (s.changes.size() != 1 || !s.input.training.activation_offloading)
                continue;
            offered = true;
            QCOMPARE(s.cpu_offload_bytes, moved.cpu_offload_total);
            QVERIFY(s.cpu_offload_bytes >= 32LL * 32768 * 4096 * 2);
            QVERIFY(s.slowdown >= 1.0 && s.slowdown < 1.05);
        }
        QVERIFY(offered);
        const ThroughputEstimate on = estimateThroughput(offloaded, gpu.performance);
        QVERIFY(on.breakdown.offload > 0);
        QCOMPARE(estimateThroughput(in, gpu.performance).breakdown.offload, 0.0);
        for (const FitSuggestion &s : suggestFits(offloaded, gpuOf(moved.device_total / 2), 100))
            for (const std::string &c : s.changes)
                QVERIFY(c.find("activation offloading") == std::string::npos);
    }

    // The Trainer before transformers 5.0 keeps a KV cache through every training forward; with
    // Liger's loss the forward's end is the peak, so turning use_cache off makes a tight run fit on
    // its own, at no cost in time.
    // On TRL before 1.7 (loss_type "nll"), TRL's chunked loss is offered: at 8,192 tokens it
    // needs far less than the whole fp32 logits.
    void trlChunkedLossIsOfferedOnTrl()
    {
        EstimateInput in = lora8b();
        in.training.stack = {Stack::TrlSft, "1.6", ""};
        in.training.sequence_length = 8192;
        EstimateInput chunked = in;
        chunked.training.loss = LossImplementation::TrlChunkedNll;
        const Bytes whole = estimateMemory(in).device_total;
        const Bytes inChunks = estimateMemory(chunked).device_total;
        QVERIFY(whole - inChunks > (4LL << 30));
        const std::string label = "loss: trl-chunked-nll (TRL's loss_type=\"chunked_nll\")";
        bool offered = false;
        for (const FitSuggestion &s : suggestFits(in, gpuOf((whole + inChunks) / 2), 100))
            if (s.changes == std::vector<std::string>{label}) {
                offered = true;
                QCOMPARE(s.input.training.loss, LossImplementation::TrlChunkedNll);
            }
        QVERIFY(offered);
        in.training.stack = {Stack::HfTrainer, "", ""}; // not a Trainer setting
        for (const FitSuggestion &s : suggestFits(in, gpuOf((whole + inChunks) / 2), 100))
            for (const std::string &c : s.changes)
                QVERIFY(c.find("trl-chunked-nll") == std::string::npos);
    }

    // A Trainer run on bf16 weights without bf16=True: the flag is offered where it makes the
    // fp32 adapters' inputs 16-bit and so fits, and not once it is on.
    void trainerMixedPrecisionIsOffered()
    {
        EstimateInput in = lora8b();
        in.training.stack = {Stack::TrlSft, "0.13", "2.4"};
        in.training.checkpointing = Checkpointing::None;
        in.training.use_cache = false;
        in.training.lora.targets = TargetAllLinear;
        in.training.trainer_mixed_precision = false;
        EstimateInput on = in;
        on.training.trainer_mixed_precision = true;
        const Bytes off = estimateMemory(in).device_total;
        const Bytes with = estimateMemory(on).device_total;
        QVERIFY(off - with > (8LL << 30)); // every layer's adapter inputs, fp32 -> bf16
        const std::string label = "Trainer bf16=True (autocast: fp32 adapters keep 16-bit inputs)";
        bool offered = false;
        for (const FitSuggestion &s : suggestFits(in, gpuOf((off + with) / 2), 100))
            if (s.changes == std::vector<std::string>{label}) {
                offered = true;
                QCOMPARE(s.input.training.trainer_mixed_precision, std::optional<bool>(true));
            }
        QVERIFY(offered);
        const std::vector<FitSuggestion> onSuggestions = suggestFits(on,
                                                                     gpuOf(with - (2LL << 30)),
                                                                     100);
        QVERIFY(!onSuggestions.empty());
        for (const FitSuggestion &s : onSuggestions)
            for (const std::string &c : s.changes)
                QVERIFY(c.find("bf16=True") == std::string::npos);
    }

    void useCacheOffIsOffered()
    {
        EstimateInput in = lora8b();
        in.training.stack = {Stack::HfTrainer, "4.57", ""};
        in.training.checkpointing = Checkpointing::None;
        in.training.attention = Attention::Sdpa;
        in.training.batch_padding = BatchPadding::Padded; // SDPA gets repeated keys and values
        in.training.loss = LossImplementation::LigerFused;
        in.training.micro_batch_size = 8; // 2 GiB of keys and values in the cache
        EstimateInput off = in;
        off.training.use_cache = false;
        const MemoryEstimate withCache = estimateMemory(in), without = estimateMemory(off);
        const Bytes forward = withCache.phase(Phase::Forward).allocated()
                              - without.phase(Phase::Forward).allocated();
        QVERIFY(forward > (3LL << 29));
        // The backward (last layer's gradients) nearly matches the forward's end without the cache.
        const Bytes cached = withCache.device_total;
        const Bytes plain = without.device_total;
        QVERIFY(cached - plain > (1LL << 29));
        const std::string label = "use_cache: false (no KV cache in the training forward)";
        bool offered = false;
        // 2 GiB above the expected total the run is tight (the band's high end is above).
        const GpuSpec gpu = gpuOf(cached + (2LL << 30));
        QCOMPARE(gpuVerdict(in, gpu.memory_bytes).verdict, FitVerdict::Tight);
        for (const FitSuggestion &s : suggestFits(in, gpu, 100))
            if (s.changes == std::vector<std::string>{label}) {
                offered = true;
                QCOMPARE(s.input.training.use_cache, std::optional<bool>(false));
                QVERIFY(s.slowdown < 1.01);
            }
        QVERIFY(offered);
        for (const FitSuggestion &s : suggestFits(off, gpuOf(plain / 2), 100))
            for (const std::string &c : s.changes)
                QVERIFY(c.find("use_cache") == std::string::npos);
    }

    // Issue #16: micro-batch 83 became "2 x 32"; the effective batch must never change.
    void suggestionsKeepTheEffectiveBatch_data()
    {
        QTest::addColumn<int>("microBatch");
        QTest::addColumn<int>("accumulation");
        QTest::newRow("prime 83") << 83 << 1;
        QTest::newRow("12 x 3") << 12 << 3;
        QTest::newRow("64") << 64 << 2;
    }
    void suggestionsKeepTheEffectiveBatch()
    {
        QFETCH(int, microBatch);
        QFETCH(int, accumulation);
        EstimateInput in = lora8b();
        in.training.method = Method::Full;
        in.training.precision = Precision::MixedBf16;
        in.training.micro_batch_size = microBatch;
        in.training.gradient_accumulation_steps = accumulation;
        in.training.sequence_length = 1024;
        const std::int64_t effective = std::int64_t(microBatch) * accumulation;
        const auto fits = suggestFits(in, gpuOf(80LL << 30), 100);
        QVERIFY(!fits.empty());
        bool split = false;
        for (const FitSuggestion &s : fits) {
            QCOMPARE(s.input.training.micro_batch_size
                         * s.input.training.gradient_accumulation_steps,
                     effective);
            split = split || s.input.training.micro_batch_size != microBatch;
        }
        if (microBatch == 83) // a prime: only 1 x 83 keeps the effective batch
            QVERIFY2(split, "no suggestion splits the micro-batch");
    }

    // Method changes train something else: marked, and ranked after every speed-only trade.
    void resultChangesAreMarkedAndLast()
    {
        EstimateInput in = lora8b();
        in.training.method = Method::Full;
        in.training.precision = Precision::MixedBf16;
        in.training.micro_batch_size = 8;
        const auto fits = suggestFits(in, gpuOf(80LL << 30), 100);
        int speedOnly = 0, changing = 0;
        for (const FitSuggestion &s : fits) {
            const bool methodChanged = s.input.training.method != in.training.method;
            QCOMPARE(s.changesResult(), methodChanged);
            for (const std::string &c : s.result_changes)
                QVERIFY(std::find(s.changes.begin(), s.changes.end(), c) != s.changes.end());
            (methodChanged ? changing : speedOnly)++;
            if (!methodChanged)
                QCOMPARE(changing, 0);
        }
        QVERIFY(speedOnly > 0);
        QVERIFY(changing > 0);
    }

    // No row is another row plus a fused optimizer, or another row with a variant swapped in that
    // is neither faster nor smaller.
    void nearDuplicatesAreFolded()
    {
        EstimateInput in = lora8b();
        in.training.method = Method::Full;
        in.training.precision = Precision::Fp32;
        in.training.attention = Attention::Eager;
        in.training.checkpointing = Checkpointing::None;
        in.training.micro_batch_size = 2;
        in.arch = llama32_1b();
        const auto fits = suggestFits(in, gpuOf(24564LL << 20), 100);
        QVERIFY(fits.size() > 3);
        auto without = [](std::vector<std::string> changes, const std::string &drop) {
            changes.erase(std::remove(changes.begin(), changes.end(), drop), changes.end());
            return changes;
        };
        const std::string fused = "optimizer: adamw-fused (no foreach temporaries)";
        for (const FitSuggestion &a : fits) {
            for (const FitSuggestion &b : fits) {
                if (&a == &b)
                    continue;
                QVERIFY2(without(a.changes, fused) != b.changes || a.changes == b.changes,
                         "a row differs from another only by the fused optimizer");
                auto paged = a.changes;
                for (std::string &c : paged)
                    if (c == "optimizer: adamw-8bit")
                        c = "optimizer: paged-adamw-8bit";
                QVERIFY2(paged == a.changes || paged != b.changes,
                         "a row differs from another only by the paged optimizer");
            }
        }
    }

    // An offload row says how much CPU RAM it needs, before anyone applies it.
    void offloadRowsCarryTheirCpuRam()
    {
        EstimateInput in = lora8b();
        in.training.method = Method::Full;
        in.training.precision = Precision::MixedBf16;
        in.training.micro_batch_size = 1;
        in.training.sequence_length = 1024;
        const auto fits = suggestFits(in, gpuOf(40LL << 30), 100);
        bool offload = false;
        for (const FitSuggestion &s : fits) {
            const MemoryEstimate e = estimateMemory(s.input);
            QCOMPARE(s.cpu_offload_bytes, e.cpu_offload_total);
            if (s.input.training.offload.optimizer) {
                offload = true;
                QVERIFY(s.cpu_offload_bytes > 0);
            }
        }
        QVERIFY(offload);
    }

    // Issue #11: where the caching allocator's fragmentation is what fails the run, expandable
    // segments are offered first (nothing gets slower), and applying them lets the run through.
    // The bundled scenario runs out of memory by fragmentation on an A100 80GB as configured.
    void expandableSegmentsAreOfferedWhereTheyHelp()
    {
        const PresetCatalog &catalog = PresetCatalog::bundled();
        std::string error;
        const auto in = resolveScenario(catalog.findScenario("lora-qwen2.5-7b-32k")->scenario,
                                        catalog,
                                        error);
        QVERIFY2(in, error.c_str());
        const GpuSpec gpu = *catalog.findGpu("a100-80gb");
        const GpuVerdict before = gpuVerdict(*in, gpu.memory_bytes);
        QCOMPARE(before.verdict, FitVerdict::Tight);
        QVERIFY(before.expandable_segments_help);
        const auto fits = suggestFits(*in, gpu, 10);
        QVERIFY(!fits.empty());
        const FitSuggestion &first = fits.front();
        QCOMPARE(first.changes.size(), std::size_t(1));
        QVERIFY2(first.changes.front().find(kExpandableSegmentsConf) != std::string::npos,
                 first.changes.front().c_str());
        QCOMPARE(first.input.overheads.allocator_conf, std::string(kExpandableSegmentsConf));
        QVERIFY(qAbs(first.slowdown - 1.0) < 0.01);
        const GpuVerdict after = gpuVerdict(first.input, gpu.memory_bytes);
        QVERIFY(after.fits); // the expected case runs now
        QCOMPARE(first.verdict, after.verdict);
        // Every other suggestion fits outright.
        for (std::size_t i = 1; i < fits.size(); ++i)
            QCOMPARE(fits[i].verdict, FitVerdict::Fits);
        // With expandable segments already on, they are not offered again.
        EstimateInput on = *in;
        on.overheads.allocator_conf = kExpandableSegmentsConf;
        for (const FitSuggestion &s : suggestFits(on, gpu, 10))
            for (const std::string &c : s.changes)
                QVERIFY(c.find("expandable") == std::string::npos);
    }

    // A scenario that fits by the verdict gets no allocator suggestion; one far over capacity
    // (no fragmentation to blame) does not either.
    void expandableSegmentsAreNotOfferedWhereTheyCannotHelp()
    {
        EstimateInput in = lora8b();
        in.training.method = Method::Full;
        in.training.checkpointing = Checkpointing::None;
        in.training.attention = Attention::Eager;
        for (const FitSuggestion &s : suggestFits(in, gpuOf(40LL << 30), 100))
            for (const std::string &c : s.changes)
                QVERIFY(c.find("expandable") == std::string::npos);
    }

    // Issue #16 item 7: the solver stops at the model's context length.
    void maxSequenceStopsAtTheContextLength()
    {
        EstimateInput in = lora8b();
        in.training.micro_batch_size = 1;
        const std::int64_t free = maxSequenceLength(in, 141LL << 30);
        QVERIFY(free > 8192);
        in.arch.context_length = 8192;
        QCOMPARE(maxSequenceLength(in, 141LL << 30), std::int64_t(8192));
        QCOMPARE(maxSequenceLength(in, 141LL << 30, FitMetric::DeviceTotal, 1000),
                 std::int64_t(1000));
    }
};

QTEST_APPLESS_MAIN(TestFit)
#include "tst_fit.moc"
