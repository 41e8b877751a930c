// SPDX-License-Identifier: GPL-3.0-or-later
// Fetching a config.json from the Hugging Face Hub, against a server on the loopback address that
// serves the published config.json files in tests/data/hub: success and the cache, the cached copy
// when offline, gated and unknown models, a server that never answers, oversized and non-config
// answers, redirects and the token (sent to the Hub only), cancellation. Nothing here reaches any
// other network, and the machine's own Hugging Face token and cache are never read.
#include "hub_config_fetch.h"
#include "hub_test_data.h"
#include "local_http_server.h"

#include "io/preset_catalog.h"
#include "model/parameter_layout.h"

#include <QElapsedTimer>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

using namespace membudget;
using namespace membudget::test;

namespace {

double parameters(const ModelSpec &spec)
{
    return parameterLayout(applyModelSpec(spec, ModelArchitecture{}, false)).total;
}

} // namespace

class TestHubFetch : public QObject
{
    Q_OBJECT

    LocalHttpServer *m_server = nullptr;
    QTemporaryDir *m_cache = nullptr;

    HubSettings settings() const
    {
        HubSettings s;
        s.endpoint = QUrl(m_server->baseUrl());
        s.cacheDir = m_cache->path();
        s.timeoutMs = 5000;
        return s;
    }
    HubFetchResult fetch(const HubSettings &s, const char *id)
    {
        std::string problem;
        const auto ref = parseHubModelRef(id, s.extraHosts(), problem);
        if (!ref)
            qFatal("bad id in test: %s", problem.c_str());
        return fetchHubConfig(s, *ref);
    }

private slots:
    void init()
    {
        m_server = new LocalHttpServer;
        QVERIFY(m_server->listen());
        m_cache = new QTemporaryDir;
        QVERIFY(m_cache->isValid());
        m_server->serveFile(kLlamaConfigPath, hubDataFile("meta-llama/Llama-3.1-70B/config.json"));
    }
    void cleanup()
    {
        delete m_server;
        delete m_cache;
    }

    void downloadsImportsAndCaches()
    {
        const HubFetchResult r = fetch(settings(),
                                       "https://huggingface.co/meta-llama/Llama-3.1-70B");
        QVERIFY2(r.ok(), qPrintable(r.message));
        QCOMPARE(r.outcome, HubFetchOutcome::Downloaded);
        QCOMPARE(static_cast<qint64>(parameters(*r.spec)), Q_INT64_C(70553706496));
        QVERIFY2(r.message.contains(
                     QLatin1String("Fetched the config.json of meta-llama/Llama-3.1-70B")),
                 qPrintable(r.message));
        QCOMPARE(m_server->requests().size(), 1);
        const HttpRequest &req = m_server->requests().front();
        QCOMPARE(req.path, kLlamaConfigPath);
        QVERIFY(req.headers.value("user-agent").startsWith("MemBudget/"));
        QVERIFY(!req.headers.contains("authorization")); // no token configured: none sent
        // The cached copy is the file as served, readable by its owner only.
        QVERIFY(!r.cachePath.isEmpty());
        QVERIFY(r.cachePath.startsWith(m_cache->path()));
        QFile cached(r.cachePath);
        QVERIFY(cached.open(QIODevice::ReadOnly));
        QCOMPARE(cached.readAll(), hubDataFile("meta-llama/Llama-3.1-70B/config.json"));
        QCOMPARE(cached.permissions() & (QFileDevice::ReadGroup | QFileDevice::ReadOther),
                 QFileDevice::Permissions());
    }

    void offlineUsesTheCachedCopy()
    {
        const HubSettings s = settings();
        QVERIFY(fetch(s, "meta-llama/Llama-3.1-70B").ok());
        m_server->close(); // nothing listens any more: connection refused
        const HubFetchResult r = fetch(s, "meta-llama/Llama-3.1-70B");
        QVERIFY2(r.ok(), qPrintable(r.message));
        QCOMPARE(r.outcome, HubFetchOutcome::FromCache);
        QVERIFY2(r.message.startsWith(QLatin1String("Offline: cannot reach 127.0.0.1:")),
                 qPrintable(r.message));
        QVERIFY2(r.message.contains(
                     QLatin1String("used the copy of meta-llama/Llama-3.1-70B cached on")),
                 qPrintable(r.message));
        QCOMPARE(static_cast<qint64>(parameters(*r.spec)), Q_INT64_C(70553706496));
    }

