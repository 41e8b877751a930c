// SPDX-License-Identifier: GPL-3.0-or-later
// Every file of the hostile-input corpus (tests/data/bad, listed with the expected position and
// message in EXPECTED.tsv) run through the command line as a user would: exit code 1, nothing on
// standard output, exactly one line `file:line:column: message` on standard error, in under a
// second. Also files that cannot be committed: 100 MB, a FIFO, a folder, an unreadable file.
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QLocale>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>

#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

namespace {

struct Result
{
    int code = -1;
    QProcess::ExitStatus status = QProcess::CrashExit;
    QByteArray out;
    QByteArray err;
    qint64 ms = 0;
};

Result runCli(const QStringList &args)
{
    QProcess p;
    QElapsedTimer timer;
    timer.start();
    p.start(QStringLiteral(MEMBUDGET_CLI), args);
    if (!p.waitForFinished(10000)) {
        p.kill();
        p.waitForFinished();
    }
    return {p.exitCode(),
            p.exitStatus(),
            p.readAllStandardOutput(),
            p.readAllStandardError(),
            timer.elapsed()};
}

QString corpusDir()
{
    return QStringLiteral(MEMBUDGET_SOURCE_DIR "/tests/data/bad");
}

} // namespace

class TestBadInputs : public QObject
{
    Q_OBJECT
private:
    QTemporaryDir m_tmp;

    // One failure line of a command: exit 1, one line on stderr, under a second. Returns the line.
    static QString expectOneLineFailure(const Result &r)
    {
        [&] {
            QCOMPARE(r.status, QProcess::NormalExit);
            QCOMPARE(r.code, 1);
            QVERIFY2(r.out.isEmpty(), r.out.constData());
            QVERIFY2(r.err.endsWith('\n') && r.err.count('\n') == 1, r.err.constData());
            QVERIFY2(r.ms < 1000, qPrintable(QString::number(r.ms) + " ms"));
        }();
        return QString::fromUtf8(r.err).trimmed();
    }

private slots:
    void initTestCase()
    {
        QVERIFY(m_tmp.isValid());
        // No user presets: the corpus must fail for its own reasons, not a colleague's preset folder.
        qputenv("MEMBUDGET_PRESETS", m_tmp.filePath(QStringLiteral("no-user-presets")).toUtf8());
    }

    void corpusIsCompleteAndLarge()
    {
        QFile manifest(corpusDir() + QStringLiteral("/EXPECTED.tsv"));
        QVERIFY(manifest.open(QIODevice::ReadOnly | QIODevice::Text));
        QStringList listed;
        while (!manifest.atEnd())
            listed << QString::fromUtf8(manifest.readLine()).section(QLatin1Char('\t'), 0, 0);
        QStringList files = QDir(corpusDir()).entryList(QDir::Files);
        files.removeAll(QStringLiteral("EXPECTED.tsv"));
        files.removeAll(QStringLiteral("README.md"));
        listed.sort();
        files.sort();
        QCOMPARE(listed, files);
        QVERIFY2(files.size() >= 60, qPrintable(QString::number(files.size())));
        for (const char *kind : {"scenario-", "presets-", "config-", "snapshot-"})
            QVERIFY2(files.filter(QRegularExpression(QStringLiteral("^") + QLatin1String(kind)))
                             .size()
                         >= 10,
                     kind);
    }

