// SPDX-License-Identifier: GPL-3.0-or-later
// Runs the membudget command line as a user would and checks its output and exit codes.
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
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
        // The peak sentence, the explanation under it and the capacity (rounded down: 80 GiB).
        QVERIFY(gib.out.contains("GiB allocated (torch max_memory_allocated)"));
        QVERIFY2(QString::fromUtf8(gib.out).contains(
                     QRegularExpression(QStringLiteral(
                                            "^\\w[\\w ]* peaks .*: [0-9.]+ GiB allocated"),
                                        QRegularExpression::MultilineOption)),
                 gib.out.constData());
        QVERIFY(gib.out.contains(" 80 GiB "));
        QCOMPARE(run({"estimate", "lora-mistral-7b-a100-80gb", "--gb", "--gib"}).code, 2);
        const Result presets = run({"presets", "gpus"});
        QVERIFY(presets.out.contains("23.9 GiB  NVIDIA GeForce RTX 4090 24GB"));
        QVERIFY(run({"presets", "gpus", "--gb"}).out.contains("25.7 GB  NVIDIA GeForce RTX 4090"));
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
        const Result some = run({"fit", "full-llama-3.2-1b-fp32-baseline", "--gpu", "rtx-4090"});
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
};

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"