    void hfHubOfflineAsksNothing()
    {
        HubSettings s = settings();
        QVERIFY(fetch(s, "meta-llama/Llama-3.1-70B").ok());
        m_server->clearRequests();
        s.offline = true;
        HubFetchResult r = fetch(s, "meta-llama/Llama-3.1-70B");
        QCOMPARE(r.outcome, HubFetchOutcome::FromCache);
        QVERIFY(r.message.contains(QLatin1String("HF_HUB_OFFLINE")));
        r = fetch(s, "mistralai/Mistral-7B-v0.1");
        QCOMPARE(r.outcome, HubFetchOutcome::Failed);
        QVERIFY2(r.message.contains(
                     QLatin1String("no copy of mistralai/Mistral-7B-v0.1 is cached")),
                 qPrintable(r.message));
        QVERIFY(m_server->requests().isEmpty());
    }

    void offlineWithoutCacheFails()
    {
        m_server->close();
        const HubFetchResult r = fetch(settings(), "meta-llama/Llama-3.1-70B");
        QCOMPARE(r.outcome, HubFetchOutcome::Failed);
        QVERIFY(!r.spec);
        QVERIFY2(r.message.contains(QLatin1String("Offline: cannot reach")), qPrintable(r.message));
        QVERIFY2(r.message.contains(QLatin1String("no copy")), qPrintable(r.message));
    }

    void gatedAndUnknown_data()
    {
        QTest::addColumn<int>("status");
        QTest::addColumn<QByteArray>("code");
        QTest::addColumn<QString>("expected");
        QTest::newRow("gated 401") << 401 << QByteArray("GatedRepo")
                                   << "is a gated model (HTTP 401): accept its licence at "
                                      "http://127.0.0.1";
        QTest::newRow("401 plain")
            << 401 << QByteArray() << "is private, gated or does not exist (HTTP 401)";
        QTest::newRow("403") << 403 << QByteArray() << "forbidden (HTTP 403)";
        QTest::newRow("404") << 404 << QByteArray("RepoNotFound")
                             << "No model meta-llama/Llama-3.1-70B on 127.0.0.1";
        QTest::newRow("no revision")
            << 404 << QByteArray("RevisionNotFound") << "has no revision 'main'";
        QTest::newRow("no config") << 404 << QByteArray("EntryNotFound") << "has no config.json";
        QTest::newRow("418") << 418 << QByteArray() << "answered HTTP 418";
    }
    void gatedAndUnknown()
    {
        QFETCH(int, status);
        QFETCH(QByteArray, code);
        QFETCH(QString, expected);
        m_server->route(kLlamaConfigPath, [=](const HttpRequest &) {
            return HttpResponse::error(status, "Refused", code);
        });
        const HubFetchResult r = fetch(settings(), "meta-llama/Llama-3.1-70B");
        QCOMPARE(r.outcome, HubFetchOutcome::Failed);
        QCOMPARE(r.httpStatus, status);
        QVERIFY2(r.message.contains(expected), qPrintable(r.message));
        if (status == 401 && !code.isEmpty())
            QVERIFY2(r.message.contains(QLatin1String("set HF_TOKEN")), qPrintable(r.message));
        QVERIFY(r.message.endsWith(QLatin1String("nothing was imported")));
        QVERIFY(!QFile::exists(
            QDir(m_cache->path()).filePath(QStringLiteral("127.0.0.1_%1").arg(m_server->port()))));
    }

    void serverErrorFallsBackToCache()
    {
        const HubSettings s = settings();
        QVERIFY(fetch(s, "meta-llama/Llama-3.1-70B").ok());
        m_server->route(kLlamaConfigPath, [](const HttpRequest &) {
            return HttpResponse::error(503, "Service Unavailable");
        });
        const HubFetchResult r = fetch(s, "meta-llama/Llama-3.1-70B");
        QCOMPARE(r.outcome, HubFetchOutcome::FromCache);
        QVERIFY2(r.message.contains(
                     QLatin1String("answered HTTP 503 Service Unavailable: used the copy")),
                 qPrintable(r.message));
    }

