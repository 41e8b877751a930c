// SPDX-License-Identifier: GPL-3.0-or-later
// Runs the membudget command line as a user would and checks its output and exit codes.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QtTest>

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
        QProcess p;
        p.start(MEMBUDGET_CLI, args);
        p.waitForFinished(30000);
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
        const QString ok = write("ok.yaml", "format: membudget/1\nmodel: {preset: llama-2-7b}\n");
        QCOMPARE(run({"validate", ok}).code, 0);
        const QString big = write(
            "big.yaml",
            "format: membudget/1\nmodel: {preset: llama-3.1-8b}\n"
            "training: {method: full, precision: fp32, attention: eager, micro_batch_size: 8}\n");
        r = run({"fit", big, "--gpu", "a100-80gb", "--json"});
        QCOMPARE(r.code, 0);
        const QJsonArray fits = QJsonDocument::fromJson(r.out).array();
        QCOMPARE(fits.size(), 1);
        QVERIFY(!fits[0].toObject()["fits"].toBool());
        QVERIFY(!fits[0].toObject()["suggestions"].toArray().isEmpty());
        r = run({"--version"});
        QCOMPARE(r.code, 0);
        QVERIFY(r.out.startsWith("membudget "));
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
        // A failed write keeps what was there.
        r = run({"export-config", scenario, "-o", m_dir + "/no-such-folder/x.py"});
        QCOMPARE(r.code, 1);
        QVERIFY(r.err.contains("cannot write"));
    }
};

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
