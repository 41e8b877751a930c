// SPDX-License-Identifier: GPL-3.0-or-later
// MemBudget's caching-allocator model (core/allocator) against what PyTorch really did: each real
// snapshot's recorded requests, replayed from the start state the trace implies
// (core/snapshot/snapshot_replay), must reserve what the trace measured and create the same
// segments in the same order (docs/accuracy.md, section 3). The 9 snapshots of
// tests/data/snapshots always; all 21 traced ones when ../shared/snapshots is present.
#include "snapshot/snapshot_analysis.h"
#include "snapshot/snapshot_file.h"
#include "snapshot/snapshot_replay.h"

#include "../common/analyzed_snapshot.h"

#include <QtTest>

using namespace membudget;
using namespace membudget::snapshot;

namespace {

QStringList snapshotFiles()
{
    QStringList files;
    QStringList names;
    for (const QString &dir : {QStringLiteral(MEMBUDGET_SOURCE_DIR "/tests/data/snapshots"),
                               QStringLiteral(MEMBUDGET_SOURCE_DIR "/../shared/snapshots")})
        for (const QString &name : QDir(dir).entryList({QStringLiteral("*.pickle")}, QDir::Files))
            if (!names.contains(name)) {
                names << name;
                files << dir + QLatin1Char('/') + name;
            }
    return files;
}

// HugePandaCoder's inference ran into its 24 GB card's limit (17 segment_free, then a
// segment_alloc: PyTorch's release-and-retry); it is replayed with the card's memory less a
// 512 MiB CUDA context. The others reserved less than their card and replay without a limit.
Bytes capacityFor(const QString &file)
{
    return file.contains(QLatin1String("inference2_peso_oct")) ? 24 * kGiB - 512 * kMiB : kBytesMax;
}

std::vector<Bytes> recordedSegmentSizes(const MemorySnapshot &snap, int device, TraceAction a)
{
    std::vector<Bytes> sizes;
    for (const DeviceTrace &t : snap.device_traces)
        if (t.device == device)
            for (const TraceEvent &e : t.events)
                if (e.action == a)
                    sizes.push_back(e.size);
    return sizes;
}

std::vector<Bytes> modelSegmentSizes(const ReplayResult &r, SegmentEventKind kind)
{
    std::vector<Bytes> sizes;
    for (const SegmentEvent &e : r.segment_events)
        if (e.kind == kind)
            sizes.push_back(e.size);
    return sizes;
}

} // namespace

class TestCachingAllocatorSnapshots : public QObject
{
    Q_OBJECT
private slots:
    void replaysLikePyTorch_data()
    {
        QTest::addColumn<QString>("file");
        for (const QString &f : snapshotFiles())
            QTest::newRow(qPrintable(QFileInfo(f).fileName().left(70))) << f;
    }
    void replaysLikePyTorch()
    {
        QFETCH(QString, file);
        const AnalyzedSnapshot l = loadAnalyzedSnapshot(file);
        const MeasuredTimeline &t = l.analysis.timeline;
        if (!t.has_history)
            QSKIP("no allocation history to replay (LfieLike, the torch 2.0 FlexGen snapshot)");
        QVERIFY2(l.analysis.replay, l.analysis.replay_problem.c_str());
        const SnapshotReplay r = replaySnapshot(l.snapshot, *l.analysis.replay, capacityFor(file));
        QVERIFY2(r.ran, r.problem.c_str());
        QVERIFY2(r.result.error.empty(), r.result.error.c_str());
        QVERIFY(r.result.fits);
        QCOMPARE(r.result.replayed, r.requests);
        QCOMPARE(r.requests, t.count(TraceAction::Alloc) + t.count(TraceAction::FreeCompleted));
        QCOMPARE(r.result.stats.reserved.peak, t.peak_reserved);
        QCOMPARE(modelSegmentSizes(r.result, SegmentEventKind::Alloc),
                 recordedSegmentSizes(l.snapshot, t.device, TraceAction::SegmentAlloc));
        QCOMPARE(modelSegmentSizes(r.result, SegmentEventKind::Free).size(),
                 t.count(TraceAction::SegmentFree));
        // The model's rounded blocks hold at least what the program asked for.
        QVERIFY(r.result.stats.allocated.peak >= t.peak_allocated);
    }

    // The fits oracle: 1 byte less than the reserved peak PyTorch reached, and the model runs out.
    void runsOutOfMemoryBelowTheRecordedPeak()
    {
        const QString file = QStringLiteral(MEMBUDGET_SOURCE_DIR
                                            "/../shared/snapshots/HugePandaCoder__octree-nca-"
                                            "groupeq__mem_snapshots--inference2_peso_oct.pickle");
        if (!QFile::exists(file))
            QSKIP("the snapshot collection (../shared/snapshots) is not here");
        const AnalyzedSnapshot l = loadAnalyzedSnapshot(file);
        const SnapshotReplay r = replaySnapshot(l.snapshot,
                                                *l.analysis.replay,
                                                l.analysis.timeline.peak_reserved - 1);
        QVERIFY(r.ran);
        QVERIFY(!r.result.fits);
        QCOMPARE(r.result.failed_at, std::size_t{1393});
        QVERIFY(r.result.oom.has_value());
    }

    void recordedSettingsReachTheModel()
    {
        RecordedAllocatorSettings recorded;
        recorded.max_split_size = 128 * kMiB;
        recorded.expandable_segments = true;
        recorded.garbage_collection_threshold = 0.6;
        recorded.roundup_power2_divisions = {{1, 0}, {256, 4}, {32768, 8}};
        AllocatorSettings model;
        std::string problem;
        QVERIFY2(modelSettings(recorded, model, problem), problem.c_str());
        QCOMPARE(*model.max_split_size, 128 * kMiB);
        QVERIFY(model.expandable_segments);
        QCOMPARE(model.garbage_collection_threshold, 0.6);
        QCOMPARE(model.roundup_power2_divisions[8], 4u);
        QCOMPARE(model.roundup_power2_divisions[15], 8u);
        recorded.roundup_power2_divisions = {{3, 2}};
        QVERIFY(!modelSettings(recorded, model, problem));
        QVERIFY2(problem.find("roundup_power2_divisions entry 3") != std::string::npos,
                 problem.c_str());
        QVERIFY(modelSettings(std::nullopt, model, problem));
        QVERIFY(!model.max_split_size && !model.expandable_segments);
    }
};

QTEST_APPLESS_MAIN(TestCachingAllocatorSnapshots)
#include "tst_caching_allocator_snapshots.moc"
