// SPDX-License-Identifier: GPL-3.0-or-later
// Real PyTorch memory snapshots read into the typed model, measured, and checked against the
// figures of the project's snapshot collection (index.json: peaks, baselines, event counts, whether
// recording began with an empty allocator). The 9 snapshots in tests/data/snapshots are always
// checked; all 23 when the collection is present (../shared/snapshots beside the source tree, or
// $MEMBUDGET_SNAPSHOT_DIR).
#include "snapshot/frame_table.h"
#include "snapshot/snapshot_analysis.h"
#include "snapshot/snapshot_file.h"
#include "snapshot/snapshot_json.h"

#include <QtTest>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <numeric>

using namespace membudget;
using namespace membudget::snapshot;

namespace {

QString copiedDir()
{
    return QStringLiteral(MEMBUDGET_SOURCE_DIR "/tests/data/snapshots");
}

QString sharedDir()
{
    const QString env = qEnvironmentVariable("MEMBUDGET_SNAPSHOT_DIR");
    return env.isEmpty() ? QStringLiteral(MEMBUDGET_SOURCE_DIR "/../shared/snapshots") : env;
}

// The collection's index: the shared one when present, else the copy beside the test data.
nlohmann::json loadIndex()
{
    for (const QString &dir : {sharedDir(), copiedDir()}) {
        std::ifstream in((dir + QStringLiteral("/index.json")).toStdString());
        if (in)
            return nlohmann::json::parse(in);
    }
    return {};
}

QString findSnapshot(const QString &name)
{
    for (const QString &dir : {copiedDir(), sharedDir()})
        if (QFile::exists(dir + QLatin1Char('/') + name))
            return dir + QLatin1Char('/') + name;
    return {};
}

MemorySnapshot load(const QString &name)
{
    const QString path = findSnapshot(name);
    LoadError error;
    auto snap = loadMemorySnapshotFile(path.toStdString(), error);
    if (!snap)
        qFatal("%s", error.toString().c_str());
    return std::move(*snap);
}

SnapshotAnalysis analyze(const MemorySnapshot &snap, std::size_t top = 0)
{
    SnapshotAnalysis a;
    std::string problem;
    if (!analyzeSnapshot(snap, -1, top, a, problem))
        qFatal("%s", problem.c_str());
    return a;
}

Bytes sumOfSites(const std::vector<AllocationSite> &sites)
{
    return std::accumulate(sites.begin(),
                           sites.end(),
                           Bytes{0},
                           [](Bytes s, const AllocationSite &x) { return s + x.bytes; });
}

const char *kZidong = "ZidongLiu__DeComFL__memory.pickle";
const char *kYiyi = "Yiyi-philosophy__LLM-inference__oom_snapshot.pickle";
const char *kLfie = "LfieLike__SketchKV2__my_snapshot.pickle";
const char *kMagma = "MAGMA27__assignment2-systems__memory_snapshot.pickle";
const char *kSilmont = "silmont2000__assignment2-systems__mem_snapshot.pickle";
const char *kSilmontFp32 = "silmont2000__assignment2-systems__memory_forward_fp32_128.pickle";
const char *kPanda = "HugePandaCoder__octree-nca-groupeq__my_snapshot@2024-11-09_300688c.pickle";

} // namespace

class TestMemorySnapshot : public QObject
{
    Q_OBJECT
private:
    nlohmann::json m_index;

private slots:
    void initTestCase()
    {
        m_index = loadIndex();
        QVERIFY2(m_index.contains("files"), "no index.json in tests/data/snapshots");
    }