    void slowServerTimesOut()
    {
        m_server->route(kLlamaConfigPath, [](const HttpRequest &) {
            HttpResponse r;
            r.stall = true;
            return r;
        });
        HubSettings s = settings();
        s.timeoutMs = 300;
        QElapsedTimer clock;
        clock.start();
        const HubFetchResult r = fetch(s, "meta-llama/Llama-3.1-70B");
        QVERIFY(clock.elapsed() < 4000);
        QCOMPARE(r.outcome, HubFetchOutcome::Failed);
        QVERIFY2(r.message.startsWith(QLatin1String("No answer from 127.0.0.1:")),
                 qPrintable(r.message));
        QVERIFY2(r.message.contains(QLatin1String("within 0.3 s")), qPrintable(r.message));
    }

    void oversizedAnswers_data()
    {
        QTest::addColumn<bool>("withLength");
        QTest::newRow("Content-Length") << true;
        QTest::newRow("streamed") << false;
    }
    void oversizedAnswers()
    {
        QFETCH(bool, withLength);
        m_server->route(kLlamaConfigPath, [withLength](const HttpRequest &) {
            HttpResponse r;
            if (withLength)
                r.body = QByteArray(2 * 1024 * 1024, ' ');
            else
                r.streamBytes = 3 * 1024 * 1024;
            return r;
        });
        const HubFetchResult r = fetch(settings(), "meta-llama/Llama-3.1-70B");
        QCOMPARE(r.outcome, HubFetchOutcome::Failed);
        QVERIFY2(r.message.contains(
                     QLatin1String("is larger than 1.0 MiB, so it is not a config.json")),
                 qPrintable(r.message));
    }

    void notAConfig_data()
    {
        QTest::addColumn<QByteArray>("contentType");
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<QString>("expected");
        QTest::newRow("web page") << QByteArray("text/html; charset=utf-8")
                                  << QByteArray("<html>Sign in</html>")
                                  << "answered with a web page";
        QTest::newRow("error json")
            << QByteArray("application/json") << QByteArray("{\"error\": \"Repository not found\"}")
            << "not a usable config.json: http://127.0.0.1";
        QTest::newRow("duplicate key")
            << QByteArray("application/json")
            << QByteArray("{\"model_type\": \"llama\",\n \"model_type\": \"gpt2\"}")
            << "config.json:2:2: duplicate key \"model_type\"";
        QTest::newRow("not utf-8")
            << QByteArray("application/json") << QByteArray("{\"a\": \"\xff\"}") << "UTF-8";
        QTest::newRow("binary") << QByteArray("application/octet-stream")
                                << QByteArray("\x00\x01\x02", 3) << "config.json:1:1";
    }
    void notAConfig()
    {
        QFETCH(QByteArray, contentType);
        QFETCH(QByteArray, body);
        QFETCH(QString, expected);
        m_server->route(kLlamaConfigPath, [=](const HttpRequest &) {
            HttpResponse r;
            r.headers = {{"Content-Type", contentType}};
            r.body = body;
            return r;
        });
        const HubFetchResult r = fetch(settings(), "meta-llama/Llama-3.1-70B");
        QCOMPARE(r.outcome, HubFetchOutcome::Failed);
        QVERIFY2(r.message.contains(expected), qPrintable(r.message));
        QVERIFY(r.cachePath.isEmpty()); // what did not import is not cached
    }

    void redirects()
    {
        // A renamed model: the Hub answers the old id with a relative redirect to the new one.
        m_server->route("/gpt2/resolve/main/config.json", [](const HttpRequest &) {
            return HttpResponse::redirect(307, "/openai-community/gpt2/resolve/main/config.json");
        });
        m_server->serveFile("/openai-community/gpt2/resolve/main/config.json",
                            hubDataFile("openai-community/gpt2/config.json"));
        HubSettings s = settings();
        s.token = "hf_testtoken";
        s.tokenSource = QStringLiteral("HF_TOKEN");
        const HubFetchResult r = fetch(s, "hf:gpt2");
        QVERIFY2(r.ok(), qPrintable(r.message));
        QCOMPARE(static_cast<qint64>(parameters(*r.spec)), Q_INT64_C(124439808));
        QCOMPARE(m_server->requests().size(), 2);
        QCOMPARE(m_server->requests().at(1).headers.value("authorization"),
                 QByteArray("Bearer hf_testtoken"));
    }

