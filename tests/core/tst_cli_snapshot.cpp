// SPDX-License-Identifier: GPL-3.0-or-later
// `membudget snapshot` run as a user would: the summary, the JSON document, the estimate beside
// the measurement phase by phase, --calibrate, exit codes. (Hostile snapshots: tst_bad_inputs.)
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

namespace {

struct Result
{
    int code = -1;
    QByteArray out;
    QByteArray err;
};

// The figures below are in decimal GB, as the snapshots' sources quote them: --gb unless a unit or
// JSON is asked for.
Result run(QStringList args)
{
    if (args.size() > 1 && args.front() == QStringLiteral("snapshot")
        && !args.contains(QStringLiteral("--gib")) && !args.contains(QStringLiteral("--json")))
        args << QStringLiteral("--gb");
    QProcess p;
    p.start(QStringLiteral(MEMBUDGET_CLI), args);
    p.waitForFinished(30000);
    return {p.exitCode(), p.readAllStandardOutput(), p.readAllStandardError()};
}

QString snapshotFile(const char *name)
{
    return QStringLiteral(MEMBUDGET_SOURCE_DIR "/tests/data/snapshots/") + QLatin1String(name);
}

const char *kZidong = "ZidongLiu__DeComFL__memory.pickle";
const char *kYiyi = "Yiyi-philosophy__LLM-inference__oom_snapshot.pickle";
const char *kBcrafton = "bcrafton__assignment2-systems__memory_snapshot.pickle";

QString gpt2Scenario()
{
    return QStringLiteral(MEMBUDGET_SOURCE_DIR "/presets/scenarios/full-gpt2-amp-16gb.yaml");
}

QJsonObject jsonOf(const Result &r)
{
    return QJsonDocument::fromJson(r.out).object();
}

QJsonObject member(const QJsonObject &o, const char *key)
{
    return o[QLatin1String(key)].toObject();
}

// The GPT-2 scenario with an allocator setting of its own (the recorded runs had the defaults).
QString scenarioWithConf(const QTemporaryDir &dir)
{
    QFile in(gpt2Scenario());
    if (!in.open(QIODevice::ReadOnly))
        return {};
    const QString path = dir.filePath(QStringLiteral("run.yaml"));
    QFile out(path);
    if (!out.open(QIODevice::WriteOnly))
        return {};
    out.write(in.readAll() + "overheads:\n  allocator_conf: \"expandable_segments:True\"\n");
    return path;
}

} // namespace

class TestCliSnapshot : public QObject
{
    Q_OBJECT

private slots:
    void initTestCase() { qputenv("MEMBUDGET_PRESETS", "/nonexistent/no-user-presets"); }

    void summary()
    {
        const Result r = run({QStringLiteral("snapshot"), snapshotFile(kZidong)});
        QCOMPARE(r.code, 0);
        QVERIFY(r.err.isEmpty());
        const QString out = QString::fromUtf8(r.out);
        for (const char *part :
             {"23,105 trace events over 1.850 s: 7,946 alloc, 7,549 free_requested",
              "began with an empty allocator",
              "PYTORCH_CUDA_ALLOC_CONF unset; expandable segments off",
              "61 at the snapshot (44 large, 17 small), 1.90 GB",
              "peak allocated              1.78 GB   at event 11,206 of 23,105, 1.622 s",
              "peak reserved               1.90 GB",
              "reserved / allocated          1.064",
              "modeling_utils.py:4343 in to",
              "caching-allocator model, replaying the trace from its start state, without a "
              "device limit",
              "peak reserved               1.90 GB   measured 1.90 GB (+0.00%)",
              "segment allocs                   61   recorded 61"})
            QVERIFY2(out.contains(QLatin1String(part)), part);
        // --top and --gib
        const Result top = run({QStringLiteral("snapshot"),
                                snapshotFile(kZidong),
                                QStringLiteral("--top"),
                                QStringLiteral("2"),
                                QStringLiteral("--gib")});
        QCOMPARE(top.code, 0);
        QVERIFY(top.out.contains("1.66 GiB"));
        const auto lines = QString::fromUtf8(top.out).split(QLatin1Char('\n'));
        const auto at = lines.indexOf(QRegularExpression(QStringLiteral("^Largest allocations.*")));
        QVERIFY(at > 0);
        QCOMPARE(lines.size(), at + 4); // two sites and the final newline
    }