    // Every file of the index that is here: the measured figures are the index's, exactly.
    void matchesTheCollectionIndex_data()
    {
        QTest::addColumn<QString>("name");
        int rows = 0;
        for (const auto &f : m_index["files"]) {
            const QString name = QString::fromStdString(f["file"].get<std::string>());
            if (findSnapshot(name).isEmpty())
                continue;
            QTest::newRow(qPrintable(name.left(70))) << name;
            ++rows;
        }
        QVERIFY(rows >= 9);
    }
    void matchesTheCollectionIndex()
    {
        QFETCH(QString, name);
        const auto entry = *std::find_if(m_index["files"].begin(),
                                         m_index["files"].end(),
                                         [&](const nlohmann::json &f) {
                                             return f["file"] == name.toStdString();
                                         });
        const MemorySnapshot snap = load(name);
        const SnapshotAnalysis a = analyze(snap);
        const MeasuredTimeline &t = a.timeline;
        QCOMPARE(t.events, entry["num_events"].get<std::size_t>());
        for (const auto &[action, n] : entry["events"].items()) {
            std::size_t counted = 0;
            for (std::size_t i = 0; i < t.action_counts.size(); ++i)
                if (action == traceActionName(static_cast<TraceAction>(i)))
                    counted = t.action_counts[i];
            QCOMPARE(counted, n.get<std::size_t>());
        }
        QCOMPARE(t.reserved_at_snapshot, entry["reserved_at_snapshot"].get<Bytes>());
        QCOMPARE(t.allocated_at_snapshot, entry["allocated_at_snapshot"].get<Bytes>());
        QCOMPARE(snap.allocator_settings.has_value(),
                 entry.contains("allocator_settings") && !entry["allocator_settings"].is_null());
        if (snap.allocator_settings)
            QCOMPARE(snap.allocator_settings->expandable_segments,
                     entry["expandable_segments"].get<bool>());
        if (entry["peak_allocated"].is_null()) {
            // No history: only the state when taken (LfieLike: one free_completed event; the
            // torch 2.0 FlexGen file: one "snapshot" event).
            QVERIFY(!t.has_history);
            QCOMPARE(sumOfSites(a.top_sites), t.requested_at_snapshot);
            return;
        }
        QVERIFY(t.has_history);
        QCOMPARE(t.peak_allocated, entry["peak_allocated"].get<Bytes>());
        QCOMPARE(t.peak_reserved, entry["peak_reserved"].get<Bytes>());
        QCOMPARE(t.reserved_at_start, entry["baseline_reserved_at_trace_start"].get<Bytes>());
        QCOMPARE(t.recorded_from_allocator_start,
                 entry["recorded_from_allocator_start"].get<bool>());
        // The curves hold the peaks.
        QCOMPARE(t.allocated.size(), t.events);
        QCOMPARE(std::max(t.allocated_at_start,
                          *std::max_element(t.allocated.begin(), t.allocated.end())),
                 t.peak_allocated);
        QCOMPARE(std::max(t.reserved_at_start,
                          *std::max_element(t.reserved.begin(), t.reserved.end())),
                 t.peak_reserved);
        // Two independent reconstructions agree: the allocations live at the peak (paired
        // alloc/free plus the blocks older than the trace) add up to the measured peak, and the
        // blocks live at the start to the baseline.
        QCOMPARE(sumOfSites(a.top_sites), t.peak_allocated);
        QCOMPARE(sumOfSites(liveAllocationSites(snap, a.history, kAtTraceStart, 0)),
                 t.allocated_at_start);
        // The allocator's state at the start, as the replay input gives it.
        QVERIFY2(a.replay, a.replay_problem.c_str());
        QCOMPARE(a.replay->start.reserved, t.reserved_at_start);
        QCOMPARE(a.replay->start.allocated, t.allocated_at_start);
        QCOMPARE(a.replay->requests.size(),
                 t.count(TraceAction::Alloc) + t.count(TraceAction::FreeRequested)
                     + t.count(TraceAction::FreeCompleted) + t.count(TraceAction::Oom));
    }

    // All 23 of the collection are read when it is present (21 with a trace, 2 without).
    void wholeCollectionIsRead()
    {
        if (!QFile::exists(sharedDir() + QStringLiteral("/index.json")))
            QSKIP(
                "the snapshot collection (../shared/snapshots) is not here; 9 copies are checked");
        int found = 0;
        for (const auto &f : m_index["files"])
            found += findSnapshot(QString::fromStdString(f["file"].get<std::string>())).isEmpty()
                         ? 0
                         : 1;
        QCOMPARE(found, 23);
    }

    void recordedFromAnEmptyAllocator()
    {
        const MemorySnapshot snap = load(QLatin1String(kZidong));
        const SnapshotAnalysis a = analyze(snap, 5);
        QVERIFY(a.timeline.recorded_from_allocator_start);
        QCOMPARE(a.timeline.allocated_at_start, Bytes{0});
        QCOMPARE(a.replay->start.segments.size(), std::size_t{0});
        QCOMPARE(a.timeline.count(TraceAction::SegmentAlloc), std::size_t{61});
        QCOMPARE(a.timeline.peak_allocated_event, std::int64_t{11205});
        QCOMPARE(a.timeline.peak_reserved_event, std::int64_t{11204});
        // The largest site at the peak: the model moved to the GPU (transformers' Module.to).
        QCOMPARE(a.top_sites.size(), std::size_t{5});
        QCOMPARE(a.top_sites[0].kind, SiteKind::UserFrame);
        QCOMPARE(a.top_sites[0].bytes, Bytes{500957184});
        const Frame &f = snap.frames.frame(a.top_sites[0].frame);
        QVERIFY(snap.frames.text(f.file).ends_with("modeling_utils.py"));
        QCOMPARE(f.line, std::int64_t{4343});
        QCOMPARE(std::string(snap.frames.text(f.name)), std::string("to"));
        const auto seconds = secondsIntoTrace(snap, a.timeline, a.timeline.peak_allocated_event);
        QVERIFY(seconds && *seconds > 1.62 && *seconds < 1.63);
    }

