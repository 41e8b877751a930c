// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/hf_config_import.h"
#include "io/preset_catalog.h"
#include "model/parameter_layout.h"

#include <QtTest>

using namespace membudget;

class TestHfConfigImport : public QObject
{
    Q_OBJECT
private:
    static double total(const ModelSpec &spec)
    {
        return parameterLayout(applyModelSpec(spec, ModelArchitecture{}, false)).total;
    }

private slots:
    // Keys are compared as JSON decodes them: "text\\u005fconfig" is text_config (its lookup
    // threw std::out_of_range and aborted the program), and an escaped second num_hidden_layers is
    // a duplicate (it silently won).
    void escapedKeys()
    {
        const char *wrapped = R"({"text\u005fconfig": {"model_type": "llama", "hidden_size": 2048,
  "intermediate_size": 5632, "num_attention_heads": 32, "num_hidden_layers": 22,
  "num_key_value_heads": 4, "vocab_size": 32000}, "model_type": "llava"})";
        LoadError error;
        auto spec = importHfConfig(wrapped, "config.json", error);
        QVERIFY2(spec.has_value(), error.toString().c_str());
        QCOMPARE(*spec->layers, std::int64_t(22));
        const char *duplicate = R"({"model_type": "llama", "hidden_size": 2048,
  "intermediate_size": 5632, "num_attention_heads": 32, "num_hidden_layers": 22,
  "num_hidden\u005flayers": 2, "vocab_size": 32000})";
        QVERIFY(!importHfConfig(duplicate, "config.json", error));
        QCOMPARE(error.toString(),
                 std::string("config.json:3:3: duplicate key \"num_hidden_layers\""));
        // A number no double holds, at its own position and in our words.
        QVERIFY(!importHfConfig(R"({"model_type": "llama",
  "rope_theta": -1e400})",
                                "config.json",
                                error));
        QCOMPARE(error.toString(),
                 std::string("config.json:2:17: the number -1e400 is out of range (larger than any "
                             "double-precision value)"));
        // Lone CRs end lines.
        QVERIFY(!importHfConfig("{\r\"model_type\": \"llama\",\r\"num_hidden_layers\": true}",
                                "config.json",
                                error));
        QCOMPARE(error.line, 3);
    }

    void llama3()
    {
        const char *json = R"({
  "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
  "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
  "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16"
})";
        LoadError error;
        const auto spec = importHfConfig(json, "config.json", error);
        QVERIFY2(spec.has_value(), error.toString().c_str());
        QCOMPARE(static_cast<qint64>(total(*spec)), Q_INT64_C(8030261248));
    }

    void mixtralAndGpt2()
    {
        LoadError error;
        auto mix = importHfConfig(
            R"({"model_type": "mixtral", "hidden_size": 4096, "intermediate_size": 14336,
            "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 32000,
            "num_local_experts": 8, "num_experts_per_tok": 2, "tie_word_embeddings": false})",
            "m.json",
            error);
        QVERIFY2(mix.has_value(), error.toString().c_str());
        QCOMPARE(static_cast<qint64>(total(*mix)), Q_INT64_C(46702792704));
        auto gpt2
            = importHfConfig(R"({"model_type": "gpt2", "n_embd": 768, "n_head": 12, "n_layer": 12,
            "n_positions": 1024, "vocab_size": 50257, "activation_function": "gelu_new",
            "attn_pdrop": 0.1, "resid_pdrop": 0.1})",
                             "g.json",
                             error);
        QVERIFY2(gpt2.has_value(), error.toString().c_str());
        QCOMPARE(static_cast<qint64>(total(*gpt2)), Q_INT64_C(124439808));
    }

    void errors_data()
    {
        QTest::addColumn<QString>("json");
        QTest::addColumn<int>("line");
        QTest::addColumn<QString>("message");
        QTest::newRow("syntax") << "{\n  \"model_type\": \"llama\",\n  oops\n}" << 3
                                << "invalid JSON";
        QTest::newRow("not an object") << "[1, 2]" << 0 << "JSON object";
        QTest::newRow("unknown type") << "{\"model_type\": \"t5\"}" << 1 << "not supported";
        QTest::newRow("no type") << "{\"hidden_size\": 8}" << 0 << "model_type";
        QTest::newRow("missing field")
            << "{\"model_type\": \"llama\", \"hidden_size\": 8}" << 0 << "num_hidden_layers";
        QTest::newRow("string for number")
            << "{\"model_type\": \"llama\",\n \"num_hidden_layers\": \"32\"}" << 2
            << "whole number";
        QTest::newRow("null required") << "{\"model_type\": \"llama\", \"num_hidden_layers\": null}"
                                       << 0 << "num_hidden_layers";
        QTest::newRow("negative") << "{\"model_type\": \"llama\", \"num_hidden_layers\": -1}" << 1
                                  << "between";
    }
    void errors()
    {
        QFETCH(QString, json);
        QFETCH(int, line);
        QFETCH(QString, message);
        LoadError error;
        QVERIFY(!importHfConfig(json.toStdString(), "config.json", error).has_value());
        QVERIFY2(QString::fromStdString(error.message).contains(message), error.toString().c_str());
        if (line > 0)
            QCOMPARE(error.line, line);
    }
};

QTEST_APPLESS_MAIN(TestHfConfigImport)
#include "tst_hf_config_import.moc"