    void summaryOfLegacySnapshot()
    {
        const Result r = run({QStringLiteral("snapshot"), snapshotFile(kYiyi)});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.contains("(torch 2.0 layout)"));
        QVERIFY(r.out.contains("no allocation history in this snapshot"));
        QVERIFY(r.out.contains("11.84 GB   requested (11.84 GB in rounded blocks)"));
        QVERIFY(r.out.contains("flexgen/pytorch_backend.py:190 in allocate"));
        QVERIFY(!r.out.contains("peak allocated"));
    }

    void json()
    {
        const Result r = run({QStringLiteral("snapshot"),
                              snapshotFile(kBcrafton),
                              QStringLiteral("--json"),
                              QStringLiteral("--top"),
                              QStringLiteral("3")});
        QCOMPARE(r.code, 0);
        const QJsonObject j = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(j[QLatin1String("format")].toString(), QStringLiteral("membudget/1"));
        QCOMPARE(j[QLatin1String("kind")].toString(), QStringLiteral("memory_snapshot"));
        const QJsonObject m = j[QLatin1String("measured")].toObject();
        QCOMPARE(m[QLatin1String("peak_allocated")].toInteger(), Q_INT64_C(3849232640));
        QCOMPARE(m[QLatin1String("peak_reserved")].toInteger(), Q_INT64_C(4238344192));
        QCOMPARE(m[QLatin1String("baseline_reserved")].toInteger(), Q_INT64_C(4238344192));
        QCOMPARE(m[QLatin1String("events")].toInteger(), 6486);
        QCOMPARE(m[QLatin1String("frees_of_earlier_blocks")].toInteger(), 222);
        QVERIFY(!m[QLatin1String("recorded_from_allocator_start")].toBool());
        const qint64 baseline = m[QLatin1String("baseline_allocated")].toInteger();
        QVERIFY(baseline > 3000000000 && baseline < m[QLatin1String("peak_allocated")].toInteger());
        const QJsonArray top = j[QLatin1String("top_allocations")].toArray();
        QCOMPARE(top.size(), 3);
        QCOMPARE(top[0].toObject()[QLatin1String("kind")].toString(),
                 QStringLiteral("before_recording"));
        QCOMPARE(top[1].toObject()[QLatin1String("line")].toInt(), 78);
        QVERIFY(top[1].toObject()[QLatin1String("file")].toString().endsWith(
            QLatin1String("optimizer.py")));
        QCOMPARE(j[QLatin1String("segments")].toObject()[QLatin1String("count")].toInt(), 96);
        // The allocator model's replay: the warm cache held everything, as on the device.
        const QJsonObject replayed = j[QLatin1String("replayed")].toObject();
        QCOMPARE(replayed[QLatin1String("peak_reserved")].toInteger(), Q_INT64_C(4238344192));
        QCOMPARE(replayed[QLatin1String("peak_reserved_difference")].toInteger(), 0);
        QCOMPARE(replayed[QLatin1String("requests")].toInteger(), 4324); // alloc + free_completed
        QCOMPARE(replayed[QLatin1String("segment_allocs")].toInteger(), 0);
        QVERIFY(replayed[QLatin1String("fits")].toBool());
        QVERIFY(replayed[QLatin1String("capacity")].isNull());
        QVERIFY(replayed[QLatin1String("error")].isNull());
        const QJsonObject replay = j[QLatin1String("replay_input")].toObject();
        QVERIFY(replay[QLatin1String("available")].toBool());
        QCOMPARE(replay[QLatin1String("requests")].toInteger(), 6486);
        QCOMPARE(replay[QLatin1String("start_reserved")].toInteger(), Q_INT64_C(4238344192));
        QVERIFY(!j.contains(QLatin1String("estimate")));
    }

    void estimateBeside()
    {
        const QString scenario = QStringLiteral(MEMBUDGET_SOURCE_DIR
                                                "/presets/scenarios/full-gpt2-amp-16gb.yaml");
        Result r = run({QStringLiteral("snapshot"),
                        snapshotFile(kZidong),
                        QStringLiteral("--json"),
                        QStringLiteral("--scenario"),
                        scenario});
        QCOMPARE(r.code, 0);
        const QJsonObject j = QJsonDocument::fromJson(r.out).object();
        const QJsonObject est = j[QLatin1String("estimate")].toObject();
        QCOMPARE(est[QLatin1String("format")].toString(), QStringLiteral("membudget/1"));
        const qint64 estimated
            = est[QLatin1String("per_gpu")].toObject()[QLatin1String("peak_allocated")].toInteger();
        const QJsonObject cmp
            = j[QLatin1String("comparison")].toObject()[QLatin1String("peak_allocated")].toObject();
        QCOMPARE(cmp[QLatin1String("estimated")].toInteger(), estimated);
        QCOMPARE(cmp[QLatin1String("measured")].toInteger(), Q_INT64_C(1783664516));
        QCOMPARE(cmp[QLatin1String("difference")].toInteger(), estimated - Q_INT64_C(1783664516));
        r = run({QStringLiteral("snapshot"),
                 snapshotFile(kZidong),
                 QStringLiteral("--scenario"),
                 scenario});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.contains("beside the measurement:"));
        QVERIFY(r.out.contains("measured    estimated"));
        // A bad scenario: its own one-line error, exit 1.
        r = run({QStringLiteral("snapshot"),
                 snapshotFile(kZidong),
                 QStringLiteral("--scenario"),
                 QStringLiteral("/nonexistent/s.yaml")});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err, QByteArray("/nonexistent/s.yaml: no such file\n"));
    }

    // bcrafton's trace holds one whole step (forward, loss, backward, AdamW's step): each phase
    // found from the allocations' stacks and measured beside the estimate's.
    void comparisonByPhase()
    {
        Result r = run({QStringLiteral("snapshot"),
                        snapshotFile(kBcrafton),
                        QStringLiteral("--json"),
                        QStringLiteral("--scenario"),
                        gpt2Scenario()});
        QCOMPARE(r.code, 0);
        const QJsonObject cmp = member(jsonOf(r), "comparison");
        const QJsonObject trace = member(cmp, "trace_phases");
        QVERIFY(trace[QLatin1String("found")].toBool());
        QVERIFY(!trace[QLatin1String("more_steps")].toBool());
        const QJsonArray spans = trace[QLatin1String("spans")].toArray();
        QCOMPARE(spans.size(), 4);
        const char *stages[] = {"forward", "loss", "backward", "optimizer_step"};
        qint64 previousEnd = 0;
        for (int i = 0; i < 4; ++i) {
            const QJsonObject span = spans[i].toObject();
            QCOMPARE(span[QLatin1String("stage")].toString(), QLatin1String(stages[i]));
            QCOMPARE(span[QLatin1String("first_event")].toInteger(), previousEnd);
            QVERIFY(span[QLatin1String("end_event")].toInteger() > previousEnd);
            previousEnd = span[QLatin1String("end_event")].toInteger();
        }
        QCOMPARE(previousEnd, 6486); // the whole trace
        const QJsonArray phases = cmp[QLatin1String("phases")].toArray();
        QCOMPARE(phases.size(), 3);
        qint64 highest = 0;
        for (const QJsonValue &v : phases) {
            const QJsonObject p = v.toObject();
            QVERIFY(p[QLatin1String("in_trace")].toBool());
            const QJsonObject allocated = member(p, "allocated");
            QVERIFY(allocated[QLatin1String("estimated")].toInteger() > 0);
            highest = std::max(highest, allocated[QLatin1String("measured")].toInteger());
        }
        // The phases' measured peaks are the trace's.
        QCOMPARE(highest, member(cmp, "peak_allocated")[QLatin1String("measured")].toInteger());
        QCOMPARE(phases[2].toObject()[QLatin1String("phase")].toString(),
                 QStringLiteral("optimizer_step"));
        const QJsonObject resident = member(cmp, "resident");
        QVERIFY(resident[QLatin1String("measured")].toInteger() > 0);
        QVERIFY(resident[QLatin1String("estimated")].toInteger() > 0);
        QVERIFY(!cmp[QLatin1String("findings")].toArray().isEmpty());

        r = run({QStringLiteral("snapshot"),
                 snapshotFile(kBcrafton),
                 QStringLiteral("--scenario"),
                 gpt2Scenario()});
        QCOMPARE(r.code, 0);
        for (const char *part : {"Forward, allocated",
                                 "Backward, allocated",
                                 "Optimizer step, allocated",
                                 "live when the step began",
                                 "phases in the trace (from the allocations' stacks): Forward "
                                 "1-342; Loss 343-362; Backward 363-1,818; Optimizer step "
                                 "1,819-6,486",
                                 "Where they part:",
                                 "differ by more than a factor of two"})
            QVERIFY2(r.out.contains(part), part);
    }

    // Calibrate on a real trace: the run's allocator settings and the bytes it kept beyond the
    // scenario's states go into overheads; estimating again from the written file finds the
    // resident bytes the trace shows.
    void calibrate()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString scenario = scenarioWithConf(dir);
        QVERIFY(!scenario.isEmpty());
        const QString written = dir.filePath(QStringLiteral("calibrated.yaml"));
        Result r = run({QStringLiteral("snapshot"),
                        snapshotFile(kBcrafton),
                        QStringLiteral("--json"),
                        QStringLiteral("--scenario"),
                        scenario,
                        QStringLiteral("--calibrate"),
                        QStringLiteral("-o"),
                        written});
        QCOMPARE(r.code, 0);
        const QJsonObject cal = member(jsonOf(r), "calibration");
        QVERIFY(cal[QLatin1String("changed")].toBool());
        QCOMPARE(cal[QLatin1String("written")].toString(), written);
        const QJsonArray items = cal[QLatin1String("items")].toArray();
        QCOMPARE(items.size(), 5);
        const char *keys[] = {"overheads.allocator_conf",
                              "overheads.extra_resident",
                              "overheads.allocator_reserve",
                              "overheads.cuda_context",
                              "overheads.nccl"};
        for (int i = 0; i < 5; ++i)
            QCOMPARE(items[i].toObject()[QLatin1String("key")].toString(), QLatin1String(keys[i]));
        QVERIFY(items[0].toObject()[QLatin1String("taken")].toBool()); // back to the defaults
        QVERIFY(items[1].toObject()[QLatin1String("taken")].toBool());
        QVERIFY(!items[3].toObject()[QLatin1String("taken")].toBool());
        QVERIFY(items[3].toObject()[QLatin1String("why")].toString().contains(
            QStringLiteral("CUDA context")));
        const QJsonObject overheads = member(cal, "overheads");
        QCOMPARE(overheads[QLatin1String("allocator_conf")].toString(), QString());
        const qint64 extra = overheads[QLatin1String("extra_resident")].toInteger();
        QVERIFY(extra > 0);

        QFile file(written);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QByteArray yaml = file.readAll();
        QVERIFY(yaml.contains("extra_resident: " + QByteArray::number(extra)));
        QVERIFY(!yaml.contains("expandable_segments"));
        QVERIFY(yaml.contains("name: \"Full fine-tuning of GPT-2"));

        // Estimated again from the calibrated file: the step begins with what the trace shows.
        r = run({QStringLiteral("snapshot"),
                 snapshotFile(kBcrafton),
                 QStringLiteral("--json"),
                 QStringLiteral("--scenario"),
                 written});
        QCOMPARE(r.code, 0);
        const QJsonObject resident = member(member(jsonOf(r), "comparison"), "resident");
        const qint64 measured = resident[QLatin1String("measured")].toInteger();
        QVERIFY(std::llabs(resident[QLatin1String("difference")].toInteger()) <= measured / 200);

        // Calibrating the calibrated file changes nothing more.
        r = run({QStringLiteral("snapshot"),
                 snapshotFile(kBcrafton),
                 QStringLiteral("--scenario"),
                 written,
                 QStringLiteral("--calibrate")});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.startsWith("format: membudget/1\n")); // the scenario on standard output
        QVERIFY(r.err.contains("Calibrated overheads (the scenario on standard output):"));
        QVERIFY(r.err.contains("kept  overheads.extra_resident"));
        QVERIFY(r.err.contains("kept  overheads.cuda_context"));
    }

    // A trace that began with an empty allocator holds the model's loading: no resident bytes to
    // take; usage errors for the options that go together.
    void calibrateRefuses()
    {
        Result r = run({QStringLiteral("snapshot"),
                        snapshotFile(kZidong),
                        QStringLiteral("--json"),
                        QStringLiteral("--scenario"),
                        gpt2Scenario(),
                        QStringLiteral("--calibrate")});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.startsWith("format: membudget/1\n"));
        const QJsonObject cal = member(QJsonDocument::fromJson(r.err).object(), "calibration");
        const QJsonObject extra = cal[QLatin1String("items")].toArray()[1].toObject();
        QVERIFY(!extra[QLatin1String("taken")].toBool());
        QVERIFY(extra[QLatin1String("why")].toString().contains(QStringLiteral("empty allocator")));
        QVERIFY(cal[QLatin1String("written")].isNull());

        r = run({QStringLiteral("snapshot"), snapshotFile(kZidong), QStringLiteral("--calibrate")});
        QCOMPARE(r.code, 2);
        QVERIFY(r.err.contains("--calibrate needs --scenario"));
        r = run({QStringLiteral("snapshot"),
                 snapshotFile(kZidong),
                 QStringLiteral("-o"),
                 QStringLiteral("x.yaml")});
        QCOMPARE(r.code, 2);
        // An unwritable destination: one line, exit 1, nothing left behind.
        r = run({QStringLiteral("snapshot"),
                 snapshotFile(kBcrafton),
                 QStringLiteral("--scenario"),
                 gpt2Scenario(),
                 QStringLiteral("--calibrate"),
                 QStringLiteral("-o"),
                 QStringLiteral("/nonexistent/dir/c.yaml")});
        QCOMPARE(r.code, 1);
        QVERIFY(r.err.startsWith("membudget: "));
        QCOMPARE(r.err.count('\n'), 1);
    }

    void exitCodes()
    {
        QCOMPARE(run({QStringLiteral("snapshot")}).code, 2);
        QCOMPARE(run({QStringLiteral("snapshot"),
                      snapshotFile(kZidong),
                      QStringLiteral("--top"),
                      QStringLiteral("0")})
                     .code,
                 2);
        QCOMPARE(run({QStringLiteral("snapshot"), snapshotFile(kZidong), QStringLiteral("--bogus")})
                     .code,
                 2);
        const Result capacity = run({QStringLiteral("snapshot"),
                                     snapshotFile(kZidong),
                                     QStringLiteral("--capacity"),
                                     QStringLiteral("lots")});
        QCOMPARE(capacity.code, 2);
        QVERIFY(capacity.err.contains("--capacity: 'lots' is not a size"));
        // A capacity below what the run reserved: the model runs out where the device did not.
        const Result tight = run({QStringLiteral("snapshot"),
                                  snapshotFile(kZidong),
                                  QStringLiteral("--capacity"),
                                  QStringLiteral("1GiB")});
        QCOMPARE(tight.code, 0);
        QVERIFY(tight.out.contains("with 1.07 GB of device memory"));
        QVERIFY(tight.out.contains("out of memory at request"));
        const Result r = run({QStringLiteral("snapshot"),
                              snapshotFile(kZidong),
                              QStringLiteral("--device"),
                              QStringLiteral("3")});
        QCOMPARE(r.code, 1);
        QCOMPARE(QString::fromUtf8(r.err),
                 snapshotFile(kZidong)
                     + QStringLiteral(": the snapshot holds nothing for device 3\n"));
    }

    void validateKnowsSnapshots()
    {
        const Result r = run(
            {QStringLiteral("validate"), snapshotFile(kZidong), snapshotFile(kYiyi)});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.contains("memory.pickle: ok (memory snapshot)"));
        QVERIFY(r.out.contains("oom_snapshot.pickle: ok (memory snapshot)"));
    }
};

QTEST_GUILESS_MAIN(TestCliSnapshot)
#include "tst_cli_snapshot.moc"