    void corpus_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("position");
        QTest::addColumn<QString>("message");
        QFile manifest(corpusDir() + QStringLiteral("/EXPECTED.tsv"));
        QVERIFY(manifest.open(QIODevice::ReadOnly | QIODevice::Text));
        while (!manifest.atEnd()) {
            const QStringList cols
                = QString::fromUtf8(manifest.readLine()).chopped(1).split(QLatin1Char('\t'));
            if (cols.size() == 3)
                QTest::newRow(qPrintable(cols[0])) << cols[0] << cols[1] << cols[2];
        }
    }
    void corpus()
    {
        QFETCH(QString, file);
        QFETCH(QString, position);
        QFETCH(QString, message);
        const QString path = corpusDir() + QLatin1Char('/') + file;
        // validate knows all three kinds; estimate and import-config are what a user would run.
        QList<QStringList> commands = {{QStringLiteral("validate"), path}};
        if (file.startsWith(QLatin1String("scenario-")))
            commands << QStringList{QStringLiteral("estimate"), path}
                     << QStringList{QStringLiteral("fit"),
                                    path,
                                    QStringLiteral("--gpu"),
                                    QStringLiteral("rtx-4090")};
        if (file.startsWith(QLatin1String("config-")))
            commands << QStringList{QStringLiteral("import-config"),
                                    path,
                                    QStringLiteral("-o"),
                                    m_tmp.filePath(QStringLiteral("never-written.yaml"))};
        // Memory snapshots are binary: `file: offset N: message`, or `file: message` ("-") for a
        // trace that contradicts its segments.
        const bool snapshot = file.startsWith(QLatin1String("snapshot-"));
        if (snapshot)
            commands << QStringList{QStringLiteral("snapshot"), path}
                     << QStringList{QStringLiteral("snapshot"), path, QStringLiteral("--json")};
        for (const QStringList &args : commands) {
            const QString line = expectOneLineFailure(runCli(args));
            if (QTest::currentTestFailed())
                QFAIL(qPrintable(args.join(QLatin1Char(' '))));
            const QString expected = !snapshot ? path + QLatin1Char(':') + position
                                                     + QStringLiteral(": ") + message
                                     : position == QLatin1String("-")
                                         ? path + QStringLiteral(": ") + message
                                         : path + QStringLiteral(": ") + position
                                               + QStringLiteral(": ") + message;
            QVERIFY2(line.startsWith(expected),
                     qPrintable(args.front() + QStringLiteral("\n   got: ") + line
                                + QStringLiteral("\nwanted: ") + expected));
        }
        QVERIFY(!QFile::exists(m_tmp.filePath(QStringLiteral("never-written.yaml"))));
    }

    // A 100 MB file is refused by its size before a byte of it is read.
    void hugeFile_data()
    {
        QTest::addColumn<QString>("name");
        QTest::newRow("scenario") << QStringLiteral("huge.yaml");
        QTest::newRow("config.json") << QStringLiteral("huge.json");
    }
    void hugeFile()
    {
        QFETCH(QString, name);
        const QString path = m_tmp.filePath(name);
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        const QByteArray chunk
            = QByteArray("format: membudget/1\n# padding padding padding padding padding\n")
                  .repeated(16384);
        while (f.size() < 100 * 1024 * 1024)
            QVERIFY(f.write(chunk) == chunk.size());
        const qint64 size = f.size();
        f.close();
        const QString line = expectOneLineFailure(runCli({QStringLiteral("validate"), path}));
        QLocale withCommas = QLocale::c();
        withCommas.setNumberOptions(QLocale::DefaultNumberOptions);
        QVERIFY2(line.startsWith(path + QStringLiteral(":1:1: the file is larger than 1 MiB (")
                                 + withCommas.toString(size) + QStringLiteral(" bytes)")),
                 qPrintable(line));
        QFile::remove(path);
    }

    // Just under the limit: a scenario padded with comments to 1 MiB still loads, quickly.
    void largestAcceptedFileLoadsFast()
    {
        const QString path = m_tmp.filePath(QStringLiteral("big-but-fine.yaml"));
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("format: membudget/1\nmodel: {preset: llama-2-7b}\n");
        const QByteArray pad
            = "# a long comment line that pads the file towards its limit ........\n";
        while (f.size() + pad.size() < 1024 * 1024)
            f.write(pad);
        f.close();
        const Result r = runCli({QStringLiteral("validate"), path});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.ms < 1000, qPrintable(QString::number(r.ms)));
    }

    // Special files never block or get read: a FIFO with no writer would hang a naive reader.
    void specialFiles()
    {
        const QString fifo = m_tmp.filePath(QStringLiteral("pipe.yaml"));
        QCOMPARE(::mkfifo(QFile::encodeName(fifo).constData(), 0600), 0);
        QCOMPARE(expectOneLineFailure(runCli({QStringLiteral("validate"), fifo})),
                 fifo + QStringLiteral(": not a regular file"));
        QCOMPARE(expectOneLineFailure(runCli({QStringLiteral("estimate"), m_tmp.path()})),
                 m_tmp.path() + QStringLiteral(": a folder, not a scenario file"));
        const QString missing = m_tmp.filePath(QStringLiteral("missing.yaml"));
        QCOMPARE(expectOneLineFailure(runCli({QStringLiteral("validate"), missing})),
                 missing + QStringLiteral(": no such file"));
        const QString dev = QStringLiteral("/dev/zero");
        QCOMPARE(expectOneLineFailure(runCli({QStringLiteral("validate"), dev})),
                 dev + QStringLiteral(": not a regular file"));
    }

    // What the system says about a path reaches the user: not "no such file" for everything.
    void systemErrorsSayWhy()
    {
        const QString loop = m_tmp.filePath(QStringLiteral("loop.yaml"));
        QVERIFY(QFile::link(m_tmp.filePath(QStringLiteral("loop-b.yaml")), loop));
        QVERIFY(QFile::link(loop, m_tmp.filePath(QStringLiteral("loop-b.yaml"))));
        QCOMPARE(expectOneLineFailure(runCli({QStringLiteral("validate"), loop})),
                 loop
                     + QStringLiteral(
                         ": too many levels of symbolic links (a symbolic link loop?)"));
        const QString longName = m_tmp.filePath(QString(300, QLatin1Char('x')) + ".yaml");
        QCOMPARE(expectOneLineFailure(runCli({QStringLiteral("estimate"), longName})),
                 longName + QStringLiteral(": the file name is too long"));
        if (::geteuid() != 0) { // root reads any file
            const QString locked = m_tmp.filePath(QStringLiteral("locked.yaml"));
            QFile f(locked);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("format: membudget/1\n");
            f.close();
            QVERIFY(f.setPermissions(QFileDevice::Permissions()));
            QCOMPARE(expectOneLineFailure(runCli({QStringLiteral("validate"), locked})),
                     locked + QStringLiteral(": permission denied"));
        }
        // A read error after the checks (a failing disk gives EIO; so does /proc/self/mem, a
        // "regular file" of size 0) was an uncaught std::ios_base::failure: abort, exit 134.
        const QString mem = QStringLiteral("/proc/self/mem");
        QCOMPARE(expectOneLineFailure(runCli({QStringLiteral("validate"), mem})),
                 mem + QStringLiteral(": cannot read the file: Input/output error"));
        QCOMPARE(expectOneLineFailure(runCli({QStringLiteral("estimate"), mem})),
                 mem + QStringLiteral(": cannot read the file: Input/output error"));
        // Between 1 and 2 MiB: "the file is 1 MiB ... at most 1 MiB" said nothing.
        const QString big = m_tmp.filePath(QStringLiteral("one-and-a-half.yaml"));
        QFile f(big);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray(1536 * 1024, '#'));
        f.close();
        QCOMPARE(expectOneLineFailure(runCli({QStringLiteral("validate"), big})),
                 big
                     + QStringLiteral(":1:1: the file is larger than 1 MiB (1,572,864 bytes); a "
                                      "scenario or preset file is a few kilobytes"));
    }

    // A file that holds more than its size says (one that grows while it is read; here
    // /proc/kallsyms, 0 bytes to stat and megabytes to read) is read to the limit and no further:
    // the whole file was read before (2.4 GB for a file that kept growing).
    void fileLargerThanItsSizeIsReadToTheLimitOnly()
    {
        const QString symbols = QStringLiteral("/proc/kallsyms");
        QFile f(symbols);
        if (!f.open(QIODevice::ReadOnly) || f.read(2 * 1024 * 1024).size() <= 1024 * 1024)
            QSKIP("no /proc/kallsyms larger than 1 MiB here");
        const QString line = expectOneLineFailure(runCli({QStringLiteral("validate"), symbols}));
        QVERIFY2(line.startsWith(symbols + QStringLiteral(":1:1: the file grew past 1 MiB")),
                 qPrintable(line));
    }

    // A user preset folder is read by every command: a bad file in it is a warning about that
    // file, never an abort (a symlink to /proc/self/mem aborted every command and app start).
    void badUserPresetFilesAreSkippedWithAWarning()
    {
        QTemporaryDir folder;
        QVERIFY(folder.isValid());
        const QString dir = folder.path();
        QVERIFY(QFile::link(QStringLiteral("/proc/self/mem"), dir + "/mem.yaml"));
        QVERIFY(QFile::link(dir + "/missing-target.yaml", dir + "/dangling.yaml"));
        QVERIFY(QFile::link(dir + "/loop2.yaml", dir + "/loop1.yaml"));
        QVERIFY(QFile::link(dir + "/loop1.yaml", dir + "/loop2.yaml"));
        QCOMPARE(::mkfifo(QFile::encodeName(dir + "/fifo.yaml").constData(), 0600), 0);
        QVERIFY(QFile::copy(corpusDir() + "/presets-invalid-shape.yaml", dir + "/shape.yaml"));
        QFile good(dir + "/good.yaml");
        QVERIFY(good.open(QIODevice::WriteOnly));
        good.write("format: membudget-presets/1\ngpus:\n  - {id: my-gpu, memory_gib: 48}\n");
        good.close();
        QVERIFY(QFile::link(dir + "/good.yaml", dir + "/linked-good.yml"));
        const QString scenario = QStringLiteral(MEMBUDGET_SOURCE_DIR
                                                "/presets/scenarios/qlora-llama-2-7b-24gb.yaml");

        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("MEMBUDGET_PRESETS"), dir);
        for (const QStringList &args :
             {QStringList{QStringLiteral("presets"), QStringLiteral("gpus")},
              QStringList{QStringLiteral("estimate"), scenario},
              QStringList{QStringLiteral("validate"), scenario}}) {
            QProcess p;
            p.setProcessEnvironment(env);
            p.start(QStringLiteral(MEMBUDGET_CLI), args);
            QVERIFY(p.waitForFinished(10000));
            const QString err = QString::fromUtf8(p.readAllStandardError());
            const QString out = QString::fromUtf8(p.readAllStandardOutput());
            QCOMPARE(p.exitStatus(), QProcess::NormalExit);
            QVERIFY2(p.exitCode() == 0, qPrintable(err));
            for (const QString &expected :
                 {dir + "/mem.yaml: cannot read the file: Input/output error (user preset skipped)",
                  dir + "/dangling.yaml: no such file (user preset skipped)",
                  dir + "/loop1.yaml: too many levels of symbolic links",
                  dir + "/fifo.yaml: not a regular file (user preset skipped)",
                  dir
                      + "/shape.yaml:10:15: model preset 'llama-2-7b': attention_heads must be a "
                        "multiple of kv_heads"})
                QVERIFY2(err.contains(QStringLiteral("warning: ") + expected), qPrintable(err));
            if (args.front() == QLatin1String("presets"))
                QVERIFY2(out.contains(QStringLiteral("my-gpu")), qPrintable(out));
            if (args.front() == QLatin1String("estimate")) // the bundled Llama 2 7B, unbroken
                QVERIFY2(out.contains(QStringLiteral("6,738,415,616 parameters")), qPrintable(out));
        }
    }

    // A valid-looking 1 MiB scenario listing one GPU 80,000 times was accepted, and `fit`, `export`
    // and the app then spent minutes on it: the list is bounded. (256 KiB here: parsing a whole
    // 1 MiB list takes yaml-cpp most of the one second a failure may take on a loaded machine.)
    void hugeGpuListIsRefused()
    {
        const QString path = m_tmp.filePath(QStringLiteral("many-gpus.yaml"));
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("format: membudget/1\nmodel: {preset: llama-2-7b}\ngpus:\n");
        const QByteArray item = "  - rtx-4090\n";
        while (f.size() + item.size() < 256 * 1024)
            f.write(item);
        f.close();
        for (const char *command : {"validate", "estimate", "fit"}) {
            const QString line = expectOneLineFailure(runCli({QLatin1String(command), path}));
            QVERIFY2(line.startsWith(path
                                     + QStringLiteral(":68:5: too many GPUs: at most 64 to compare "
                                                      "against (this list has ")),
                     qPrintable(line));
        }
        const Result twice = runCli(
            {QStringLiteral("estimate"),
             QStringLiteral(MEMBUDGET_SOURCE_DIR "/presets/scenarios/qlora-llama-2-7b-24gb.yaml"),
             QStringLiteral("--gpu"),
             QStringLiteral("rtx-4090"),
             QStringLiteral("--gpu"),
             QStringLiteral("rtx-4090")});
        QCOMPARE(twice.code, 2);
        QVERIFY2(twice.err.contains("--gpu rtx-4090 is given twice"), twice.err.constData());
    }

    // Three 1 MiB user preset files (here 100,000 GPUs with short ids) took every command tens of
    // seconds: inserting an id scanned every id before it. The bound is generous, several times
    // the linear cost (parsing 3 MiB of YAML, about 4 s) and a fraction of the quadratic one; the
    // speed itself is measured by bench_core::userPresetFileOf1MiB.
    void largeUserPresetFilesDoNotSlowEveryCommand()
    {
        QTemporaryDir folder;
        QVERIFY(folder.isValid());
        for (int file = 0; file < 3; ++file) {
            QFile f(folder.filePath(QStringLiteral("gpus-%1.yaml").arg(file)));
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("format: membudget-presets/1\ngpus:\n");
            for (int i = 0; f.size() < 1000 * 1000; ++i)
                f.write(QStringLiteral("- {id: %1%2, memory_gib: 1}\n")
                            .arg(QChar(u'a' + file))
                            .arg(i)
                            .toUtf8());
        }
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("MEMBUDGET_PRESETS"), folder.path());
        QProcess p;
        p.setProcessEnvironment(env);
        QElapsedTimer timer;
        timer.start();
        p.start(QStringLiteral(MEMBUDGET_CLI), {QStringLiteral("presets"), QStringLiteral("gpus")});
        QVERIFY(p.waitForFinished(120000));
        const qint64 ms = timer.elapsed();
        QCOMPARE(p.exitCode(), 0);
        QVERIFY(p.readAllStandardOutput().contains("c30000"));
        QVERIFY2(ms < 20000, qPrintable(QString::number(ms) + " ms"));
    }

    // Loading reads the chosen file and nothing else a user owns: no includes, no paths taken from
    // the file, no executing. Checked from the outside with strace (skipped where it is missing).
    void loadingReadsOnlyTheChosenFile_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("command");
        const QString validate = QStringLiteral("validate");
        for (const char *name : {"scenario-include-tag.yaml",
                                 "scenario-path-as-preset.yaml",
                                 "scenario-python-tag.yaml",
                                 "presets-unknown-key.yaml",
                                 "config-unsupported-type.json",
                                 "snapshot-global-os-system.pickle"})
            QTest::newRow(name) << corpusDir() + QLatin1Char('/') + QLatin1String(name) << 1
                                << validate;
        QTest::newRow("good scenario")
            << QStringLiteral(MEMBUDGET_SOURCE_DIR "/presets/scenarios/qlora-llama-2-7b-24gb.yaml")
            << 0 << validate;
        QTest::newRow("good config.json")
            << QStringLiteral(MEMBUDGET_SOURCE_DIR "/tests/fuzz/seeds/hf_config/mistral-7b.json")
            << 0 << validate;
        // A pickle that would run os.system is refused at its GLOBAL opcode, never executed.
        for (const char *name : {"snapshot-global-os-system.pickle", "snapshot-reduce.pickle"})
            QTest::newRow(qPrintable(QStringLiteral("snapshot ") + QLatin1String(name)))
                << corpusDir() + QLatin1Char('/') + QLatin1String(name) << 1
                << QStringLiteral("snapshot");
        QTest::newRow("good snapshot")
            << QStringLiteral(MEMBUDGET_SOURCE_DIR
                              "/tests/data/snapshots/silmont2000__assignment2-systems__mem_snapshot"
                              ".pickle")
            << 0 << QStringLiteral("snapshot");
    }
    void loadingReadsOnlyTheChosenFile()
    {
        QFETCH(QString, file);
        QFETCH(int, exitCode);
        QFETCH(QString, command);
        const QString strace = QStandardPaths::findExecutable(QStringLiteral("strace"));
        if (strace.isEmpty())
            QSKIP("strace is not installed");
        const QString log = m_tmp.filePath(QStringLiteral("trace.log"));
        QProcess p;
        p.start(strace,
                {QStringLiteral("-f"),
                 QStringLiteral("-qq"),
                 QStringLiteral("-e"),
                 QStringLiteral("trace=open,openat,openat2,execve,execveat,connect"),
                 QStringLiteral("-o"),
                 log,
                 QStringLiteral(MEMBUDGET_CLI),
                 command,
                 file});
        QVERIFY(p.waitForFinished(30000));
        if (p.exitCode() != exitCode && p.readAllStandardError().contains("ptrace"))
            QSKIP("ptrace is not permitted here");
        QCOMPARE(p.exitCode(), exitCode);
        QFile trace(log);
        QVERIFY(trace.open(QIODevice::ReadOnly | QIODevice::Text));
        QStringList opened;
        int execs = 0;
        const QRegularExpression openRe(
            QStringLiteral("open(?:at2?)?\\((?:AT_FDCWD, )?\"([^\"]*)\".*= (\\d+)"));
        while (!trace.atEnd()) {
            const QString line = QString::fromUtf8(trace.readLine());
            if (line.contains(QLatin1String("execve")) && !line.contains(QLatin1String("= -1")))
                ++execs;
            QVERIFY2(!line.contains(QLatin1String("connect(")), qPrintable(line));
            const auto m = openRe.match(line);
            if (!m.hasMatch())
                continue;
            const QString path = m.captured(1);
            static const QStringList system = {QStringLiteral("/usr/"),
                                               QStringLiteral("/lib"),
                                               QStringLiteral("/etc/"),
                                               QStringLiteral("/proc/"),
                                               QStringLiteral("/sys/"),
                                               QStringLiteral("/dev/")};
            if (std::none_of(system.begin(), system.end(), [&](const QString &s) {
                    return path.startsWith(s);
                }))
                opened << path;
        }
        QCOMPARE(execs, 1); // membudget itself; nothing else is started
        QCOMPARE(opened, QStringList{file});
    }

    // A snapshot past the size limit (512 MiB) is refused by its size without being read: a sparse
    // file of 600 MiB takes no disk space and would take seconds to read.
    void hugeSnapshotIsRefusedBySize()
    {
        const QString path = m_tmp.filePath(QStringLiteral("huge.pickle"));
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        QVERIFY(f.resize(qint64(600) << 20));
        f.close();
        for (const char *command : {"snapshot", "validate"}) {
            const QString line = expectOneLineFailure(runCli({QLatin1String(command), path}));
            QVERIFY2(line.startsWith(path
                                     + QStringLiteral(": offset 0: the file's 600 MiB is more than "
                                                      "this reader's limit of 512 MiB")),
                     qPrintable(line));
        }
        QFile::remove(path);
    }

    void snapshotSpecialFiles()
    {
        const QString fifo = m_tmp.filePath(QStringLiteral("pipe.pickle"));
        QCOMPARE(::mkfifo(QFile::encodeName(fifo).constData(), 0600), 0);
        QCOMPARE(expectOneLineFailure(runCli({QStringLiteral("snapshot"), fifo})),
                 fifo + QStringLiteral(": not a regular file"));
        QCOMPARE(expectOneLineFailure(runCli({QStringLiteral("snapshot"), m_tmp.path()})),
                 m_tmp.path() + QStringLiteral(": a folder, not a memory snapshot file"));
        const QString missing = m_tmp.filePath(QStringLiteral("missing.pickle"));
        QCOMPARE(expectOneLineFailure(runCli({QStringLiteral("snapshot"), missing})),
                 missing + QStringLiteral(": no such file"));
        QCOMPARE(expectOneLineFailure(
                     runCli({QStringLiteral("snapshot"), QStringLiteral("/dev/zero")})),
                 QStringLiteral("/dev/zero: not a regular file"));
    }

    // Several files at once: each bad one reported on its own line, the good ones say ok, exit 1.
    void validateReportsEveryFile()
    {
        const QString good = QStringLiteral(MEMBUDGET_SOURCE_DIR
                                            "/presets/scenarios/qlora-llama-2-7b-24gb.yaml");
        const QString a = corpusDir() + QStringLiteral("/scenario-unknown-gpu.yaml");
        const QString b = corpusDir() + QStringLiteral("/config-duplicate-key.json");
        const Result r = runCli({QStringLiteral("validate"), a, good, b});
        QCOMPARE(r.code, 1);
        QCOMPARE(r.err.count('\n'), 2);
        QVERIFY(r.out.contains("qlora-llama-2-7b-24gb.yaml: ok (scenario)"));
    }
};

QTEST_GUILESS_MAIN(TestBadInputs)
#include "tst_bad_inputs.moc"
