// SPDX-License-Identifier: GPL-3.0-or-later
// Memory-snapshot speed: the restricted pickle parse, the typed model, the analysis (timeline,
// allocation lifetimes, peak sites, replay input) and the caching-allocator model's replay, on
// real snapshots of 2 to 3.9 MB. Target: a
// 4 MB snapshot read in well under 100 ms (docs/performance.md).
// Run: build/tests/bench/bench_snapshot -median 11
#include "bench_common.h"
#include "snapshot/snapshot_analysis.h"
#include "snapshot/snapshot_file.h"
#include "snapshot/snapshot_replay.h"

#include <QtTest>

using namespace membudget;
using namespace membudget::snapshot;

namespace {

// The largest copy in the tests, and the two largest of the collection when it is here.
QStringList benchFiles()
{
    QStringList files{QStringLiteral(MEMBUDGET_SOURCE_DIR
                                     "/tests/data/snapshots/ZidongLiu__DeComFL__memory.pickle")};
    for (const char *name :
         {"Wedsonlin__assignment2-systems__results--medium_512_training_memory_snapshot.pickle",
          "notHanmin__assignment2-systems__memory_snapshot.pickle"}) {
        const QString path = QStringLiteral(MEMBUDGET_SOURCE_DIR "/../shared/snapshots/")
                             + QLatin1String(name);
        if (QFile::exists(path))
            files << path;
    }
    return files;
}

std::string readAll(const QString &path)
{
    std::string bytes;
    LoadError error;
    if (!readSnapshotBytes(path.toStdString(), bytes, error))
        qFatal("%s", error.toString().c_str());
    return bytes;
}

void addRows()
{
    QTest::addColumn<QString>("path");
    for (const QString &f : benchFiles())
        QTest::newRow(
            qPrintable(QStringLiteral("%1 (%2 MB)")
                           .arg(QFileInfo(f).fileName().left(40))
                           .arg(static_cast<double>(QFileInfo(f).size()) / 1e6, 0, 'f', 2)))
            << f;
}

} // namespace

class BenchSnapshot : public QObject
{
    Q_OBJECT
private slots:
    void parsePickle_data() { addRows(); }
    void parsePickle()
    {
        QFETCH(QString, path);
        const std::string bytes = readAll(path);
        QBENCHMARK
        {
            pickle::ReadError error;
            QVERIFY(pickle::Document::parse(bytes, error).has_value());
        }
    }

    void readSnapshot_data() { addRows(); }
    void readSnapshot()
    {
        QFETCH(QString, path);
        const std::string bytes = readAll(path);
        QBENCHMARK
        {
            LoadError error;
            QVERIFY(readMemorySnapshot(bytes, "bench", error).has_value());
        }
    }

    // From the file on disk to everything `membudget snapshot` prints.
    void loadAndAnalyze_data() { addRows(); }
    void loadAndAnalyze()
    {
        QFETCH(QString, path);
        QBENCHMARK
        {
            LoadError error;
            const auto snap = loadMemorySnapshotFile(path.toStdString(), error);
            QVERIFY(snap.has_value());
            SnapshotAnalysis a;
            std::string problem;
            QVERIFY(analyzeSnapshot(*snap, -1, 10, a, problem));
        }
    }

    // Wall-clock and CPU time (the calling thread's: it does not grow while other jobs hold the
    // shared cores) of 15 reads of each file, split into the three steps. Target: the whole read of
    // a 4 MB snapshot (parse and typed model) well under 100 ms.
    void stepTimes_data() { addRows(); }
    void stepTimes()
    {
        QFETCH(QString, path);
        const std::string bytes = readAll(path);
        std::vector<double> parseCpu, readCpu, readWall, analyzeCpu, replayCpu;
        for (int i = 0; i < 15; ++i) {
            QElapsedTimer wall;
            long long t0 = bench::threadCpuNs();
            pickle::ReadError perror;
            QVERIFY(pickle::Document::parse(bytes, perror).has_value());
            long long t1 = bench::threadCpuNs();
            wall.start();
            LoadError error;
            const auto snap = readMemorySnapshot(bytes, "bench", error);
            QVERIFY(snap.has_value());
            readWall.push_back(static_cast<double>(wall.nsecsElapsed()) / 1e6);
            long long t2 = bench::threadCpuNs();
            SnapshotAnalysis a;
            std::string problem;
            QVERIFY(analyzeSnapshot(*snap, -1, 10, a, problem));
            long long t3 = bench::threadCpuNs();
            QVERIFY(a.replay);
            QVERIFY(replaySnapshot(*snap, *a.replay).ran);
            long long t4 = bench::threadCpuNs();
            replayCpu.push_back(static_cast<double>(t4 - t3) / 1e6);
            parseCpu.push_back(static_cast<double>(t1 - t0) / 1e6);
            readCpu.push_back(static_cast<double>(t2 - t1) / 1e6);
            analyzeCpu.push_back(static_cast<double>(t3 - t2) / 1e6);
        }
        bench::printSummary("pickle parse, CPU", bench::summarize(parseCpu), "ms");
        bench::printSummary("parse + typed model, CPU", bench::summarize(readCpu), "ms", 100);
        bench::printSummary("parse + typed model, wall", bench::summarize(readWall), "ms", 100);
        bench::printSummary("analysis, CPU", bench::summarize(analyzeCpu), "ms");
        bench::printSummary("allocator-model replay, CPU", bench::summarize(replayCpu), "ms");
    }
};

QTEST_APPLESS_MAIN(BenchSnapshot)
#include "bench_snapshot.moc"
