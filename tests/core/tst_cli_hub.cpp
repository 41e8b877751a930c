// SPDX-License-Identifier: GPL-3.0-or-later
// `membudget import-config <Hugging Face model>` as a user runs it, against a server on the
// loopback address (HF_ENDPOINT) serving the published config.json files in tests/data/hub: the
// scenario written, the cache used offline, gated and unknown models, a server that never answers,
// and ids refused before any request. The child's environment has no Hugging Face token or cache of
// the machine's user: a fresh CI machine has neither.
#include "hub_test_data.h"
#include "local_http_server.h"

#include <QElapsedTimer>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

using namespace membudget::test;

class TestCliHub : public QObject
{
    Q_OBJECT

    struct Result
    {
        int code = -1;
        QByteArray out;
        QByteArray err;
    };

    LocalHttpServer *m_server = nullptr;
    QTemporaryDir *m_dir = nullptr;
    QByteArray m_token;

    // Runs the command line while this process's event loop keeps the server answering.
    Result run(const QStringList &args)
    {
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        for (const QString &k : env.keys())
            if (k.startsWith(QLatin1String("HF_")) || k == QLatin1String("HUGGING_FACE_HUB_TOKEN")
                || k == QLatin1String("TRANSFORMERS_OFFLINE"))
                env.remove(k);
        env.insert(QStringLiteral("HF_ENDPOINT"), m_server->baseUrl());
        env.insert(QStringLiteral("HF_HOME"), m_dir->filePath(QStringLiteral("hf-home")));
        env.insert(QStringLiteral("XDG_CACHE_HOME"), m_dir->filePath(QStringLiteral("cache")));
        env.insert(QStringLiteral("MEMBUDGET_PRESETS"), m_dir->filePath(QStringLiteral("none")));
        if (!m_token.isEmpty())
            env.insert(QStringLiteral("HF_TOKEN"), QString::fromLatin1(m_token));
        p.setProcessEnvironment(env);
        p.setWorkingDirectory(m_dir->path());
        p.start(QStringLiteral(MEMBUDGET_CLI), args);
        if (!p.waitForStarted())
            return {};
        if (!QTest::qWaitFor([&] { return p.state() == QProcess::NotRunning; }, 30000))
            p.kill();
        return {p.exitCode(), p.readAllStandardOutput(), p.readAllStandardError()};
    }
    qint64 parametersOf(const QString &scenario)
    {
        const Result e = run({QStringLiteral("estimate"), scenario, QStringLiteral("--json")});
        return QJsonDocument::fromJson(e.out).object()[QLatin1String("parameters")].toInteger();
    }

private slots:
    void init()
    {
        m_server = new LocalHttpServer;
        QVERIFY(m_server->listen());
        m_dir = new QTemporaryDir;
        m_token.clear();
        m_server->serveFile(kLlamaConfigPath, hubDataFile("meta-llama/Llama-3.1-70B/config.json"));
        m_server->serveFile("/mistralai/Mistral-7B-v0.1/resolve/main/config.json",
                            hubDataFile("mistralai/Mistral-7B-v0.1/config.json"));
    }
    void cleanup()
    {
        delete m_server;
        delete m_dir;
    }

    void importsByIdAndCaches()
    {
        const QString out = m_dir->filePath(QStringLiteral("x.yaml"));
        const Result r = run({"import-config", "meta-llama/Llama-3.1-70B", "-o", out});
        QVERIFY2(r.code == 0, r.err.constData());
        QVERIFY2(r.err.contains("Fetched the config.json of meta-llama/Llama-3.1-70B"),
                 r.err.constData());
        QFile f(out);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray yaml = f.readAll();
        QVERIFY2(yaml.contains("source: meta-llama/Llama-3.1-70B\n"), yaml.constData());
        QVERIFY(yaml.contains("name: meta-llama/Llama-3.1-70B\n"));
        QCOMPARE(parametersOf(out), Q_INT64_C(70553706496));
        QVERIFY(QFile::exists(m_dir->filePath(
            QStringLiteral(
                "cache/membudget/hub/127.0.0.1_%1/models--meta-llama--Llama-3.1-70B/main/"
                "config.json")
                .arg(m_server->port()))));

        // Offline: the server is gone, the cached copy is used and the message says so.
        m_server->close();
        const Result offline = run({"import-config", "hf:meta-llama/Llama-3.1-70B"});
        QVERIFY2(offline.code == 0, offline.err.constData());
        QVERIFY2(offline.err.startsWith("Offline: cannot reach 127.0.0.1:"),
                 offline.err.constData());
        QVERIFY(offline.err.contains("used the copy of meta-llama/Llama-3.1-70B cached on"));
        QVERIFY(offline.out.contains("hidden_size: 8192"));
    }

