// SPDX-License-Identifier: GPL-3.0-or-later
// Runs the membudget command line as a user would and checks its output and exit codes.
#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QtTest>

#include <limits>

#include <sys/stat.h>

class TestCli : public QObject
{
    Q_OBJECT
private:
    struct Result
    {
        int code = -1;
        QByteArray out;
        QByteArray err;
    };
    static Result run(const QStringList &args)
    {
        // Generous: the sanitizer build on a loaded two-core machine is ten times slower than a
        // release build (speed is bench_core's business, not this test's). A run past it is
        // reported as such, never as a wrong exit code.
        QProcess p;
        p.start(MEMBUDGET_CLI, args);
        if (!p.waitForFinished(180000)) {
            p.kill();
            p.waitForFinished();
            return {-2, {}, "membudget " + args.join(' ').toUtf8() + " ran past 180 s"};
        }
        return {p.exitCode(), p.readAllStandardOutput(), p.readAllStandardError()};
    }
    QString m_dir;
    QString write(const QString &name, const QByteArray &text)
    {
        QFile f(m_dir + "/" + name);
        f.open(QIODevice::WriteOnly);
        f.write(text);
        return f.fileName();
    }

private slots:
    void initTestCase()
    {
        m_dir = QDir::tempPath() + "/membudget-cli-"
                + QString::number(QCoreApplication::applicationPid());
        QDir().mkpath(m_dir);
        qputenv("MEMBUDGET_PRESETS", (m_dir + "/no-user-presets").toUtf8());
    }
    void cleanupTestCase() { QDir(m_dir).removeRecursively(); }

