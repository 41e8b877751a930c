// SPDX-License-Identifier: GPL-3.0-or-later
// Core speed: one estimate, the fit solvers, a sweep curve, a scenario parse (issue: performance),
// and a caching-allocator replay of a 10,000-request training step (the fits oracle).
// Run: build/tests/bench/bench_core -median 11   (QBENCHMARK reports per-iteration times)
#include "advice/fit_advisor.h"
#include "advice/fit_solver.h"
#include "allocator/allocator_replay.h"
#include "io/preset_catalog.h"
#include "io/scenario_yaml.h"
#include "model/memory_estimator.h"
#include "throughput/throughput_model.h"

#include "bench_common.h"

#include <QtTest>

using namespace membudget;

namespace {

// The allocation sequence of a transformer training step, shaped like what autograd does (4096
// tokens, hidden 4096, MLP 14336, bf16): per layer the forward saves its activations and drops
// its transients, the backward frees them in reverse while gradients come and go. Cut at
// `count` requests.
std::vector<AllocatorRequest> trainingStepRequests(std::size_t count)
{
    std::vector<AllocatorRequest> out;
    std::int64_t next = 0;
    std::vector<std::vector<std::int64_t>> saved;
    auto alloc = [&](Bytes size) {
        out.push_back({AllocatorRequest::Kind::Alloc, 0, next, size});
        return next++;
    };
    auto release = [&](std::int64_t id) {
        out.push_back({AllocatorRequest::Kind::Free, 0, id, 0});
    };
    const Bytes hidden = 4096LL * 4096 * 2, mlp = 4096LL * 14336 * 2, rows = 4096LL * 4;
    const Bytes kv = 4096LL * 1024 * 2;
    while (out.size() < count) {
        for (int layer = 0; layer < 32; ++layer) {
            std::vector<std::int64_t> keep;
            for (Bytes size :
                 {hidden, rows, hidden, kv, kv, hidden, rows, hidden, rows, mlp, mlp, mlp})
                keep.push_back(alloc(size));
            release(alloc(hidden)); // attention projection before the residual add
            keep.push_back(alloc(hidden));
            release(alloc(hidden)); // MLP down projection
            keep.push_back(alloc(hidden));
            saved.push_back(keep);
        }
        const std::int64_t logits = alloc(4096LL * 32000 * 4);
        std::int64_t grad = alloc(hidden);
        release(logits);
        while (!saved.empty()) {
            const std::int64_t mlpGrad = alloc(mlp);
            const std::int64_t gateGrad = alloc(mlp);
            release(mlpGrad);
            for (auto it = saved.back().rbegin(); it != saved.back().rend(); ++it)
                release(*it);
            const std::int64_t input = alloc(hidden);
            release(gateGrad);
            release(grad);
            grad = input;
            saved.pop_back();
        }
        release(grad);
    }
    out.resize(count);
    // Cutting may leave frees of allocations beyond the cut: drop them.
    std::vector<bool> allocated(static_cast<std::size_t>(next), false);
    std::vector<AllocatorRequest> valid;
    for (const AllocatorRequest &r : out) {
        if (r.kind == AllocatorRequest::Kind::Alloc)
            allocated[static_cast<std::size_t>(r.id)] = true;
        if (r.kind == AllocatorRequest::Kind::Alloc || allocated[static_cast<std::size_t>(r.id)])
            valid.push_back(r);
    }
    return valid;
}

} // namespace

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

    // The fits oracle replays a step's timeline on every estimate; target well under 1 ms.
    void allocatorReplay10kRequests()
    {
        const std::vector<AllocatorRequest> requests = trainingStepRequests(10000);
        QCOMPARE(requests.size(), std::size_t(10000));
        AllocatorSettings settings;
        Bytes sink = 0;
        QBENCHMARK
        {
            const ReplayResult r = replayAllocations(requests, settings);
            sink += r.stats.reserved.peak;
        }
        QVERIFY(sink > 0);
    }

    // The same as thread CPU time over 300 replays (the machine is shared: wall clock also counts
    // time spent waiting for a core).
    void allocatorReplayCpuTime()
    {
        const std::vector<AllocatorRequest> requests = trainingStepRequests(10000);
        for (const bool expandable : {false, true}) {
            AllocatorSettings settings;
            settings.expandable_segments = expandable;
            std::vector<double> ms;
            for (int i = 0; i < 300; ++i) {
                const long long start = bench::threadCpuNs();
                const ReplayResult r = replayAllocations(requests, settings);
                ms.push_back(static_cast<double>(bench::threadCpuNs() - start) / 1e6);
                QVERIFY(r.fits && r.replayed == requests.size());
            }
            bench::printSummary(expandable ? "allocator replay 10k, expandable"
                                           : "allocator replay 10k",
                                bench::summarize(ms),
                                "ms CPU",
                                1.0);
        }
    }

    void allocatorReplay10kRequestsExpandable()
    {
        const std::vector<AllocatorRequest> requests = trainingStepRequests(10000);
        AllocatorSettings settings;
        settings.expandable_segments = true;
        Bytes sink = 0;
        QBENCHMARK
        {
            sink += replayAllocations(requests, settings).stats.reserved.peak;
        }
        QVERIFY(sink > 0);
    }

    // The throughput model on one GPU (the verdict panel runs it once per selected GPU per change).
    void oneThroughputEstimate()
    {
        const GpuPerformance &gpu = PresetCatalog::bundled().findGpu("a100-80gb")->performance;
        double sink = 0;
        QBENCHMARK
        {
            sink += estimateThroughput(m_input, gpu).step_seconds;
        }
        QVERIFY(sink > 0);
    }

    // "Make it fit" on a 24 GB card: every fitting combination is timed by the throughput model.
    void suggestFits24GB()
    {
        const GpuSpec &gpu = *PresetCatalog::bundled().findGpu("rtx-4090");
        std::size_t n = 0;
        QBENCHMARK
        {
            n = suggestFits(m_input, gpu, 10).size();
        }
        QVERIFY(n > 0);
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

    // A user preset file of 1 MiB (35,000 GPUs): parse and insert. Inserting by scanning every id
    // made three such files cost tens of seconds (issue 15); indexed, reading is what it costs.
    void userPresetFileOf1MiB()
    {
        std::string text = "format: membudget-presets/1\ngpus:\n";
        for (int i = 0; text.size() < 1000 * 1000; ++i)
            text += "- {id: a" + std::to_string(i) + ", memory_gib: 1}\n";
        std::size_t count = 0;
        QBENCHMARK
        {
            PresetCatalog catalog = PresetCatalog::bundled();
            LoadError error;
            QVERIFY2(catalog.addFile("gpus.yaml", text, error), error.toString().c_str());
            count = catalog.gpus().size();
        }
        QVERIFY(count > 30000);
    }
};

QTEST_APPLESS_MAIN(BenchCore)
#include "bench_core.moc"
