// SPDX-License-Identifier: GPL-3.0-or-later
// Saving never loses a file: a writer killed (SIGKILL) at random moments while it saves over and
// over leaves the file byte-identical to one of the two complete versions, through the app's
// QSaveFile path and the core's temporary-file-and-rename path. And every scenario the app writes
// loads back equal, and saving it again gives the same bytes.
#include "document/scenario_document.h"
#include "io/preset_catalog.h"
#include "io/scenario_yaml.h"
#include "test_scenarios.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>

#include <random>

using namespace membudget;

namespace {

QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray("<unreadable>");
}

// Random scenarios the app could hold: presets or quick models, every enum, wide ranges; only
// those the core accepts (the app saves what it can estimate).
struct ScenarioGenerator
{
    std::mt19937_64 rng{20261123};
    int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); }
    std::int64_t logUniform(double lo, double hi)
    {
        return std::llround(
            std::exp(std::uniform_real_distribution<double>(std::log(lo), std::log(hi))(rng)));
    }
    Scenario next()
    {
        const PresetCatalog &catalog = PresetCatalog::bundled();
        Scenario s = defaultScenario();
        s.name = "Random " + std::to_string(rng() % 100000)
                 + (pick(4) == 0 ? ": with \"quotes\", # and é" : "");
        if (pick(3) == 0)
            s.description = "line one\nline two: " + std::to_string(rng());
        s.model = ModelSpec{};
        if (pick(2) == 0) {
            s.model.preset = catalog
                                 .models()[static_cast<std::size_t>(
                                     pick(static_cast<int>(catalog.models().size())))]
                                 .id;
            if (pick(4) == 0)
                s.model.layers = logUniform(1, 200);
        } else {
            s.model.parameters = static_cast<double>(logUniform(1e7, 2e12));
        }
        TrainingConfig &t = s.training;
        t.mode = pick(6) == 0 ? Mode::Inference : Mode::Train;
        t.method = static_cast<Method>(pick(3));
        t.precision = static_cast<Precision>(pick(7));
        t.quantization = t.method == Method::Qlora ? static_cast<Quantization>(1 + pick(3))
                                                   : Quantization::None;
        t.optimizer = static_cast<Optimizer>(pick(9));
        t.micro_batch_size = logUniform(1, 4096);
        t.sequence_length = logUniform(1, 1 << 20);
        t.gradient_accumulation_steps = logUniform(1, 64);
        t.checkpointing = static_cast<Checkpointing>(pick(3));
        t.attention = static_cast<Attention>(pick(3));
        t.lora.rank = logUniform(1, 256);
        t.lora.alpha = static_cast<double>(logUniform(1, 512)) / (pick(2) ? 1.0 : 3.0);
        t.lora.dropout = pick(2) ? 0.0 : 0.05;
        s.parallelism.gpus = logUniform(1, 4096);
        s.parallelism.sharding = static_cast<Sharding>(pick(6));
        t.offload.optimizer = pick(6) == 0;
        if (pick(3) == 0)
            s.overheads.allocator_reserve_fraction = 0.25;
        if (pick(4) == 0)
            s.overheads.allocator_conf = "expandable_segments:True";
        s.gpus.clear();
        for (int i = pick(4); i > 0; --i) {
            const std::string &id
                = catalog
                      .gpus()[static_cast<std::size_t>(pick(static_cast<int>(catalog.gpus().size())))]
                      .id;
            if (std::find(s.gpus.begin(), s.gpus.end(), id) == s.gpus.end())
                s.gpus.push_back(id); // a scenario lists each GPU once
        }
        return s;
    }
};

} // namespace