    void estimateSaysTheStack()
    {
        const QString file = write("stack.yaml",
                                   "format: membudget/1\nstack: {name: hf-trainer, version: "
                                   "\"4.46\"}\nmodel: {preset: llama-3.1-8b}\n"
                                   "training: {optimizer: lion}\n");
        Result r = run({"estimate", file, "--json"});
        QCOMPARE(r.code, 0);
        const QJsonObject stack = QJsonDocument::fromJson(r.out).object()["stack"].toObject();
        QCOMPARE(stack["name"].toString(), QString("hf-trainer"));
        QCOMPARE(stack["version"].toString(), QString("4.46"));
        bool sawLoss = false, sawOptimizer = false;
        for (const QJsonValue &v : stack["choices"].toArray()) {
            const QJsonObject c = v.toObject();
            if (c["key"].toString() == "training.loss") {
                sawLoss = true;
                QCOMPARE(c["value"].toString(), QString("hf-4.46"));
                QVERIFY(c["from_stack"].toBool());
            }
            if (c["key"].toString() == "training.optimizer") {
                sawOptimizer = true;
                QCOMPARE(c["value"].toString(), QString("lion"));
                QVERIFY(!c["from_stack"].toBool());
            }
        }
        QVERIFY(sawLoss && sawOptimizer);
        r = run({"estimate", file});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.contains("stack hf-trainer (transformers 4.46): "), r.out.constData());
    }

    void estimateJsonHasTheDocumentedShape()
    {
        const QString file
            = write("s.yaml",
                    "format: membudget/1\nname: test\nmodel: {preset: llama-3.1-8b}\n"
                    "training: {method: lora, micro_batch_size: 2, sequence_length: 2048}\n"
                    "gpus: [a100-80gb, rtx-4090]\n");
        const Result r = run({"estimate", file, "--json"});
        QCOMPARE(r.code, 0);
        const QJsonObject j = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(j["format"].toString(), QString("membudget/1"));
        QCOMPARE(j["parameters"].toInteger(), Q_INT64_C(8030261248));
        QVERIFY(j["trainable_parameters"].toInteger() > 0);
        const QJsonObject g = j["per_gpu"].toObject();
        const QJsonObject comps = g["components"].toObject();
        for (const char *k : {"weights",
                              "gradients",
                              "master_weights",
                              "optimizer_states",
                              "activations",
                              "logits",
                              "temporaries",
                              "cuda_context",
                              "allocator_reserve"})
            QVERIFY2(comps.contains(k), k);
        qint64 allocated = 0;
        for (const char *k : {"weights",
                              "gradients",
                              "master_weights",
                              "optimizer_states",
                              "activations",
                              "logits",
                              "temporaries"})
            allocated += comps[k].toInteger();
        QCOMPARE(allocated, g["peak_allocated"].toInteger());
        QCOMPARE(g["device_total"].toInteger(),
                 g["peak_reserved"].toInteger() + comps["cuda_context"].toInteger());
        for (const char *p : {"forward", "backward", "optimizer_step"})
            QVERIFY2(g["phases"].toObject().contains(p), p);
        QVERIFY(QStringList({"forward", "backward", "optimizer_step"})
                    .contains(g["peak_phase"].toString()));
        const QJsonArray gpus = j["gpus"].toArray();
        QCOMPARE(gpus.size(), 2);
        QCOMPARE(gpus[0].toObject()["id"].toString(), QString("a100-80gb"));
        QVERIFY(gpus[0].toObject()["fits"].toBool());
        QVERIFY(gpus[0].toObject()["max_micro_batch_size"].toInteger() >= 2);
    }

    void estimateTableAndGpuOverride()
    {
        const QString file = write("t.yaml",
                                   "format: membudget/1\nmodel: {preset: mistral-7b-v0.1}\n");
        const Result r = run({"estimate", file, "--gpu", "h100-80gb"});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.contains("Weights"));
        QVERIFY(r.out.contains("h100-80gb"));
        QVERIFY(r.out.contains("Peak:"));
    }

    void badInputExitsOneWithPosition()
    {
        const QString file = write("bad.yaml", "format: membudget/1\ntraining:\n  precision: bf8\n");
        const Result r = run({"estimate", file});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.startsWith((file + ":3:14: unknown precision").toUtf8()), r.err.constData());
        QCOMPARE(run({"validate", file}).code, 1);
        QCOMPARE(run({"estimate", m_dir + "/missing.yaml"}).code, 1);
        QCOMPARE(run({"estimate", file, "--gpu", "no-such-gpu"}).code, 1);
    }

    void usageErrorsExitTwo()
    {
        QCOMPARE(run({"estimate"}).code, 2);
        QCOMPARE(run({"frobnicate"}).code, 2);
        QCOMPARE(run({"estimate", "x.yaml", "--bogus"}).code, 2);
    }

    void presetsValidateFitVersion()
    {
        Result r = run({"presets", "gpus"});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.contains("rtx-4090"));
        r = run({"presets", "--json"});
        QCOMPARE(r.code, 0);
        QVERIFY(QJsonDocument::fromJson(r.out).object()["models"].toArray().size() >= 40);
        QString b200CC, mi210CC = "unset";
        for (const QJsonValue g : QJsonDocument::fromJson(r.out).object()["gpus"].toArray()) {
            if (g["id"] == "b200")
                b200CC = g["compute_capability"].toString();
            if (g["id"] == "mi210")
                mi210CC = g["compute_capability"].isNull() ? "null" : "set";
        }
        QCOMPARE(b200CC, QStringLiteral("10.0"));
        QCOMPARE(mi210CC, QStringLiteral("null"));
        const QString ok = write("ok.yaml", "format: membudget/1\nmodel: {preset: llama-2-7b}\n");
        QCOMPARE(run({"validate", ok}).code, 0);
        const QString big = write(
            "big.yaml",
            "format: membudget/1\nmodel: {preset: llama-3.2-1b}\n"
            "training: {method: full, precision: fp32, attention: eager, micro_batch_size: 8}\n");
        // 16 layers: the advisor replays every candidate's step twice (the first step and a later
        // one), which a sanitizer build on two loaded cores must finish well inside run()'s limit.
        r = run({"fit", big, "--gpu", "rtx-3060-12gb", "--json"});
        QCOMPARE(r.code, 0);
        const QJsonArray fits = QJsonDocument::fromJson(r.out).array();
        QCOMPARE(fits.size(), 1);
        QVERIFY(!fits[0].toObject()["fits"].toBool());
        QVERIFY(!fits[0].toObject()["suggestions"].toArray().isEmpty());
        r = run({"--version"});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.startsWith("membudget "));
    }

    // Names, descriptions and ids from files reach the terminal escaped: no ESC/OSC sequence, C1
    // control (CSI U+009B) or bidi override is printed raw; JSON output is ASCII.
    void textFromFilesIsEscapedForTheTerminal()
    {
        const QByteArray hostile = "\\e]0;pwned\\a \\x9b31m \\u202Eevil \\u200B";
        const QString file = write("hostile.yaml",
                                   "format: membudget/1\nname: \"Name " + hostile
                                       + "\"\ndescription: \"Desc " + hostile
                                       + "\"\nmodel: {preset: llama-2-7b}\ngpus: [rtx-4090]\n");
        QDir().mkpath(m_dir + "/hostile-presets");
        QFile presets(m_dir + "/hostile-presets/p.yaml");
        QVERIFY(presets.open(QIODevice::WriteOnly));
        presets.write("format: membudget-presets/1\ngpus:\n  - {id: \"evil\\e[2J\", name: \"GPU "
                      + hostile + "\", memory_gib: 24}\nmodels:\n  - {id: m, name: \"Model "
                      + hostile
                      + "\", layers: 2, hidden_size: 64, intermediate_size: 128, "
                        "attention_heads: 4, vocab_size: 100}\n");
        presets.close();
        qputenv("MEMBUDGET_PRESETS", (m_dir + "/hostile-presets").toUtf8());
        const auto raw = [](const QByteArray &out) {
            return out.contains('\x1b') || out.contains("\xc2\x9b") || out.contains("\xe2\x80\xae")
                   || out.contains("\xe2\x80\x8b") || out.contains('\x07');
        };
        for (const QStringList &args : {QStringList{"estimate", file},
                                        QStringList{"estimate", file, "--gpu", "evil\x1b[2J"},
                                        QStringList{"presets"},
                                        QStringList{"ladder", file},
                                        QStringList{"fit", file, "--gpu", "evil\x1b[2J"}}) {
            const Result r = run(args);
            QVERIFY2(r.code == 0, r.err.constData());
            QVERIFY2(!raw(r.out) && !raw(r.err), qPrintable(args.join(' ')));
        }
        const Result table = run({"estimate", file});
        QVERIFY2(table.out.contains("Name \\x1B]0;pwned\\x07 \\u009B31m \\u202Eevil \\u200B"),
                 table.out.constData());
        const Result listed = run({"presets", "gpus"});
        QVERIFY2(listed.out.contains("evil\\x1B[2J"), listed.out.constData());
        for (const QStringList &args :
             {QStringList{"estimate", file, "--json"}, QStringList{"presets", "--json"}}) {
            const Result r = run(args);
            QCOMPARE(r.code, 0);
            for (const char c : r.out)
                QVERIFY2(static_cast<unsigned char>(c) < 0x80 && (c >= 0x20 || c == '\n'),
                         qPrintable(args.join(' ')));
            QVERIFY(!QJsonDocument::fromJson(r.out).isNull());
        }
        const QJsonObject j
            = QJsonDocument::fromJson(run({"estimate", file, "--json"}).out).object();
        QCOMPARE(j["name"].toString(),
                 QString::fromUtf8("Name \x1b]0;pwned\x07 \xc2\x9b"
                                   "31m \xe2\x80\xae"
                                   "evil \xe2\x80\x8b"));
        // Error lines too: a C1 control or bidi override in an unknown key.
        const QString bad = write("bad-key.yaml",
                                  "format: membudget/1\nmodel:\n  preset: llama-2-7b\n  "
                                  "\xe2\x80\xaelayers: 3\n");
        const Result e = run({"validate", bad});
        QCOMPARE(e.code, 1);
        QVERIFY2(!raw(e.err) && e.err.contains("'\\u202Elayers'"), e.err.constData());
        qputenv("MEMBUDGET_PRESETS", (m_dir + "/no-user-presets").toUtf8());
    }

    // validate decides the kind of a file by its top-level format key: a scenario whose name
    // mentions the preset format was called "ok (preset)" and never checked as a scenario.
    void validateTellsTheKindByTheFormatKey()
    {
        const QString named = write("named.yaml",
                                    "format: membudget/1\nname: \"format: membudget-presets/1\"\n"
                                    "model: {preset: llama-2-7b}\n");
        Result r = run({"validate", named});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.contains("named.yaml: ok (scenario)"), r.out.constData());
        const QString unknownGpu = QStringLiteral(
            MEMBUDGET_SOURCE_DIR "/tests/data/bad/scenario-name-mentions-presets-format.yaml");
        QCOMPARE(run({"validate", unknownGpu}).code, 1);
        QCOMPARE(run({"estimate", unknownGpu}).code, 1);
        const QString flow
            = write("flow.yaml", "{format: membudget-presets/1, gpus: [{id: x, memory_gib: 8}]}\n");
        r = run({"validate", flow});
        QVERIFY2(r.out.contains("flow.yaml: ok (preset)"), r.out.constData());
    }

    // Saturated figures: no negative parameter count (a double past int64 cast to it), no finite
    // reserve of a saturated total, no "-too large", no "-0 B".
    void saturatedAndZeroFiguresPrintSanely()
    {
        const QString huge
            = write("huge.yaml",
                    "format: membudget/1\nmodel: {layers: 100000, hidden_size: 10000000, "
                    "attention_heads: 100, intermediate_size: 10000000, vocab_size: 100000000}\n"
                    "gpus: [rtx-4090]\n");
        Result r = run({"estimate", huge, "--json"});
        QCOMPARE(r.code, 0);
        const QJsonObject j = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(j["parameters"].toInteger(), std::numeric_limits<qint64>::max());
        const QJsonObject comps = j["per_gpu"].toObject()["components"].toObject();
        QCOMPARE(comps["allocator_reserve"].toInteger(), std::numeric_limits<qint64>::max());
        r = run({"estimate", huge});
        QCOMPARE(r.code, 0);
        const QString table = QString::fromUtf8(r.out);
        QVERIFY2(!table.contains("-too large"), r.out.constData());
        QVERIFY2(table.contains(QRegularExpression("Allocator reserve +too large")),
                 r.out.constData());
        QVERIFY2(table.contains(QRegularExpression("rtx-4090 +23.6 GiB +does not fit +n/a")),
                 r.out.constData());
        // One-token sequences: the optimizer step is the peak, so checkpointing and flash
        // attention leave the device total as it was ("-0 B" before).
        const QString inference = write("one-token.yaml",
                                        "format: membudget/1\nmodel: {preset: llama-2-7b}\n"
                                        "training: {sequence_length: 1, micro_batch_size: 1}\n");
        for (const char *unit : {"", "--gib"}) {
            QStringList args{"ladder", inference};
            if (*unit)
                args << unit;
            r = run(args);
            QCOMPARE(r.code, 0);
            QVERIFY2(!r.out.contains("-0 ") && !r.out.contains("-0.0"), r.out.constData());
            QVERIFY2(r.out.contains(" 0 B "), r.out.constData());
        }
    }

    // import-config -o writes through an exclusive temporary file with an unpredictable name: a
    // link planted where the old writer put "<out>.tmp-<pid>" redirected the write to any file the
    // user can write. It keeps the old file's mode, refuses a link or a read-only file at the
    // destination, and leaves nothing behind.
    void importConfigWritesSafely()
    {
        const QString cfg = QStringLiteral(MEMBUDGET_SOURCE_DIR
                                           "/tests/fuzz/seeds/hf_config/mistral-7b.json");
        const QString dir = m_dir + "/safe-write";
        QVERIFY(QDir().mkpath(dir));
        const QString out = dir + "/out.yaml";
        const QString victim = dir + "/victim.txt";
        write("safe-write/victim.txt", "precious\n");
        // Links for the next few hundred process ids, where the old writer would have written.
        QFile lastPid(QStringLiteral("/proc/sys/kernel/ns_last_pid"));
        if (lastPid.open(QIODevice::ReadOnly)) {
            const int last = lastPid.readAll().trimmed().toInt();
            for (int pid = last + 1; pid < last + 400; ++pid)
                QFile::link(victim, out + ".tmp-" + QString::number(pid));
        }
        Result r = run({"import-config", cfg, "-o", out});
        QVERIFY2(r.code == 0, r.err.constData());
        QFile v(victim);
        QVERIFY(v.open(QIODevice::ReadOnly));
        QCOMPARE(v.readAll(), QByteArray("precious\n"));
        QVERIFY(QFileInfo(out).isFile() && !QFileInfo(out).isSymLink());
        QCOMPARE(run({"validate", out}).code, 0);
        for (const QString &name : QDir(dir).entryList(QDir::Files | QDir::Hidden | QDir::System))
            QVERIFY2(!name.startsWith(".out.yaml.tmp-"), qPrintable(name)); // nothing left behind
        // The mode of the file it replaces stays.
        QVERIFY(QFile::setPermissions(out, QFileDevice::ReadOwner | QFileDevice::WriteOwner));
        QCOMPARE(run({"import-config", cfg, "-o", out}).code, 0);
        struct stat st = {};
        QCOMPARE(::stat(QFile::encodeName(out).constData(), &st), 0);
        QCOMPARE(st.st_mode & 0777, 0600u);
        // A read-only destination is not replaced (rename would, whatever its mode).
        QVERIFY(QFile::setPermissions(out, QFileDevice::ReadOwner | QFileDevice::ReadUser));
        const QByteArray before = [&] {
            QFile f(out);
            return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
        }();
        write("safe-write/other.json",
              R"({"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 2, "vocab_size": 50257})");
        r = run({"import-config", dir + "/other.json", "-o", out});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("out.yaml: the file is read-only"), r.err.constData());
        QFile again(out);
        QVERIFY(again.open(QIODevice::ReadOnly));
        QCOMPARE(again.readAll(), before);
        // A symbolic link at the destination: neither the link nor its target is replaced.
        const QString link = dir + "/link.yaml";
        QVERIFY(QFile::link(victim, link));
        r = run({"import-config", cfg, "-o", link});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("link.yaml: it is a symbolic link"), r.err.constData());
        QVERIFY(QFileInfo(link).isSymLink());
        QVERIFY(v.seek(0));
        QCOMPARE(v.readAll(), QByteArray("precious\n"));
    }

    // On a full disk the old file stays and the reason is the system's. A 64 KiB tmpfs in a private
    // mount namespace (unshare -rm: no root needed where user namespaces are allowed).
    void importConfigOnAFullDiskKeepsTheOldFile()
    {
        const QString cfg = QStringLiteral(MEMBUDGET_SOURCE_DIR
                                           "/tests/fuzz/seeds/hf_config/mistral-7b.json");
        const QString mnt = m_dir + "/full";
        QVERIFY(QDir().mkpath(mnt));
        QProcess p;
        p.start(
            QStringLiteral("unshare"),
            {"-rm",
             "sh",
             "-c",
             "mount -t tmpfs -o size=64k tmpfs \"$1\" || exit 77; printf 'old\\n' > \"$1/s.yaml\"; "
             "head -c 200000 /dev/zero > \"$1/filler\" 2>/dev/null; "
             "\"$2\" import-config \"$3\" -o \"$1/s.yaml\"; rc=$?; cat \"$1/s.yaml\"; "
             "ls -a \"$1\"; exit $rc",
             "sh",
             mnt,
             MEMBUDGET_CLI,
             cfg});
        if (!p.waitForFinished(20000) || p.exitCode() == 77
            || (p.exitCode() != 1 && p.readAllStandardError().contains("unshare")))
            QSKIP("cannot mount a small tmpfs here (unshare -rm)");
        const QByteArray out = p.readAllStandardOutput();
        const QByteArray err = p.readAllStandardError();
        QCOMPARE(p.exitCode(), 1);
        QVERIFY2(err.contains("s.yaml: No space left on device"), err.constData());
        QVERIFY2(out.startsWith("old\n"), out.constData());
        QVERIFY2(!out.contains(".tmp-"), out.constData());
    }

    // The scenario's name comes from the folder: Latin-1 bytes or a C1 control (U+009B) there gave
    // a file that could not be read back.
    void importConfigNameFromAnyFolderLoadsBack()
    {
        const QString cfg = QStringLiteral(MEMBUDGET_SOURCE_DIR
                                           "/tests/fuzz/seeds/hf_config/mistral-7b.json");
        for (const char *folder :
             {"caf\\351", "csi-\\302\\233-x", "nel-\\302\\205-ls-\\342\\200\\250"}) {
            QProcess p;
            p.setWorkingDirectory(m_dir);
            p.start(QStringLiteral("sh"),
                    {"-c",
                     QStringLiteral(
                         "d=$(printf '%1'); mkdir -p \"$d\" && cp \"$2\" \"$d/config.json\" && "
                         "\"$1\" import-config \"$d/config.json\" -o \"$d/out.yaml\" && "
                         "\"$1\" validate \"$d/out.yaml\"")
                         .arg(QLatin1String(folder)),
                     "sh",
                     MEMBUDGET_CLI,
                     cfg});
            QVERIFY(p.waitForFinished(20000));
            QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        }
    }

    // Issue #16 item 13: bundled scenarios by the id `presets` prints; one unit at a time (GiB by
    // default, --gb for decimal, the summary and explanations too); Max seq with separators and
    // "none"; the context length; inference without training-only rows; `fit`'s exit code.
    void bundledScenarioIdsAndUnits()
    {
        const Result list = run({"presets", "scenarios", "--json"});
        QCOMPARE(list.code, 0);
        const QJsonArray scenarios
            = QJsonDocument::fromJson(list.out).object()["scenarios"].toArray();
        QVERIFY(scenarios.size() >= 8);
        for (const QJsonValue &v : scenarios) {
            const QString id = v.toObject()["id"].toString();
            const Result r = run({"estimate", id});
            QVERIFY2(r.code == 0, qPrintable(id + ": " + r.err));
        }
        const Result gib = run({"estimate", "lora-mistral-7b-a100-80gb"});
        const Result gb = run({"estimate", "lora-mistral-7b-a100-80gb", "--gb"});
        QCOMPARE(run({"estimate", "lora-mistral-7b-a100-80gb", "--gib"}).out, gib.out);
        for (const QByteArray &line : gib.out.split('\n'))
            QVERIFY2(!line.contains(" GB") || line.startsWith("LoRA of"), line.constData());
        for (const QByteArray &line : gb.out.split('\n'))
            QVERIFY2(!line.contains("GiB") || line.contains("CUDA context"), line.constData());
        // The peak sentence, the explanation under it and the capacity (CUDA's 79.25 GiB of the
        // A100 80GB, rounded down).
        QVERIFY(gib.out.contains("GiB allocated (torch max_memory_allocated)"));
        QVERIFY2(QString::fromUtf8(gib.out).contains(
                     QRegularExpression(QStringLiteral(
                                            "^\\w[\\w ]* peaks .*: [0-9.]+ GiB allocated"),
                                        QRegularExpression::MultilineOption)),
                 gib.out.constData());
        QVERIFY2(gib.out.contains(" 79.2 GiB "), gib.out.constData());
        QCOMPARE(run({"estimate", "lora-mistral-7b-a100-80gb", "--gb", "--gib"}).code, 2);
        const Result presets = run({"presets", "gpus"});
        QVERIFY(presets.out.contains("23.6 GiB usable  NVIDIA GeForce RTX 4090 24GB"));
        // ROCm reports the driver's total as CUDA's: known, though no lower.
        QVERIFY(presets.out.contains("63.9 GiB usable  AMD Instinct MI210 64GB"));
        QVERIFY(presets.out.contains("128 GiB         Intel Gaudi 3 128GB"));
        QVERIFY(run({"presets", "gpus", "--gb"})
                    .out.contains("25.3 GB usable  NVIDIA GeForce RTX 4090"));
        QCOMPARE(run({"estimate", "no-such-scenario"}).code, 1);
    }

    void maxSequenceContextAndInferenceRows()
    {
        // Mixtral's context is 32,768 tokens: the larger GPUs stop there, the 24 GB card fits none.
        const Result r = run({"estimate", "inference-mixtral-8x7b-nf4"});
        QCOMPARE(r.code, 0);
        QVERIFY2(r.out.contains("32,768*"), r.out.constData());
        QVERIFY(r.out.contains("* the model's context length"));
        QVERIFY(r.out.contains("none        none"));
        for (const char *row : {"Gradients", "Master weights", "Optimizer states"})
            QVERIFY2(!r.out.contains(row), row);
        QVERIFY(r.out.contains("KV cache"));
        const Result train = run({"estimate", "lora-mistral-7b-a100-80gb"});
        QVERIFY(!train.out.contains("KV cache"));
        // Max seq. with thousands separators ("20,816"), not "20816".
        QVERIFY2(QString::fromUtf8(train.out).contains(
                     QRegularExpression(QStringLiteral(" \\d{1,3}(,\\d{3})+\\n"))),
                 train.out.constData());

        const QString longer = write("long.yaml",
                                     "format: membudget/1\nmodel: {preset: mistral-7b-v0.1}\n"
                                     "training: {sequence_length: 500000}\n");
        const Result warned = run({"estimate", longer});
        QCOMPARE(warned.code, 0);
        QVERIFY2(warned.out.contains("Warning: 500,000 tokens is beyond the model's context length "
                                     "of 32,768"),
                 warned.out.constData());
        const QString scaled
            = write("scaled.yaml",
                    "format: membudget/1\nmodel: {preset: mistral-7b-v0.1, "
                    "rope_scaling_factor: 16}\ntraining: {sequence_length: 500000}\n");
        QVERIFY(!run({"estimate", scaled}).out.contains("Warning:"));
    }

    void qloraGradientsExplanationMatchesItsNumber()
    {
        // Gradient accumulation keeps every gradient: the line must not say "last layer so far".
        const Result r = run({"estimate", "qlora-llama-2-7b-24gb"});
        QVERIFY(!r.out.contains("last layer so far"));
        QVERIFY(r.out.contains("gradient accumulation keeps them"));
        const QString single = write(
            "single.yaml",
            "format: membudget/1\nmodel: {preset: llama-2-7b}\n"
            "training: {method: qlora, quantization: nf4, precision: bf16, micro_batch_size: 4,"
            " sequence_length: 2048, gradient_accumulation_steps: 1, gradient_checkpointing: "
            "full, attention: flash, optimizer: paged-adamw-8bit}\n");
        const Result one = run({"estimate", single, "--json"});
        const QJsonObject g = QJsonDocument::fromJson(one.out).object()["per_gpu"].toObject();
        const QString formula = g["formulas"].toObject()["gradients"].toString();
        if (g["peak_phase"].toString() == "backward" && formula.contains("so far"))
            QVERIFY2(formula.startsWith("gradients of the lm_head and the last layer so far"),
                     qPrintable(formula));
    }

    void fitExitCodeWhenNothingFits()
    {
        // 70B at 128k tokens on a 10 GB card: not even the checkpointed layer inputs fit.
        const QString huge = write("huge.yaml",
                                   "format: membudget/1\nmodel: {preset: llama-3.1-70b}\n"
                                   "training: {method: full, precision: fp32, micro_batch_size: 1, "
                                   "sequence_length: 131072}\n");
        const Result none = run({"fit", huge, "--gpu", "rtx-3080"});
        QCOMPARE(none.code, 3);
        QVERIFY(none.out.contains("No combination of techniques makes it fit"));
        QCOMPARE(run({"fit", huge, "--gpu", "rtx-3080", "--json"}).code, 3);
        const Result some = run(
            {"fit", "full-llama-3.2-1b-fp32-baseline", "--gpu", "rtx-4090", "--limit", "20"});
        QCOMPARE(some.code, 0);
        QVERIFY(some.out.contains("(same effective batch)"));
        // One GPU fits already, the other has suggestions: success.
        QCOMPARE(run({"fit",
                      "full-llama-3.2-1b-fp32-baseline",
                      "--gpu",
                      "a100-80gb",
                      "--gpu",
                      "rtx-4090"})
                     .code,
                 0);
    }

    void importConfig()
    {
        const QString cfg
            = write("config.json",
                    R"({"model_type": "qwen2", "hidden_size": 3584, "intermediate_size": 18944,
            "num_attention_heads": 28, "num_hidden_layers": 28, "num_key_value_heads": 4, "vocab_size": 152064,
            "tie_word_embeddings": false})");
        const Result r = run({"import-config", cfg, "-o", m_dir + "/imported.yaml"});
        QCOMPARE(r.code, 0);
        const Result e = run({"estimate", m_dir + "/imported.yaml", "--json"});
        QCOMPARE(e.code, 0);
        // Qwen2.5-7B: 7,615,616,512 parameters.
        QCOMPARE(QJsonDocument::fromJson(e.out).object()["parameters"].toInteger(),
                 Q_INT64_C(7615616512));
    }

    void exportConfig()
    {
        const QString scenario = QStringLiteral(
            MEMBUDGET_SOURCE_DIR "/presets/scenarios/lora-mistral-7b-a100-80gb.yaml");
        Result r = run({"export-config", scenario, "--format", "deepspeed"});
        QCOMPARE(r.code, 0);
        const QJsonObject j = QJsonDocument::fromJson(r.out).object();
        QCOMPARE(j["train_micro_batch_size_per_gpu"].toInt(), 4);
        QVERIFY(r.err.startsWith("note: ")); // JSON has no comments: the notes go to stderr
        const QString out = m_dir + "/train.py";
        r = run({"export-config", scenario, "-o", out});
        QCOMPARE(r.code, 0);
        QCOMPARE(r.out, QByteArray("wrote ") + out.toUtf8() + "\n");
        QFile f(out);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QVERIFY(f.readAll().contains("TrainingArguments("));
        r = run({"export-config", scenario, "--format", "yaml"});
        QCOMPARE(r.code, 2);
        r = run({"export-config",
                 QStringLiteral(MEMBUDGET_SOURCE_DIR
                                "/presets/scenarios/inference-mixtral-8x7b-nf4.yaml")});
        QCOMPARE(r.code, 1);
        QVERIFY(r.err.contains("inference scenario"));
        QVERIFY(r.out.isEmpty());
        // Weight formats without an export say so.
        r = run({"export-config",
                 QStringLiteral(MEMBUDGET_SOURCE_DIR
                                "/presets/scenarios/inference-llama-3.1-8b-gptq-32-streams.yaml")});
        QCOMPARE(r.code, 1);
        // A failed write keeps what was there.
        r = run({"export-config", scenario, "-o", m_dir + "/no-such-folder/x.py"});
        QCOMPARE(r.code, 1);
        QVERIFY(r.err.contains("cannot write"));
    }

    // Generation, the weight format and the decode stage reach the table and the JSON.
    void estimateGeneration()
    {
        const QString file = QStringLiteral(
            MEMBUDGET_SOURCE_DIR "/presets/scenarios/inference-llama-3.1-8b-gptq-32-streams.yaml");
        Result r = run({"estimate", file});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.contains("32 sequences x 2048 prompt + 2048 generated tokens"));
        QVERIFY(r.out.contains("gptq 4.16 bits/weight"));
        QVERIFY(r.out.contains("generating the last token"));
        r = run({"estimate", file, "--json"});
        QCOMPARE(r.code, 0);
        const QJsonObject j = QJsonDocument::fromJson(r.out).object();
        const QJsonObject inference = j["inference"].toObject();
        QCOMPARE(inference["sequences"].toInt(), 32);
        QCOMPARE(inference["cache_positions"].toInt(), 4096);
        QCOMPARE(inference["kv_cache"].toString(), QStringLiteral("dynamic"));
        QCOMPARE(j["weight_format"].toObject()["quantization"].toString(), QStringLiteral("gptq"));
        const QJsonObject perGpu = j["per_gpu"].toObject();
        QCOMPARE(perGpu["peak_moments"].toObject()["forward"].toObject()["stage"].toString(),
                 QStringLiteral("decode"));
        // 2 x 32 layers x 32 sequences x 4096 positions x 1024 x 2 B, plus torch.cat's copy.
        QVERIFY(perGpu["components"].toObject()["kv_cache"].toDouble()
                > 2.0 * 32 * 32 * 4096 * 2048);
    }

    // A pipeline's estimate names its stage and lists every stage's peak; --stage N shows stage N
    // (the JSON's each_stage gives the same peaks), and a stage the scenario lacks is a usage error.
    void estimatePipelineStages()
    {
        const QString file = QStringLiteral(
            MEMBUDGET_SOURCE_DIR "/presets/scenarios/full-llama-3.1-8b-4x-rtx-4090-pipeline.yaml");
        Result r = run({"estimate", file, "--json"});
        QCOMPARE(r.code, 0);
        const QJsonObject worst
            = QJsonDocument::fromJson(r.out).object()["per_gpu"].toObject()["pipeline"].toObject();
        const QJsonArray each = worst["each_stage"].toArray();
        QCOMPARE(each.size(), 4);
        r = run({"estimate", file, "--json", "--stage", "2"});
        QCOMPARE(r.code, 0);
        const QJsonObject second = QJsonDocument::fromJson(r.out).object()["per_gpu"].toObject();
        QCOMPARE(second["pipeline"].toObject()["stage"].toInt(), 1);
        QCOMPARE(second["peak_allocated"].toDouble(),
                 each[1].toObject()["peak_allocated"].toDouble());
        QCOMPARE(each[1].toObject()["in_flight_micro_batches"].toDouble(), 3.0);
        QVERIFY(each[1].toObject()["peak_allocated"].toDouble()
                != each[worst["stage"].toInt()].toObject()["peak_allocated"].toDouble());
        r = run({"estimate", file, "--stage", "2"});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.contains("stage 2 of 4"));
        QVERIFY(r.out.contains("as --stage asks"));
        QVERIFY(r.out.contains("Allocated peak by stage: 1: "));
        r = run({"estimate", file, "--stage", "5"});
        QCOMPARE(r.code, 2);
        QVERIFY(r.err.contains("the pipeline has stages 1 to 4"));
        r = run({"estimate", "full-gpt2-amp-16gb", "--stage", "1"});
        QCOMPARE(r.code, 2);
        QVERIFY(r.err.contains("runs no pipeline"));
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