    void redirectLimit()
    {
        m_server->route(kLlamaConfigPath, [](const HttpRequest &) {
            return HttpResponse::redirect(302, kLlamaConfigPath); // to itself, for ever
        });
        const HubFetchResult r = fetch(settings(), "meta-llama/Llama-3.1-70B");
        QCOMPARE(r.outcome, HubFetchOutcome::Failed);
        QVERIFY2(r.message.contains(QLatin1String("More than 5 redirects")), qPrintable(r.message));
        QCOMPARE(m_server->requests().size(), 6);
    }

    void redirectElsewhereGetsNoToken()
    {
        LocalHttpServer other;
        QVERIFY(other.listen());
        other.serveFile(kLlamaConfigPath, hubDataFile("meta-llama/Llama-3.1-70B/config.json"));
        const QByteArray target = other.baseUrl().toUtf8() + kLlamaConfigPath;
        m_server->route(kLlamaConfigPath, [target](const HttpRequest &) {
            return HttpResponse::redirect(302, target);
        });
        HubSettings s = settings();
        s.token = "hf_secret";
        const HubFetchResult r = fetch(s, "meta-llama/Llama-3.1-70B");
        QVERIFY2(r.ok(), qPrintable(r.message));
        QCOMPARE(m_server->requests().front().headers.value("authorization"),
                 QByteArray("Bearer hf_secret"));
        QCOMPARE(other.requests().size(), 1);
        QVERIFY(!other.requests().front().headers.contains("authorization"));
    }

    void redirectToPlainHttpElsewhereRefused()
    {
        m_server->route(kLlamaConfigPath, [](const HttpRequest &) {
            return HttpResponse::redirect(302, "http://example.invalid/config.json");
        });
        const HubFetchResult r = fetch(settings(), "meta-llama/Llama-3.1-70B");
        QCOMPARE(r.outcome, HubFetchOutcome::Failed);
        QVERIFY2(r.message.contains(QLatin1String("not an https address")), qPrintable(r.message));
        QCOMPARE(m_server->requests().size(), 1);
    }

    // The gated model answers only with the right token, which comes from HF_TOKEN or, without it,
    // from the token file of the user's Hugging Face folder ($HF_HOME/token).
    void tokenFromEnvironment_data()
    {
        QTest::addColumn<bool>("fromFile");
        QTest::newRow("HF_TOKEN") << false;
        QTest::newRow("HF_HOME/token") << true;
    }
    void tokenFromEnvironment()
    {
        QFETCH(bool, fromFile);
        const QByteArray body = hubDataFile("meta-llama/Llama-3.1-70B/config.json");
        m_server->route(kLlamaConfigPath, [body](const HttpRequest &req) {
            if (req.headers.value("authorization") != "Bearer hf_gated_ok")
                return HttpResponse::error(401, "Unauthorized", "GatedRepo");
            return HttpResponse::json(body);
        });
        QTemporaryDir home;
        qputenv("HF_ENDPOINT", m_server->baseUrl().toUtf8());
        qputenv("HF_HOME", home.path().toUtf8());
        qunsetenv("HF_TOKEN_PATH");
        qunsetenv("HUGGING_FACE_HUB_TOKEN");
        qunsetenv("HF_HUB_OFFLINE");
        qunsetenv("TRANSFORMERS_OFFLINE");
        if (fromFile) {
            qunsetenv("HF_TOKEN");
            QFile token(home.filePath(QStringLiteral("token")));
            QVERIFY(token.open(QIODevice::WriteOnly));
            token.write("hf_gated_ok\n");
        } else {
            qputenv("HF_TOKEN", "  hf_gated_ok\r\n");
        }
        HubSettings s;
        QString problem;
        QVERIFY2(hubSettingsFromEnvironment(s, problem), qPrintable(problem));
        QCOMPARE(s.token, QByteArray("hf_gated_ok"));
        QCOMPARE(s.tokenSource.endsWith(QLatin1String("token")), fromFile);
        s.cacheDir = m_cache->path();
        const HubFetchResult r = fetch(s, "meta-llama/Llama-3.1-70B");
        QVERIFY2(r.ok(), qPrintable(r.message));
        QCOMPARE(m_server->requests().front().headers.value("authorization"),
                 QByteArray("Bearer hf_gated_ok"));

        // A wrong token gets the gated message naming where the token came from.
        qputenv("HF_TOKEN", "hf_wrong");
        QVERIFY(hubSettingsFromEnvironment(s, problem));
        s.cacheDir.clear();
        const HubFetchResult refused = fetch(s, "meta-llama/Llama-3.1-70B");
        QCOMPARE(refused.outcome, HubFetchOutcome::Failed);
        QVERIFY2(refused.message.contains(
                     QLatin1String("with the account of the token from HF_TOKEN")),
                 qPrintable(refused.message));
        qunsetenv("HF_TOKEN");
        qunsetenv("HF_HOME");
        qunsetenv("HF_ENDPOINT");
    }

