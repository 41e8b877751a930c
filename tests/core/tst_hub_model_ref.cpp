// SPDX-License-Identifier: GPL-3.0-or-later
// Hugging Face model ids and addresses: what is accepted, what is refused before any request, and
// the request and cache paths built from an accepted one.
#include "hub/hub_model_ref.h"

#include <QtTest>

using namespace membudget;

class TestHubModelRef : public QObject
{
    Q_OBJECT
private slots:
    void accepted_data()
    {
        QTest::addColumn<QString>("input");
        QTest::addColumn<QString>("id");
        QTest::addColumn<QString>("revision");
        auto row = [](const char *name, const char *in, const char *id, const char *rev) {
            QTest::newRow(name) << in << id << rev;
        };
        row("owner/name", "meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.1-70B", "main");
        row("spaces around", "  mistralai/Mistral-7B-v0.1 \n", "mistralai/Mistral-7B-v0.1", "main");
        row("revision", "Qwen/Qwen3-8B@v1.0", "Qwen/Qwen3-8B", "v1.0");
        row("pr revision", "hf://Qwen/Qwen3-8B@refs/pr/3", "Qwen/Qwen3-8B", "refs/pr/3");
        row("hf: prefix", "hf:gpt2", "gpt2", "main");
        row("hf:// models", "hf://models/google/gemma-2-9b", "google/gemma-2-9b", "main");
        row("page",
            "https://huggingface.co/meta-llama/Llama-3.1-70B",
            "meta-llama/Llama-3.1-70B",
            "main");
        row("page slash",
            "https://huggingface.co/meta-llama/Llama-3.1-70B/",
            "meta-llama/Llama-3.1-70B",
            "main");
        row("tree",
            "https://huggingface.co/mistralai/Mistral-7B-v0.1/tree/main",
            "mistralai/Mistral-7B-v0.1",
            "main");
        row("blob file",
            "https://huggingface.co/Qwen/Qwen3-8B/blob/abc123/config.json",
            "Qwen/Qwen3-8B",
            "abc123");
        row("resolve %2F",
            "https://huggingface.co/Qwen/Qwen3-8B/resolve/refs%2Fpr%2F7/config.json",
            "Qwen/Qwen3-8B",
            "refs/pr/7");
        row("no scheme",
            "huggingface.co/google/gemma-2-2b?library=transformers#x",
            "google/gemma-2-2b",
            "main");
        row("hf.co", "hf.co/openai-community/gpt2", "openai-community/gpt2", "main");
        row("upper host", "HTTPS://HuggingFace.co/a/b", "a/b", "main");
        row("legacy single", "https://huggingface.co/gpt2/tree/main", "gpt2", "main");
        row("endpoint host", "http://127.0.0.1:8080/org/model/tree/dev", "org/model", "dev");
    }
    void accepted()
    {
        QFETCH(QString, input);
        QFETCH(QString, id);
        QFETCH(QString, revision);
        std::string problem;
        const auto ref = parseHubModelRef(input.toStdString(), {"127.0.0.1:8080"}, problem);
        QVERIFY2(ref.has_value(), problem.c_str());
        QCOMPARE(QString::fromStdString(ref->repoId), id);
        QCOMPARE(QString::fromStdString(ref->revision), revision);
        QVERIFY(problem.empty());
    }

