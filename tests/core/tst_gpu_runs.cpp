// SPDX-License-Identifier: GPL-3.0-or-later
// MemBudget against training steps measured on real GPUs (tests/data/gpu_runs; docs/accuracy.md,
// section 7): one NVIDIA H100 80GB HBM3 (runs.json, 2026-11-27) and one NVIDIA H200 (runs-h200.json,
// 2026-11-29), PyTorch 2.11.0+cu130, tools/measure/gpu_batch.py; Llama-3.2-1B, 3B, Llama-2-7B and 8B
// (Llama-3.1) shaped models (random weights), each step measured by torch.cuda's counters, six with
// their allocator trace. Checked here:
//  - the caching-allocator model, replaying the recorded traces (expandable segments included),
//    reserves what PyTorch did, and fails the request that failed on the device, against the
//    device's capacity;
//  - the estimate's allocated peak within 3% of every completed run's, its reserved peak (the
//    step replayed against the capacity CUDA reported) within 5%;
//  - replayed against the capacity CUDA reported, the step is served exactly when the run
//    completed (known misses listed), and the verdict for the card's preset never calls a
//    completed run "does not fit" nor a run that ran out of memory "fits" (full fine-tunes and
//    LoRA around the cards' capacity; the H100's 3B and every H200 outcome were predicted before
//    the runs, in the plans under tools/measure/cases/gpu/).
#include "advice/gpu_verdict.h"
#include "io/preset_catalog.h"
#include "io/scenario_yaml.h"
#include "model/memory_estimator.h"
#include "model/step_model.h"
#include "snapshot/snapshot_analysis.h"
#include "snapshot/snapshot_file.h"
#include "snapshot/snapshot_replay.h"

#include "../common/analyzed_snapshot.h"

#include <QtTest>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <regex>

using namespace membudget;
using namespace membudget::snapshot;

namespace {

const QString kDir = QStringLiteral(MEMBUDGET_SOURCE_DIR "/tests/data/gpu_runs/");

// What the out-of-memory messages of the runs give as memory outside PyTorch's allocator (in use
// less allocated less reserved-but-unallocated): 0.73 to 0.75 GiB on both cards, but for one
// (0.66 GiB, the H200's LoRA batch 18).
constexpr Bytes kOutsideAllocator = 758 * kMiB;

// A card's runs and the bundled preset of that card.
struct Card
{
    const char *runs;
    const char *preset;
};
constexpr Card kCards[] = {{"runs.json", "h100-80gb"}, {"runs-h200.json", "h200"}};

nlohmann::json runs(const char *file)
{
    std::ifstream in((kDir + QString::fromLatin1(file)).toStdString());
    return nlohmann::json::parse(in);
}

Bytes cudaTotal(const char *file)
{
    return runs(file)["device"]["capacity_bytes"].get<Bytes>();
}

// Runs whose outcome the replay gets wrong, each within a few percent of the capacity:
//  - H100, foreach AdamW at batch 6: the device failed a 5.87 GiB request with 12.77 GiB reserved
//    but unallocated; the model serves it after releasing its cache;
//  - H200, 3B amp batch 23: the replay is served near the 139.06 GiB PyTorch could have; the device
//    failed the fp32 logits with 24 GiB stuck.
bool knownMiss(const std::string &id)
{
    return id == "llama8b-full-foreach-b6" || id == "h200-3b-amp-fused-b23";
}

// The harness's case file with the run's `--set training.KEY=VALUE` and allocator setting applied.
std::optional<EstimateInput> runInput(const nlohmann::json &run, std::string &problem)
{
    std::ifstream in(MEMBUDGET_SOURCE_DIR "/tools/measure/" + run["case"].get<std::string>());
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (const auto &item : run.value("set", nlohmann::json::array())) {
        const std::string set = item.get<std::string>();
        const auto eq = set.find('=');
        const std::string key = set.substr(std::string("training.").size(),
                                           eq - std::string("training.").size());
        const std::regex line("\n  " + key + ": [^\n]*");
        if (!std::regex_search(text, line)) {
            problem = "no training key " + key;
            return std::nullopt;
        }
        text = std::regex_replace(text, line, "\n  " + key + ": " + set.substr(eq + 1));
    }
    const auto env = run.value("env", nlohmann::json::object());
    if (env.contains("PYTORCH_CUDA_ALLOC_CONF"))
        text += "overheads:\n  allocator_conf: \""
                + env["PYTORCH_CUDA_ALLOC_CONF"].get<std::string>() + "\"\n";
    LoadError error;
    const std::optional<Scenario> s = parseScenario(text, run["id"].get<std::string>(), error);
    if (!s) {
        problem = error.toString();
        return std::nullopt;
    }
    return resolveScenario(*s, PresetCatalog::bundled(), problem);
}

bool completed(const nlohmann::json &run)
{
    return run["rc"] == 0;
}

// Measured with transformers 4.48-4.53's SDPA path (repeat_kv and contiguous copies, which the
// estimate of a current stack leaves out) and every layer's activations kept: not comparable.
bool legacyAttentionKept(const nlohmann::json &run)
{
    const auto &r = run["result"];
    return r.value("hf_sdpa", std::string("legacy")) == "legacy"
           && r["scenario"]["training"]["gradient_checkpointing"] == "none";
}

double gib(double bytes)
{
    return bytes / static_cast<double>(kGiB);
}

} // namespace

