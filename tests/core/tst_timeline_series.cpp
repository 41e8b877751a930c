// SPDX-License-Identifier: GPL-3.0-or-later
// The step drawn over time (timeline_series.h): its highest allocated point is the estimate's
// peak, its reserved curve is the estimate's replay, the per-component stacks add up to the total
// at every position, and min/max column decimation keeps every extreme (column_decimation.h).
#include "base/column_decimation.h"
#include "model/step_model.h"
#include "model/timeline_series.h"
#include "test_architectures.h"

#include <QtTest>

#include <algorithm>
#include <numeric>

using namespace membudget;
using namespace membudget::testing;

namespace {

EstimateInput trainingInput(Checkpointing checkpointing, std::int64_t extraResident)
{
    EstimateInput in;
    in.arch = gpt2_small();
    in.training.precision = Precision::AmpBf16;
    in.training.checkpointing = checkpointing;
    in.training.micro_batch_size = 2;
    in.training.sequence_length = 512;
    in.overheads.extra_resident_bytes = extraResident;
    return in;
}

} // namespace

class TestTimelineSeries : public QObject
{
    Q_OBJECT
private slots:
    void matchesTheEstimate_data()
    {
        QTest::addColumn<int>("checkpointing");
        QTest::addColumn<qint64>("extra");
        QTest::addRow("no checkpointing") << int(Checkpointing::None) << qint64(0);
        QTest::addRow("full checkpointing") << int(Checkpointing::Full) << qint64(0);
        QTest::addRow("extra resident") << int(Checkpointing::None) << qint64(300'000'000);
    }

    void matchesTheEstimate()
    {
        QFETCH(int, checkpointing);
        QFETCH(qint64, extra);
        const EstimateInput in = trainingInput(static_cast<Checkpointing>(checkpointing), extra);
        const StepModel model(in);
        QVERIFY(model.valid());
        const MemoryEstimate est = model.estimate();
        const TimelineSeries s = timelineSeries(model, 2, 512);
        QCOMPARE(s.positions(), s.events.size() + 1);
        QCOMPARE(s.reserved.size(), s.positions());
        QCOMPARE(s.allocated[s.peak], *std::max_element(s.allocated.begin(), s.allocated.end()));
        // The same step as the estimate's: its peak (the estimate rounds nothing away).
        QVERIFY2(std::llabs(s.allocated[s.peak] - est.peak_allocated) <= 4096,
                 qPrintable(QString("series %1, estimate %2")
                                .arg(s.allocated[s.peak])
                                .arg(est.peak_allocated)));
        QCOMPARE(*std::max_element(s.reserved.begin(), s.reserved.end()), s.replay.peak_reserved);
        for (std::size_t i = 0; i < s.positions(); ++i)
            QVERIFY(s.reserved[i] >= s.allocated[i]);
        // Extra resident bytes are live from the start to the end of the step.
        const Bytes withoutExtra
            = timelineSeries(StepModel(trainingInput(static_cast<Checkpointing>(checkpointing), 0)),
                             2,
                             512)
                  .residentTotal();
        QCOMPARE(s.residentTotal(), withoutExtra + extra);
        QCOMPARE(s.allocated.front(), s.residentTotal());
        // Stages in step order, covering every event once.
        QVERIFY(!s.stages.empty());
        QCOMPARE(s.stages.front().first, std::size_t(0));
        QCOMPARE(s.stages.back().end, s.events.size());
        for (std::size_t i = 1; i < s.stages.size(); ++i)
            QCOMPARE(s.stages[i].first, s.stages[i - 1].end);
        QCOMPARE(s.stages.back().phase, Phase::OptimizerStep);
    }

    // A drag's model (reserve assumed, no replay) gets the same allocated series and, asked for
    // WhenReplayed, no reserved one and no replay; asked to Replay, the settled model's.
    void dragSkipsTheReplay()
    {
        const EstimateInput in = trainingInput(Checkpointing::None, 0);
        const StepModel settled(in);
        const StepModel dragged(in, settled.reserveRatio());
        QVERIFY(dragged.reserveAssumed());
        const TimelineSeries full = timelineSeries(settled, 2, 512, ReservedSeries::WhenReplayed);
        const TimelineSeries quick = timelineSeries(dragged, 2, 512, ReservedSeries::WhenReplayed);
        QCOMPARE(full.reserved.size(), full.positions());
        QVERIFY(quick.reserved.empty());
        QCOMPARE(quick.replay.peak_reserved, Bytes(0));
        QCOMPARE(quick.allocated, full.allocated);
        QCOMPARE(quick.peak, full.peak);
        QCOMPARE(quick.stages.size(), full.stages.size());
        const TimelineSeries asked = timelineSeries(dragged, 2, 512, ReservedSeries::Replay);
        QCOMPARE(asked.reserved, full.reserved);
    }

    void componentsAddUp()
    {
        const StepModel model(trainingInput(Checkpointing::Selective, 0));
        const TimelineSeries s = timelineSeries(model, 2, 512);
        std::vector<std::size_t> positions;
        for (std::size_t p = 0; p < s.positions(); p += 7)
            positions.push_back(p);
        positions.push_back(s.peak);
        std::sort(positions.begin(), positions.end());
        const std::vector<ComponentBytes> parts = componentsAt(model.timeline(), s, positions);
        QCOMPARE(parts.size(), positions.size());
        for (std::size_t i = 0; i < positions.size(); ++i) {
            const Bytes sum = std::accumulate(parts[i].begin(), parts[i].end(), Bytes(0));
            QCOMPARE(sum, s.allocated[positions[i]]);
            for (Bytes b : parts[i])
                QVERIFY(b >= 0);
        }
    }

    void decimationKeepsExtremes()
    {
        // A saw with one spike and one trough in the middle of a column.
        std::vector<double> v(100'000);
        for (std::size_t i = 0; i < v.size(); ++i)
            v[i] = double(i % 97);
        v[54'321] = 1000;
        v[12'345] = -1000;
        const auto x = [](std::size_t i) { return double(i); };
        const auto y = [&](std::size_t i) { return v[i]; };
        const std::vector<std::size_t> kept = decimateColumns(v.size(), x, y, 0, 99'999, 800);
        QVERIFY(kept.size() <= 2 * 800 + 2);
        QVERIFY(std::is_sorted(kept.begin(), kept.end()));
        QVERIFY(std::find(kept.begin(), kept.end(), 54'321) != kept.end());
        QVERIFY(std::find(kept.begin(), kept.end(), 12'345) != kept.end());
        QCOMPARE(kept.front(), std::size_t(0));
        QCOMPARE(kept.back(), v.size() - 1);
        // A zoomed view keeps the samples just outside it, so lines reach the edges.
        const std::vector<std::size_t> zoom = decimateColumns(v.size(), x, y, 100.5, 200.5, 800);
        QCOMPARE(zoom.front(), std::size_t(100));
        QCOMPARE(zoom.back(), std::size_t(201));
        QCOMPARE(zoom.size(), std::size_t(102)); // few enough: all of them
        QVERIFY(decimateColumns(v.size(), x, y, 5, 5, 800).empty());
    }
};

QTEST_GUILESS_MAIN(TestTimelineSeries)
#include "tst_timeline_series.moc"