class TestSafeSave : public QObject
{
    Q_OBJECT
private slots:
    void killedWriterLeavesAWholeFile_data()
    {
        QTest::addColumn<QString>("mode");
        QTest::newRow("app (QSaveFile)") << QStringLiteral("app");
        QTest::newRow("core (temporary file + rename)") << QStringLiteral("core");
    }
    void killedWriterLeavesAWholeFile()
    {
        QFETCH(QString, mode);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath(QStringLiteral("scenario.yaml"));
        const QByteArray a = QByteArray::fromStdString(scenarioToYaml(savedScenarioA()));
        const QByteArray b = QByteArray::fromStdString(scenarioToYaml(savedScenarioB()));
        {
            QFile f(path);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(a);
        }
        std::mt19937 rng(7);
        int sawA = 0, sawB = 0;
        const int kills = 40;
        for (int i = 0; i < kills; ++i) {
            QProcess writer;
            writer.start(QStringLiteral(MEMBUDGET_SAVE_WRITER), {mode, path});
            QVERIFY(writer.waitForStarted());
            QVERIFY(writer.waitForReadyRead(10000)); // "saving": the loop has begun
            QThread::usleep(std::uniform_int_distribution<unsigned>(200, 60000)(rng));
            writer.kill(); // SIGKILL: no handler, no cleanup
            QVERIFY(writer.waitForFinished());
            QCOMPARE(writer.exitStatus(), QProcess::CrashExit);

            const QByteArray now = readAll(path);
            QVERIFY2(now == a || now == b,
                     qPrintable(QStringLiteral("kill %1 left %2 bytes").arg(i).arg(now.size())));
            (now == a ? sawA : sawB)++;
            LoadError error;
            const auto back = loadScenarioFile(path.toStdString(), error, &PresetCatalog::bundled());
            QVERIFY2(back.has_value(), error.toString().c_str());
            QVERIFY(*back == (now == a ? savedScenarioA() : savedScenarioB()));
        }
        // The writer really was switching versions while it was killed.
        QVERIFY2(sawA > 0 && sawB > 0, qPrintable(QStringLiteral("A %1, B %2").arg(sawA).arg(sawB)));
        qInfo("%s: %d kills, file whole every time (%d x A, %d x B); %lld stray temporary files",
              qPrintable(mode),
              kills,
              sawA,
              sawB,
              static_cast<long long>(QDir(dir.path()).entryList(QDir::Files).size() - 1));
    }

    void everythingTheAppSavesLoadsBack()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("round-trip.yaml"));
        ScenarioGenerator gen;
        ScenarioDocument doc(PresetCatalog::bundled());
        int saved = 0;
        for (int i = 0; i < 20000 && saved < 1500; ++i) {
            const Scenario s = gen.next();
            std::string problem;
            if (!resolveScenario(s, PresetCatalog::bundled(), problem))
                continue;
            doc.reset(s);
            QString error;
            QVERIFY2(doc.saveAs(path, error), qPrintable(error));
            const QByteArray first = readAll(path);
            LoadError loadError;
            const auto back = loadScenarioFile(path.toStdString(),
                                               loadError,
                                               &PresetCatalog::bundled());
            QVERIFY2(back.has_value(),
                     qPrintable(QString::fromStdString(loadError.toString()) + "\n" + first));
            QVERIFY2(*back == s, first.constData());
            ScenarioDocument reopened(PresetCatalog::bundled());
            QVERIFY(reopened.open(path, loadError));
            QVERIFY(reopened.saveAs(path, error));
            QCOMPARE(readAll(path), first); // save -> load -> save is byte-identical
            ++saved;
        }
        QVERIFY2(saved >= 1000, qPrintable(QString::number(saved)));
    }

    // A save onto a full disk keeps the old file and says why, in the system's words. A 64 KiB
    // tmpfs in a private mount namespace (unshare -rm), skipped where it cannot be made.
    void fullDiskKeepsTheOldFile_data()
    {
        QTest::addColumn<QString>("mode");
        QTest::newRow("app (QSaveFile)") << QStringLiteral("once-app");
        QTest::newRow("core (temporary file + rename)") << QStringLiteral("once-core");
    }
    void fullDiskKeepsTheOldFile()
    {
        QFETCH(QString, mode);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        QProcess p;
        p.start(QStringLiteral("unshare"),
                {QStringLiteral("-rm"),
                 QStringLiteral("sh"),
                 QStringLiteral("-c"),
                 QStringLiteral("mount -t tmpfs -o size=64k tmpfs \"$1\" || exit 77; "
                                "printf 'old scenario' > \"$1/s.yaml\"; "
                                "head -c 200000 /dev/zero > \"$1/filler\" 2>/dev/null; "
                                "\"$2\" \"$3\" \"$1/s.yaml\"; rc=$?; cat \"$1/s.yaml\"; echo; "
                                "ls -A \"$1\" | tr '\\n' ' '; exit $rc"),
                 QStringLiteral("sh"),
                 dir.path(),
                 QStringLiteral(MEMBUDGET_SAVE_WRITER),
                 mode});
        if (!p.waitForFinished(20000) || p.exitCode() == 77 || p.error() == QProcess::FailedToStart)
            QSKIP("cannot mount a small tmpfs here (unshare -rm)");
        const QString err = QString::fromUtf8(p.readAllStandardError());
        QCOMPARE(p.exitCode(), 1);
        QVERIFY2(err.contains(QStringLiteral("s.yaml: No space left on device")), qPrintable(err));
        QCOMPARE(QString::fromUtf8(p.readAllStandardOutput()),
                 QStringLiteral("old scenario\nfiller s.yaml "));
    }
};

QTEST_MAIN(TestSafeSave)
#include "tst_safe_save.moc"