    void pastedAddress()
    {
        const Result r = run(
            {"import-config", m_server->baseUrl() + "/mistralai/Mistral-7B-v0.1/tree/main"});
        QVERIFY2(r.code == 0, r.err.constData());
        QVERIFY(r.out.contains("source: mistralai/Mistral-7B-v0.1"));
        QCOMPARE(m_server->requests().size(), 1);
        QCOMPARE(m_server->requests().front().path,
                 QByteArray("/mistralai/Mistral-7B-v0.1/resolve/main/config.json"));
        // huggingface.co addresses name the model; the request goes to HF_ENDPOINT.
        const Result hf = run({"import-config", "https://huggingface.co/mistralai/Mistral-7B-v0.1"});
        QVERIFY2(hf.code == 0, hf.err.constData());
        QCOMPARE(m_server->requests().size(), 2);
    }

    void offlineFlagAsksNothing()
    {
        const Result r = run({"import-config", "meta-llama/Llama-3.1-70B", "--offline"});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("no copy of meta-llama/Llama-3.1-70B is cached"), r.err.constData());
        QVERIFY(m_server->requests().isEmpty());
    }

    void gatedNeedsTheToken()
    {
        const QByteArray body = hubDataFile("meta-llama/Llama-3.1-70B/config.json");
        m_server->route(kLlamaConfigPath, [body](const HttpRequest &req) {
            if (req.headers.value("authorization") != "Bearer hf_cli_token")
                return HttpResponse::error(401, "Unauthorized", "GatedRepo");
            return HttpResponse::json(body);
        });
        const Result refused = run({"import-config", "meta-llama/Llama-3.1-70B"});
        QCOMPARE(refused.code, 1);
        QVERIFY2(refused.err.contains("is a gated model (HTTP 401): accept its licence at"),
                 refused.err.constData());
        QVERIFY(refused.err.contains("set HF_TOKEN"));
        QVERIFY(refused.out.isEmpty());
        m_token = "hf_cli_token";
        const Result ok = run({"import-config", "meta-llama/Llama-3.1-70B"});
        QVERIFY2(ok.code == 0, ok.err.constData());
        QCOMPARE(m_server->requests().last().headers.value("authorization"),
                 QByteArray("Bearer hf_cli_token"));
    }

    void unknownModel()
    {
        const Result r = run({"import-config", "nobody/no-such-model"});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("No model nobody/no-such-model on 127.0.0.1"), r.err.constData());
    }

    void slowServer()
    {
        m_server->route(kLlamaConfigPath, [](const HttpRequest &) {
            HttpResponse r;
            r.stall = true;
            return r;
        });
        QElapsedTimer clock;
        clock.start();
        const Result r = run({"import-config", "meta-llama/Llama-3.1-70B", "--timeout", "0.5"});
        QCOMPARE(r.code, 1);
        QVERIFY(clock.elapsed() < 10000);
        QVERIFY2(r.err.contains("No answer from 127.0.0.1"), r.err.constData());
    }

    void oversized()
    {
        m_server->route(kLlamaConfigPath, [](const HttpRequest &) {
            HttpResponse r;
            r.streamBytes = 2 * 1024 * 1024;
            return r;
        });
        const Result r = run({"import-config", "meta-llama/Llama-3.1-70B"});
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("larger than 1.0 MiB"), r.err.constData());
    }

    void badIdsAskNothing_data()
    {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("message");
        QTest::newRow("traversal") << "hf:../../etc/passwd"
                                   << "one '/'";
        QTest::newRow("dotdot name") << "hf:meta-llama/.."
                                     << "start or end";
        QTest::newRow("other site") << "https://example.com/meta-llama/Llama-3.1-70B"
                                    << "not a Hugging Face address";
        QTest::newRow("dataset") << "https://huggingface.co/datasets/org/data"
                                 << "dataset";
        QTest::newRow("bad revision") << "hf:meta-llama/Llama-3.1-70B@../../x"
                                      << "'..'";
        QTest::newRow("escape in id") << "hf:meta-llama/\x1b[31mred"
                                      << "\\x1B";
    }
    void badIdsAskNothing()
    {
        QFETCH(QString, source);
        QFETCH(QString, message);
        const Result r = run({"import-config", source});
        QCOMPARE(r.code, 1);
        QVERIFY2(QString::fromUtf8(r.err).contains(message), r.err.constData());
        QVERIFY(!r.err.contains('\x1b')); // the terminal never sees what was typed raw
        QVERIFY(m_server->requests().isEmpty());
    }

    // A local folder that looks like an id is read from disk, not fetched.
    void existingFolderWins()
    {
        QVERIFY(QDir(m_dir->path()).mkpath(QStringLiteral("org/model")));
        QFile f(m_dir->filePath(QStringLiteral("org/model/config.json")));
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(hubDataFile("mistralai/Mistral-7B-v0.1/config.json"));
        f.close();
        const Result r = run({"import-config", "org/model"});
        QVERIFY2(r.code == 0, r.err.constData());
        QVERIFY(r.out.contains("hidden_size: 4096"));
        QVERIFY(m_server->requests().isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestCliHub)
#include "tst_cli_hub.moc"