    void tokenWithControlCharactersIsNotSent()
    {
        qputenv("HF_TOKEN",
                "abc\x01"
                "def");
        HubSettings s;
        QString problem;
        QVERIFY(hubSettingsFromEnvironment(s, problem));
        QVERIFY(s.token.isEmpty());
        QCOMPARE(s.warnings.size(), 1);
        qunsetenv("HF_TOKEN");
    }

    void endpoints()
    {
        QUrl url;
        QString problem;
        QVERIFY(parseHubEndpoint(QStringLiteral("https://hf-mirror.example/"), url, problem));
        QCOMPARE(url.toString(), QStringLiteral("https://hf-mirror.example"));
        QVERIFY(parseHubEndpoint(QStringLiteral("http://127.0.0.1:8080"), url, problem));
        QVERIFY(parseHubEndpoint(QStringLiteral("http://localhost:8080"), url, problem));
        QVERIFY(!parseHubEndpoint(QStringLiteral("http://mirror.example"), url, problem));
        QVERIFY(problem.contains(QLatin1String("plain http")));
        QVERIFY(!parseHubEndpoint(QStringLiteral("ftp://mirror.example"), url, problem));
        QVERIFY(!parseHubEndpoint(QStringLiteral("https://user:pw@mirror.example"), url, problem));
        QVERIFY(!parseHubEndpoint(QStringLiteral("https://mirror.example/?x=1"), url, problem));
        QVERIFY(!parseHubEndpoint(QStringLiteral("not a url"), url, problem));
        qputenv("HF_ENDPOINT", "http://mirror.example");
        HubSettings s;
        QVERIFY(!hubSettingsFromEnvironment(s, problem));
        qunsetenv("HF_ENDPOINT");
    }

    void cancel()
    {
        m_server->route(kLlamaConfigPath, [](const HttpRequest &) {
            HttpResponse r;
            r.stall = true;
            return r;
        });
        HubConfigFetch fetch(settings());
        QSignalSpy finished(&fetch, &HubConfigFetch::finished);
        fetch.start(HubModelRef{"meta-llama/Llama-3.1-70B"});
        QVERIFY(fetch.isRunning());
        QTRY_COMPARE(m_server->requests().size(), 1);
        fetch.cancel();
        QTRY_COMPARE(finished.size(), 1);
        const auto r = finished.front().front().value<HubFetchResult>();
        QCOMPARE(r.outcome, HubFetchOutcome::Cancelled);
        QVERIFY(!fetch.isRunning());
    }

    void revisionAndCachePerRevision()
    {
        m_server->serveFile("/meta-llama/Llama-3.1-70B/resolve/refs%2Fpr%2F3/config.json",
                            hubDataFile("meta-llama/Llama-3.1-70B/config.json"));
        const HubFetchResult r = fetch(settings(), "hf://meta-llama/Llama-3.1-70B@refs/pr/3");
        QVERIFY2(r.ok(), qPrintable(r.message));
        QCOMPARE(m_server->requests().front().path,
                 QByteArray("/meta-llama/Llama-3.1-70B/resolve/refs%2Fpr%2F3/config.json"));
        QVERIFY(r.cachePath.endsWith(
            QLatin1String("/models--meta-llama--Llama-3.1-70B/refs%2Fpr%2F3/config.json")));
    }
};

QTEST_GUILESS_MAIN(TestHubFetch)
#include "tst_hub_fetch.moc"