class TestGpuRuns : public QObject
{
    Q_OBJECT
private slots:
    void tracesReplayLikePyTorch_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("capacityOf"); // the card's runs, when its capacity mattered
        for (const char *f : {"llama1b-bf16-full-current.pickle",
                              "llama1b-ampbf16-ckpt.pickle",
                              "llama8b-full-fused-b8-oom.pickle",
                              "h200-8b-fused-b21-oom.pickle",
                              "h200-8b-fused-b9-expandable.pickle"})
            QTest::newRow(f) << QString::fromLatin1(f) << QString();
        // Recorded from an empty allocator with expandable segments; the run released pages once
        // to serve the fp32 logits (18 unmaps), so it is replayed against the same capacity.
        QTest::newRow("h200-8b-fused-b26-expandable.pickle")
            << "h200-8b-fused-b26-expandable.pickle"
            << "runs-h200.json";
    }
    void tracesReplayLikePyTorch()
    {
        QFETCH(QString, file);
        QFETCH(QString, capacityOf);
        const AnalyzedSnapshot l = loadAnalyzedSnapshot(kDir + file);
        QVERIFY2(l.analysis.replay, l.analysis.replay_problem.c_str());
        const Bytes capacity = capacityOf.isEmpty()
                                   ? kBytesMax
                                   : cudaTotal(qPrintable(capacityOf)) - kOutsideAllocator;
        const SnapshotReplay r = replaySnapshot(l.snapshot, *l.analysis.replay, capacity);
        QVERIFY2(r.ran, r.problem.c_str());
        QVERIFY(r.result.fits);
        QCOMPARE(r.result.stats.reserved.peak, l.analysis.timeline.peak_reserved);
        // With expandable segments (recorded from an empty allocator) each mapping of pages.
        const auto &tl = l.analysis.timeline;
        QCOMPARE(r.result.stats.device_allocations,
                 static_cast<std::int64_t>(tl.count(TraceAction::SegmentAlloc)
                                           + tl.count(TraceAction::SegmentMap)));
    }

    // Runs that failed in their second step's loss, against what CUDA gave PyTorch:
    //  - H100, 8B fused AdamW, batch 8: "Tried to allocate 7.83 GiB ... 61.18 GiB is allocated by
    //    PyTorch, and 10.68 GiB is reserved by PyTorch but unallocated";
    //  - H200, the same at batch 21: "Tried to allocate 20.55 GiB ... 97.85 GiB is allocated by
    //    PyTorch, and 26.97 GiB is reserved by PyTorch but unallocated".
    // The model fails there too, with as much stuck in partly used segments.
    void failsWhereTheDeviceFailed_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("runs");
        QTest::addColumn<qint64>("batch");
        QTest::addColumn<double>("stuckGiB");
        QTest::newRow("H100 batch 8") << "llama8b-full-fused-b8-oom.pickle"
                                      << "runs.json" << qint64(8) << 10.68;
        QTest::newRow("H200 batch 21") << "h200-8b-fused-b21-oom.pickle"
                                       << "runs-h200.json" << qint64(21) << 26.97;
    }
    void failsWhereTheDeviceFailed()
    {
        QFETCH(QString, file);
        QFETCH(QString, runs);
        QFETCH(qint64, batch);
        QFETCH(double, stuckGiB);
        const AnalyzedSnapshot l = loadAnalyzedSnapshot(kDir + file);
        const SnapshotReplay r = replaySnapshot(l.snapshot,
                                                *l.analysis.replay,
                                                cudaTotal(qPrintable(runs)) - kOutsideAllocator,
                                                /*attemptOoms=*/true);
        QVERIFY2(r.ran, r.problem.c_str());
        QCOMPARE(r.attempted_ooms, std::size_t{1});
        QVERIFY(!r.result.fits);
        // The request that failed is the one the device failed (the trace's oom event): as many
        // allocations and completed frees come before it.
        std::size_t before = 0;
        for (const AllocationRequest &q : l.analysis.replay->requests) {
            if (q.kind == RequestKind::Oom)
                break;
            before += q.kind == RequestKind::Alloc || q.kind == RequestKind::FreeCompleted ? 1 : 0;
        }
        QCOMPARE(r.result.failed_at, before);
        QVERIFY(r.result.oom.has_value());
        QCOMPARE(r.result.oom->requested, Bytes{batch * 2048 * 128256 * 4}); // fp32 logits
        const double stuck = gib(static_cast<double>(r.result.oom->cached_unusable));
        QVERIFY2(qAbs(stuck / stuckGiB - 1) < 0.02, qPrintable(QString::number(stuck)));
        // Without the capacity the same trace replays to the end.
        QVERIFY(replaySnapshot(l.snapshot, *l.analysis.replay).result.fits);
    }

    void estimatesOfCompletedRuns_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("index");
        for (const Card &card : kCards) {
            const nlohmann::json all = runs(card.runs);
            const nlohmann::json &list = all["runs"];
            for (std::size_t i = 0; i < list.size(); ++i)
                if (completed(list[i]) && !legacyAttentionKept(list[i]))
                    QTest::newRow(list[i]["id"].get<std::string>().c_str())
                        << QString::fromLatin1(card.runs) << static_cast<int>(i);
        }
    }
    void estimatesOfCompletedRuns()
    {
        QFETCH(QString, file);
        QFETCH(int, index);
        const nlohmann::json all = runs(qPrintable(file));
        const nlohmann::json run = all["runs"][static_cast<std::size_t>(index)];
        std::string problem;
        const std::optional<EstimateInput> in = runInput(run, problem);
        QVERIFY2(in.has_value(), problem.c_str());
        const StepModel model(*in);
        const MemoryEstimate est = model.estimate();
        const auto &measured = run["result"]["memory"];
        const double allocated = measured["peak_bytes"].get<double>();
        const double reserved = measured["peak_reserved_bytes"].get<double>();
        // The device capped what PyTorch reserved (it freed its cache and retried where needed):
        // the step is replayed against the same capacity.
        const Bytes capacity = cudaTotal(qPrintable(file)) - kOutsideAllocator;
        const StepReplay replay = model.replay(in->training.micro_batch_size,
                                               in->training.sequence_length,
                                               model.allocatorSettings(capacity));
        QVERIFY(replay.fits);
        const double estAllocated = static_cast<double>(est.peak_allocated);
        const double estReserved = static_cast<double>(replay.peak_reserved);
        qInfo("%-30s allocated %6.2f / %6.2f GiB (%+.1f%%), reserved %6.2f / %6.2f GiB (%+.1f%%)",
              run["id"].get<std::string>().c_str(),
              gib(estAllocated),
              gib(allocated),
              100 * (estAllocated / allocated - 1),
              gib(estReserved),
              gib(reserved),
              100 * (estReserved / reserved - 1));
        QVERIFY(qAbs(estAllocated / allocated - 1) < 0.03);
        QVERIFY(qAbs(estReserved / reserved - 1) < 0.05);
    }

    // Replayed against what CUDA gave PyTorch (its total less what lives outside the allocator),
    // the step is served exactly when the run completed, but for the known misses (knownMiss).
    void replayOutcomeOfAllRuns_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("misses");
        QTest::newRow("H100") << "runs.json" << 1;
        QTest::newRow("H200") << "runs-h200.json" << 1;
    }
    void replayOutcomeOfAllRuns()
    {
        QFETCH(QString, file);
        QFETCH(int, misses);
        const nlohmann::json all = runs(qPrintable(file));
        const Bytes capacity = cudaTotal(qPrintable(file)) - kOutsideAllocator;
        int right = 0, total = 0;
        for (const nlohmann::json &run : all["runs"]) {
            if (run["rc"] != 0 && run["rc"] != 5)
                continue;
            std::string problem;
            const std::optional<EstimateInput> in = runInput(run, problem);
            QVERIFY2(in.has_value(), problem.c_str());
            const StepModel model(*in);
            const StepReplay r = model.replay(in->training.micro_batch_size,
                                              in->training.sequence_length,
                                              model.allocatorSettings(capacity));
            const std::string id = run["id"].get<std::string>();
            const bool ok = r.fits == completed(run);
            qInfo("%-30s %-9s replay %-6s %s",
                  id.c_str(),
                  completed(run) ? "completed" : "oom",
                  r.fits ? "served" : "fails",
                  ok ? "right" : (knownMiss(id) ? "known miss" : "WRONG"));
            if (!knownMiss(id))
                QVERIFY2(ok, id.c_str());
            right += ok ? 1 : 0;
            ++total;
        }
        QCOMPARE(right, total - misses);
    }

    // A bundled card's capacity is the total CUDA reported on the measured card (rounded down to
    // a MiB), not nvidia-smi's 81,559 / 143,771 MiB.
    void presetCapacityIsTheMeasuredOne_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("preset");
        QTest::addColumn<qint64>("smiMiB");
        QTest::newRow("H100") << "runs.json"
                              << "h100-80gb" << qint64(81559);
        QTest::newRow("H200") << "runs-h200.json"
                              << "h200" << qint64(143771);
    }
    void presetCapacityIsTheMeasuredOne()
    {
        QFETCH(QString, file);
        QFETCH(QString, preset);
        QFETCH(qint64, smiMiB);
        const GpuSpec *gpu = PresetCatalog::bundled().findGpu(preset.toStdString());
        QVERIFY(gpu);
        QVERIFY(gpu->cudaTotalKnown());
        const Bytes total = cudaTotal(qPrintable(file));
        QVERIFY(gpu->memory_bytes <= total);
        QVERIFY(total - gpu->memory_bytes < kMiB);
        QCOMPARE(gpu->driver_total_bytes, smiMiB * kMiB);
    }

    // The verdict for the card's preset: never "does not fit" for a run that completed, never
    // "fits" for one that ran out of memory (tight covers both).
    void verdictsOfAllRuns_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("preset");
        for (const Card &card : kCards)
            QTest::newRow(card.preset) << card.runs << card.preset;
    }
    void verdictsOfAllRuns()
    {
        QFETCH(QString, file);
        QFETCH(QString, preset);
        const GpuSpec *gpu = PresetCatalog::bundled().findGpu(preset.toStdString());
        QVERIFY(gpu);
        int right = 0, total = 0;
        const nlohmann::json all = runs(qPrintable(file));
        for (const nlohmann::json &run : all["runs"]) {
            if (run["rc"] != 0 && run["rc"] != 5)
                continue; // skipped or failed for another reason
            std::string problem;
            const std::optional<EstimateInput> in = runInput(run, problem);
            QVERIFY2(in.has_value(), problem.c_str());
            const GpuVerdict v = gpuVerdict(*in, gpu->memory_bytes);
            const bool ok = completed(run) ? v.verdict != FitVerdict::DoesNotFit
                                           : v.verdict != FitVerdict::Fits;
            qInfo("%-30s %-9s %-12s %s",
                  run["id"].get<std::string>().c_str(),
                  completed(run) ? "completed" : "oom",
                  verdictKey(v.verdict),
                  ok ? "right" : "WRONG");
            right += ok ? 1 : 0;
            ++total;
        }
        QCOMPARE(right, total);
        QVERIFY(total >= 20);
    }
};

QTEST_APPLESS_MAIN(TestGpuRuns)
#include "tst_gpu_runs.moc"