    // A snapshot whose trace never changes the segments: the start state is the final segments,
    // holding the blocks that were live before the trace.
    void startStateWithoutSegmentEvents()
    {
        const MemorySnapshot snap = load(QLatin1String(kSilmontFp32));
        const SnapshotAnalysis a = analyze(snap);
        QCOMPARE(a.replay->start.segments.size(), snap.segments.size());
        std::size_t live = 0;
        for (const StartSegment &s : a.replay->start.segments) {
            QVERIFY(s.pool_known);
            for (const StartBlock &b : s.live_blocks) {
                QVERIFY(b.address >= s.address
                        && b.address + b.requested_size <= s.address + s.size);
                QVERIFY(b.block_size >= b.requested_size); // these blocks are still in the snapshot
            }
            live += s.live_blocks.size();
        }
        QCOMPARE(live, std::size_t{137});
        QCOMPARE(a.timeline.allocated_at_start, Bytes{523811840});
    }

    // torch 2.0: blocks without addresses, laid end to end; each live block's stack from its
    // history. FlexGen's OOM snapshot: 11.84 GB allocated by one line of FlexGen.
    void legacyLayout()
    {
        const MemorySnapshot snap = load(QLatin1String(kYiyi));
        QCOMPARE(snap.layout, SnapshotLayout::Legacy);
        QCOMPARE(snap.segments.size(), std::size_t{176});
        QVERIFY(!snap.allocator_settings);
        std::size_t live = 0;
        for (const Segment &s : snap.segments) {
            std::int64_t next = s.address;
            for (const Block &b : s.blocks) {
                QCOMPARE(b.address, next);
                next += b.size;
                if (b.state == BlockState::ActiveAllocated) {
                    ++live;
                    QVERIFY(b.stack != kEmptyStack);
                }
            }
            QCOMPARE(next, s.address + s.total_size);
        }
        QCOMPARE(live, std::size_t{460});
        const SnapshotAnalysis a = analyze(snap);
        QVERIFY(!a.timeline.has_history);
        QCOMPARE(a.timeline.requested_at_snapshot, Bytes{11840159744});
        QCOMPARE(a.top_sites.size(), std::size_t{1});
        QCOMPARE(QString::fromStdString(siteText(snap, a.top_sites[0], false)),
                 QStringLiteral("flexgen/pytorch_backend.py:190 in allocate"));
    }

    void snapshotWithoutHistory()
    {
        const MemorySnapshot snap = load(QLatin1String(kLfie));
        const SnapshotAnalysis a = analyze(snap, 3);
        QVERIFY(!a.timeline.has_history);
        QCOMPARE(a.timeline.events, std::size_t{1});
        const nlohmann::json j = snapshotToJson("x", snap, a);
        QVERIFY(j["measured"]["peak_allocated"].is_null());
        QCOMPARE(j["measured"]["allocated_at_snapshot"].get<Bytes>(),
                 a.timeline.allocated_at_snapshot);
        QCOMPARE(j["top_allocations_at"], "snapshot");
        QCOMPARE(j["top_allocations"].size(), std::size_t{3});
    }

    // A "snapshot" event in the middle of a trace (taken, then recording went on) changes nothing.
    void snapshotEventMidTrace()
    {
        const MemorySnapshot snap = load(QLatin1String(kPanda));
        const SnapshotAnalysis a = analyze(snap);
        QCOMPARE(a.timeline.count(TraceAction::Snapshot), std::size_t{1});
        QCOMPARE(a.timeline.peak_allocated, Bytes{5692437840});
    }

    // Stacks are interned: thousands of events share a few dozen frames; the top user frame skips
    // torch's own Python (Windows paths from this MAGMA27 snapshot).
    void framesAreInterned()
    {
        const MemorySnapshot snap = load(QLatin1String(kMagma));
        QCOMPARE(snap.eventCount(), std::size_t{5163});
        QVERIFY2(snap.frames.frameCount() < 100,
                 qPrintable(QString::number(snap.frames.frameCount())));
        QVERIFY(snap.frames.stackCount() < 100);
        std::size_t userTops = 0;
        for (const TraceEvent &e : snap.device_traces[0].events) {
            const auto top = snap.frames.topUserFrame(e.stack);
            if (!top)
                continue;
            ++userTops;
            const std::string_view file = snap.frames.text(snap.frames.frame(*top).file);
            QVERIFY(file.find("\\torch\\") == std::string_view::npos);
            QVERIFY(file.ends_with(".py"));
        }
        QVERIFY(userTops > 1000);
    }