    void refused_data()
    {
        QTest::addColumn<QString>("input");
        QTest::addColumn<QString>("why");
        auto row = [](const char *name, const char *in, const char *why) {
            QTest::newRow(name) << in << why;
        };
        row("empty", "   ", "no model given");
        row("traversal", "../etc/passwd", "one '/'");
        row("traversal 2", "../passwd", "start or end");
        row("traversal in name", "meta-llama/..", "start or end");
        row("three parts", "a/b/c", "one '/'");
        row("dotdot", "a/b..c", "'..'");
        row("dashdash", "a/b--c", "'--'");
        row("dot git", "a/b.git", ".git");
        row("space", "meta llama/x", "no spaces");
        row("control", "a/b\x01", "no spaces, control");
        row("non-ascii", "a/b\xC3\xA9", "non-ASCII");
        row("backslash", "a\\b", "letters, digits");
        row("percent", "a/b%2e", "letters, digits");
        row("long name", QByteArray(97, 'x').prepend("a/").constData(), "96");
        row("rev dotdot", "a/b@../../x", "'..'");
        row("rev slash", "a/b@/main", "start or end");
        row("rev empty", "a/b@", "empty");
        row("rev odd", "a/b@ma:in", "revision uses");
        row("other host", "https://example.com/a/b", "not a Hugging Face address");
        row("lookalike", "https://huggingface.co.evil.net/a/b", "not a Hugging Face address");
        row("userinfo", "https://user@huggingface.co/a/b", "user name");
        row("ftp", "ftp://huggingface.co/a/b", "only http and https");
        row("file", "file:///etc/passwd", "only http and https");
        row("dataset", "https://huggingface.co/datasets/org/data", "dataset");
        row("space repo", "hf://spaces/org/app", "space");
        row("bad escape", "https://huggingface.co/a/b%zz", "malformed");
        row("encoded traversal", "https://huggingface.co/a/%2e%2e", "start or end");
        row("no model", "https://huggingface.co/", "names no model");
        row("endpoint not given", "http://127.0.0.1:9/a/b", "not a Hugging Face address");
    }
    void refused()
    {
        QFETCH(QString, input);
        QFETCH(QString, why);
        std::string problem;
        const auto ref = parseHubModelRef(input.toStdString(), {}, problem);
        QVERIFY2(!ref.has_value(), qPrintable(input));
        QVERIFY2(QString::fromStdString(problem).contains(why), problem.c_str());
        // The message is one printable line whatever was typed.
        for (char c : problem)
            QVERIFY(static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7F);
    }

    void looksLikeHub()
    {
        QVERIFY(looksLikeHubReference("meta-llama/Llama-3.1-70B"));
        QVERIFY(looksLikeHubReference("Qwen/Qwen3-8B@v1"));
        QVERIFY(looksLikeHubReference("hf:gpt2"));
        QVERIFY(looksLikeHubReference("https://huggingface.co/a/b"));
        QVERIFY(looksLikeHubReference("hf.co/a/b"));
        QVERIFY(!looksLikeHubReference("Llama 3.1 8B"));
        QVERIFY(!looksLikeHubReference("gpt2"));
        QVERIFY(!looksLikeHubReference("./models/config.json"));
        QVERIFY(!looksLikeHubReference("/home/me/config.json"));
        QVERIFY(!looksLikeHubReference("a/b/config.json"));
    }

    void paths()
    {
        const HubModelRef ref{"Qwen/Qwen3-8B", "refs/pr/3"};
        QCOMPARE(hubConfigPath(ref), std::string("Qwen/Qwen3-8B/resolve/refs%2Fpr%2F3/config.json"));
        QCOMPARE(hubCacheRelativePath("huggingface.co", ref),
                 std::string("huggingface.co/models--Qwen--Qwen3-8B/refs%2Fpr%2F3/config.json"));
        QCOMPARE(hubCacheRelativePath("127.0.0.1:8080", HubModelRef{"gpt2", "main"}),
                 std::string("127.0.0.1_8080/models--gpt2/main/config.json"));
        QCOMPARE(hubCacheRelativePath("..", HubModelRef{"a/b", "main"}),
                 std::string("_/models--a--b/main/config.json"));
        QCOMPARE(ref.toString(), std::string("Qwen/Qwen3-8B@refs/pr/3"));
        QCOMPARE(HubModelRef{"a/b"}.toString(), std::string("a/b"));
    }
};

QTEST_APPLESS_MAIN(TestHubModelRef)
#include "tst_hub_model_ref.moc"