    void frameRules_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<bool>("python");
        QTest::addColumn<bool>("torch");
        QTest::newRow("user") << "/home/u/proj/train.py" << true << false;
        QTest::newRow("site-packages torch")
            << "/x/.venv/lib/python3.12/site-packages/torch/nn/modules/module.py" << true << true;
        QTest::newRow("windows torch")
            << "D:\\a\\.venv\\Lib\\site-packages\\torch\\functional.py" << true << true;
        QTest::newRow("source checkout") << "/src/pytorch/torch/_tensor.py" << true << true;
        QTest::newRow("a file named torch.py") << "/home/u/torch.py" << true << false;
        QTest::newRow("torchvision") << "/x/site-packages/torchvision/ops.py" << true << false;
        QTest::newRow("C++") << "CUDACachingAllocator.cpp" << false << false;
        QTest::newRow("unknown") << "??" << false << false;
        QTest::newRow("empty") << "" << false << false;
        QTest::newRow("fx generated") << "<eval_with_key>.3" << true << false;
        QTest::newRow("frozen") << "<frozen runpy>" << false << false;
    }
    void frameRules()
    {
        QFETCH(QString, file);
        QFETCH(bool, python);
        QFETCH(bool, torch);
        QCOMPARE(FrameTable::isPythonFile(file.toStdString()), python);
        QCOMPARE(FrameTable::isTorchInternal(file.toStdString()), torch);
    }

    void frameTableInterns()
    {
        FrameTable t;
        const FrameId a = t.internFrame("a.py", 1, "f");
        const FrameId b = t.internFrame("/x/torch/nn/m.py", 2, "g");
        QCOMPARE(t.internFrame("a.py", 1, "f"), a);
        QVERIFY(t.internFrame("a.py", 2, "f") != a);
        const std::vector<FrameId> s1{b, a};
        const StackId id = t.internStack(s1);
        QCOMPARE(t.internStack(s1), id);
        QCOMPARE(t.stack(id).size(), std::size_t{2});
        QCOMPARE(*t.topUserFrame(id), a); // the torch frame above it is skipped
        QVERIFY(!t.topUserFrame(t.internStack(std::vector<FrameId>{b})));
        QVERIFY(!t.topUserFrame(kEmptyStack));
    }

    void jsonShape()
    {
        const MemorySnapshot snap = load(QLatin1String(kSilmont));
        const SnapshotAnalysis a = analyze(snap, 10);
        const nlohmann::json j = snapshotToJson("f.pickle", snap, a);
        QCOMPARE(j["format"], "membudget/1");
        QCOMPARE(j["measured"]["peak_allocated"].get<Bytes>(), Bytes{3249143816});
        QCOMPARE(j["measured"]["peak_reserved"].get<Bytes>(), Bytes{3781165056});
        QCOMPARE(j["measured"]["baseline_allocated"].get<Bytes>(), Bytes{0});
        QCOMPARE(j["measured"]["events"].get<std::size_t>(), std::size_t{97});
        QCOMPARE(j["measured"]["recorded_from_allocator_start"], true);
        QCOMPARE(j["segments"]["count"].get<std::size_t>(), std::size_t{9});
        QCOMPARE(j["segments"]["reserved"].get<Bytes>(), Bytes{3781165056});
        Bytes sum = 0;
        for (const auto &site : j["top_allocations"])
            sum += site["bytes"].get<Bytes>();
        QCOMPARE(sum, Bytes{3249143816});
        QCOMPARE(j["allocator_settings"]["expandable_segments"], false);
    }

    void fileSizeLimit()
    {
        std::string bytes;
        LoadError error;
        const std::string path = findSnapshot(QLatin1String(kSilmont)).toStdString();
        QVERIFY(!readSnapshotBytes(path, bytes, error, 1000));
        QCOMPARE(error.offset, std::int64_t{0});
        QVERIFY2(error.message.find("limit") != std::string::npos, error.message.c_str());
        QVERIFY(bytes.empty());
        QVERIFY(readSnapshotBytes(path, bytes, error, 72171));
        QCOMPARE(bytes.size(), std::size_t{72171});
    }

    // The error form of the conversion: the dict's byte offset and where it sits in the snapshot.
    void conversionErrorsNameTheEntry()
    {
        LoadError error;
        const QString path = QStringLiteral(MEMBUDGET_SOURCE_DIR
                                            "/tests/data/bad/snapshot-shared-event.pickle");
        QVERIFY(!loadMemorySnapshotFile(path.toStdString(), error));
        QCOMPARE(QString::fromStdString(error.toString()),
                 path
                     + QStringLiteral(": offset 212: trace event 1 of device 0: the same dict "
                                      "appears twice as a trace event; a memory snapshot never "
                                      "repeats one"));
    }
};

QTEST_APPLESS_MAIN(TestMemorySnapshot)
#include "tst_memory_snapshot.moc"
