// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/preset_catalog.h"
#include "io/scenario_yaml.h"
#include "model/stack_profile.h"

#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

using namespace membudget;

class TestScenarioYaml : public QObject
{
    Q_OBJECT
private slots:
    void defaultScenarioRoundTrips()
    {
        const Scenario s = defaultScenario();
        const std::string text = scenarioToYaml(s);
        LoadError error;
        const auto back = parseScenario(text, "round-trip", error, &PresetCatalog::bundled());
        QVERIFY2(back.has_value(), error.toString().c_str());
        QVERIFY(*back == s);
        QCOMPARE(scenarioToYaml(*back), text); // save -> load -> save is byte-identical
    }

    void everyFieldRoundTrips()
    {
        Scenario s;
        s.name = "Quotes \" and: colons, # hashes\nand newlines";
        s.description = "true";
        s.model.family = ModelFamily::Gemma;
        s.model.layers = 28;
        s.model.hidden_size = 3072;
        s.model.kv_heads = 4;
        s.model.qk_norm = true;
        s.model.attention_dropout = 0.125;
        s.training.mode = Mode::Train;
        s.training.method = Method::Qlora;
        s.training.quantization = Quantization::Nf4Double;
        s.training.precision = Precision::MixedFp16;
        s.training.optimizer = Optimizer::PagedAdamW8bit;
        s.training.micro_batch_size = 7;
        s.training.sequence_length = 12345;
        s.training.gradient_accumulation_steps = 3;
        s.training.checkpointing = Checkpointing::Selective;
        s.training.attention = Attention::Eager;
        s.training.loss = LossImplementation::HfLegacy;
        s.training.lora = {64, 128.5, 0.1, TargetQ | TargetDown, AdapterPrecision::Base};
        s.training.offload = {true, true};
        s.parallelism.gpus = 16;
        s.parallelism.sharding = Sharding::Zero3;
        s.parallelism.tensor_parallel = 2;
        s.training.lora.use_dora = true;
        s.training.lora.use_rslora = true;
        s.training.lora.loraplus_lr_ratio = 16;
        s.training.quantization_options = {3, 64, Fp8Scales::Block, true, QuantComputeDtype::Fp32};
        s.training.ia3.targets = TargetUp | TargetGate;
        s.training.batch_padding = BatchPadding::Packed;
        s.training.inference = {512, KvCacheKind::Quantized, KvCacheDtype::Fp8, 8192, 2, 32, 64};
        s.overheads = {123456789, 987654321, 0.25, "", 0};
        s.gpus = {"h100-80gb", "rtx-4090"};
        s.dataset = DatasetConfig{10000, 1024, 2.5};
        s.prices = {{"h100-80gb", 2.25}, {"rtx-4090", 0.3}};
        LoadError error;
        const auto back = parseScenario(scenarioToYaml(s), "all", error);
        QVERIFY2(back.has_value(), error.toString().c_str());
        QVERIFY(*back == s);
        // Quick mode (parameters alone) round-trips too.
        Scenario quick;
        quick.model.parameters = 7.25e9;
        quick.model.vocab_size = 50000;
        const auto quickBack = parseScenario(scenarioToYaml(quick), "quick", error);
        QVERIFY2(quickBack.has_value(), error.toString().c_str());
        QVERIFY(*quickBack == quick);
    }

    // Any Unicode name or description saves, loads back equal and saves again to the same bytes.
    // A C1 control (U+0090) was written raw and the file refused on reopening; NEL, LS and PS
    // (U+0085, U+2028, U+2029) read from \\N, \\L, \\P escapes were written raw and folded into
    // spaces on the next load.
    void anyNameRoundTrips()
    {
        std::mt19937 rng(15);
        const char32_t special[] = {0x00,   0x01,   0x09,   0x0A,   0x0D,   0x1B,   0x7F,
                                    0x80,   0x85,   0x90,   0x9B,   0x9F,   0xA0,   0xAD,
                                    0x2028, 0x2029, 0x202E, 0x200B, 0xFEFF, 0xFFFE, 0xFFFF,
                                    0xFFFD, 0xE000, '"',    '\\',   '\'',   '#',    ':',
                                    '-',    ' ',    '&',    '*',    '!',    '%',    '@'};
        const auto randomText = [&](std::size_t length) {
            std::u32string text;
            for (std::size_t i = 0; i < length; ++i) {
                const unsigned kind = rng() % 4;
                char32_t c = 0;
                if (kind == 0)
                    c = special[rng() % std::size(special)];
                else if (kind == 1)
                    c = static_cast<char32_t>(0x20 + rng() % 0x5F); // ASCII
                else
                    do
                        c = static_cast<char32_t>(rng() % 0x110000);
                    while (c >= 0xD800 && c <= 0xDFFF); // surrogates are not characters
                text += c;
            }
            return QString::fromUcs4(text.data(), static_cast<qsizetype>(text.size())).toStdString();
        };
        for (int i = 0; i < 10000; ++i) {
            Scenario s = defaultScenario();
            s.name = randomText(rng() % 40);
            s.description = randomText(rng() % 80);
            const std::string yaml = scenarioToYaml(s);
            LoadError error;
            const auto back = parseScenario(yaml, "names.yaml", error, &PresetCatalog::bundled());
            QVERIFY2(back.has_value(), (error.toString() + "\n" + yaml).c_str());
            QVERIFY2(back->name == s.name && back->description == s.description, yaml.c_str());
            QCOMPARE(scenarioToYaml(*back), yaml);
        }
        // Names written with YAML's escapes for NEL, NBSP, LS and PS (yaml-cpp decodes \\N and \\_
        // to lone bytes) read as those characters and stay them through a save.
        LoadError escapeError;
        const auto escaped = parseScenario("format: membudget/1\nname: \"a\\N b\\_c\\Ld\\Pe\"\n",
                                           "escapes.yaml",
                                           escapeError);
        QVERIFY2(escaped.has_value(), escapeError.toString().c_str());
        QCOMPARE(escaped->name,
                 std::string("a\xc2\x85 b\xc2\xa0"
                             "c\xe2\x80\xa8"
                             "d\xe2\x80\xa9"
                             "e"));
        const auto again = parseScenario(scenarioToYaml(*escaped), "again.yaml", escapeError);
        QVERIFY2(again.has_value() && again->name == escaped->name, escapeError.toString().c_str());
        // Bytes that are not UTF-8 (a name from a Latin-1 folder) still give a loadable file.
        Scenario latin1 = defaultScenario();
        latin1.name = "caf\xe9 \xff\xfe";
        LoadError error;
        const auto back = parseScenario(scenarioToYaml(latin1), "latin1.yaml", error);
        QVERIFY2(back.has_value(), error.toString().c_str());
        QCOMPARE(back->name, std::string("caf\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd"));
    }

    // A GPU list is bounded and each GPU listed once; the position of the first is named.
    void gpuListBounds()
    {
        std::string text = "format: membudget/1\ngpus: [";
        for (int i = 0; i < 64; ++i)
            text += (i ? ", g" : "g") + std::to_string(i);
        text += "]\n";
        LoadError error;
        QVERIFY2(parseScenario(text, "64.yaml", error).has_value(), error.toString().c_str());
        text.insert(text.size() - 2, ", g64");
        QVERIFY(!parseScenario(text, "65.yaml", error));
        QCOMPARE(error.message,
                 std::string("too many GPUs: at most 64 to compare against (this "
                             "list has 65)"));
        QVERIFY(!parseScenario("format: membudget/1\ngpus:\n- a\n- b\n- a\n", "dup.yaml", error));
        QCOMPARE(error.toString(),
                 std::string("dup.yaml:5:3: GPU 'a' is listed twice (first at line "
                             "3, column 3)"));
    }

    void documentedExample()
    {
        const char *text = R"(format: membudget/1
name: Mistral-7B LoRA, bf16, flash attention
model:
  family: llama
  layers: 32
  hidden_size: 4096
  intermediate_size: 14336
  attention_heads: 32
  kv_heads: 8
  head_dim: 128
  vocab_size: 32000
  tied_embeddings: false
  experts: 1
  experts_per_token: 1
training:
  mode: train
  method: lora
  precision: bf16
  quantization: none
  optimizer: adamw
  micro_batch_size: 4
  sequence_length: 4096
  gradient_accumulation_steps: 1
  gradient_checkpointing: none
  attention: flash
  lora: {rank: 16, alpha: 16, dropout: 0.1, targets: [q_proj, k_proj, v_proj, o_proj]}
  offload: {optimizer: false, parameters: false}
parallelism:
  gpus: 1
  sharding: none
  tensor_parallel: 1
)";
        LoadError error;
        const auto s = parseScenario(text, "example.yaml", error);
        QVERIFY2(s.has_value(), error.toString().c_str());
        QCOMPARE(s->training.lora.targets, unsigned(TargetQ | TargetK | TargetV | TargetO));
        QCOMPARE(*s->model.kv_heads, std::int64_t(8));
        std::string problem;
        const auto in = resolveScenario(*s, PresetCatalog::bundled(), problem);
        QVERIFY2(in.has_value(), problem.c_str());
        QCOMPARE(in->arch.head_dim, std::int64_t(128));
    }

    void errors_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<int>("line");
        QTest::addColumn<int>("column");
        QTest::addColumn<QString>("message");
        QTest::newRow("empty") << "" << 1 << 1 << "empty";
        QTest::newRow("missing format") << "name: x\n" << 1 << 1 << "missing 'format: membudget/1'";
        QTest::newRow("future format") << "format: membudget/2\n" << 1 << 9 << "newer MemBudget";
        QTest::newRow("other format") << "format: foo\n" << 1 << 9 << "not a MemBudget scenario";
        QTest::newRow("unknown top key") << "format: membudget/1\ntrainig: {}\n"
                                         << 2 << 1 << "unknown key 'trainig'";
        QTest::newRow("unknown nested key") << "format: membudget/1\ntraining:\n  batch: 4\n"
                                            << 3 << 3 << "unknown key 'batch' in training";
        QTest::newRow("duplicate key") << "format: membudget/1\nname: a\nname: b\n"
                                       << 3 << 1 << "duplicate key 'name'";
        QTest::newRow("string for number")
            << "format: membudget/1\ntraining:\n  micro_batch_size: \"4\"\n"
            << 3 << 21 << "must be a whole number";
        QTest::newRow("fraction") << "format: membudget/1\ntraining:\n  micro_batch_size: 2.5\n"
                                  << 3 << 21 << "whole number";
        QTest::newRow("zero batch") << "format: membudget/1\ntraining:\n  micro_batch_size: 0\n"
                                    << 3 << 21 << "between 1 and";
        QTest::newRow("negative") << "format: membudget/1\nmodel:\n  layers: -3\n"
                                  << 3 << 11 << "between 1 and";
        QTest::newRow("past 64 bits")
            << "format: membudget/1\nmodel:\n  layers: 99999999999999999999999\n"
            << 3 << 11 << "too large";
        QTest::newRow("nan") << "format: membudget/1\nmodel:\n  parameters: .nan\n"
                             << 3 << 15 << "number";
        QTest::newRow("inf") << "format: membudget/1\nmodel:\n  parameters: 1e400\n"
                             << 3 << 15 << "out of range";
        QTest::newRow("unknown enum")
            << "format: membudget/1\ntraining:\n  precision: bf8\n"
            << 3 << 14 << "unknown precision 'bf8'; expected fp32, amp-bf16";
        QTest::newRow("yes is not a bool")
            << "format: membudget/1\nmodel:\n  tied_embeddings: yes\n"
            << 3 << 20 << "true or false";
        QTest::newRow("list for map") << "format: membudget/1\ntraining: [1, 2]\n"
                                      << 2 << 11 << "must be a mapping";
        QTest::newRow("unknown lora target")
            << "format: membudget/1\ntraining:\n  lora: {targets: [q_proj, w_proj]}\n"
            << 3 << 28 << "unknown LoRA target 'w_proj'";
        QTest::newRow("unknown kv cache")
            << "format: membudget/1\ntraining:\n  inference: {kv_cache: paged}\n"
            << 3 << 25 << "unknown kv_cache 'paged'";
        QTest::newRow("unknown ia3 target")
            << "format: membudget/1\ntraining:\n  ia3: {targets: [k_proj, x_proj]}\n"
            << 3 << 27 << "unknown IA3 target 'x_proj'";
        QTest::newRow("static cache too short")
            << "format: membudget/1\ntraining: {mode: inference, sequence_length: 4096, "
               "inference: {kv_cache: static, max_cache_len: 1024}}\n"
            << 2 << 97 << "max_cache_len must hold";
        QTest::newRow("unknown preset") << "format: membudget/1\nmodel:\n  preset: llama-2-7c\n"
                                        << 3 << 11 << "unknown model preset 'llama-2-7c'";
        QTest::newRow("unknown gpu") << "format: membudget/1\ngpus: [rtx-9090]\n"
                                     << 2 << 8 << "unknown GPU 'rtx-9090'";
        QTest::newRow("bad size") << "format: membudget/1\noverheads: {cuda_context: lots}\n"
                                  << 2 << 27 << "must be a size";
        QTest::newRow("tp not dividing")
            << "format: membudget/1\nparallelism: {gpus: 3, tensor_parallel: 2}\n"
            << 2 << 14 << "multiple of tensor_parallel";
        QTest::newRow("shard group not dividing")
            << "format: membudget/1\nparallelism: {gpus: 12, tensor_parallel: 2, shard_group: 4}\n"
            << 2 << 58 << "shard_group (4) must divide the data-parallel GPUs";
        QTest::newRow("syntax error") << "format: membudget/1\nname: [unclosed\n"
                                      << 3 << 1 << "invalid YAML";
        QTest::newRow("qlora none")
            << "format: membudget/1\ntraining: {method: qlora, quantization: none}\n"
            << 2 << 41 << "qlora needs a quantized base";
        QTest::newRow("kv heads not dividing")
            << "format: membudget/1\nmodel:\n  preset: llama-2-7b\n  kv_heads: 5\n"
            << 4 << 13 << "multiple of kv_heads";
        QTest::newRow("offload without zero3")
            << "format: membudget/1\ntraining:\n  offload: {parameters: true}\n"
            << 3 << 12 << "needs sharding zero3";
        QTest::newRow("full with nf4") << "format: membudget/1\ntraining:\n  quantization: nf4\n"
                                       << 3 << 17 << "cannot train quantized";
        QTest::newRow("dataset without examples") << "format: membudget/1\ndataset: {epochs: 2}\n"
                                                  << 2 << 10 << "needs 'examples'";
        QTest::newRow("zero epochs")
            << "format: membudget/1\ndataset:\n  examples: 10\n  epochs: 0\n"
            << 4 << 11 << "'epochs' must be between";
        QTest::newRow("fractional examples") << "format: membudget/1\ndataset: {examples: 10.5}\n"
                                             << 2 << 21 << "whole number";
        QTest::newRow("unknown dataset key")
            << "format: membudget/1\ndataset: {examples: 10, tokens: 5}\n"
            << 2 << 25 << "unknown key 'tokens' in dataset";
        QTest::newRow("price for unknown gpu") << "format: membudget/1\nprices:\n  rtx-9090: 1.5\n"
                                               << 3 << 3 << "unknown GPU 'rtx-9090'";
        QTest::newRow("price as text") << "format: membudget/1\nprices: {a100-80gb: cheap}\n"
                                       << 2 << 21 << "must be a number";
        QTest::newRow("negative price") << "format: membudget/1\nprices: {a100-80gb: -1}\n"
                                        << 2 << 21 << "between 0 and";
        QTest::newRow("unknown stack") << "format: membudget/1\nstack: hf\n"
                                       << 2 << 8 << "unknown stack 'hf'; expected plain-torch";
        QTest::newRow("stack version not a version")
            << "format: membudget/1\nstack: {name: trl-sft, version: latest}\n"
            << 2 << 33 << "'latest' is not a version";
        QTest::newRow("stack without name") << "format: membudget/1\nstack: {version: \"4.46\"}\n"
                                            << 2 << 8 << "a stack needs a 'name'";
        QTest::newRow("stack torch not a version")
            << "format: membudget/1\nstack: {name: hf-trainer, torch: nightly}\n"
            << 2 << 34
            << "'nightly' is not a version; expected one such as 2.0 or 2.4.1 (PyTorch's)";
        QTest::newRow("plain-torch with torch")
            << "format: membudget/1\nstack: {name: plain-torch, torch: \"2.0\"}\n"
            << 2 << 35 << "plain-torch's 'version' is PyTorch's";
        QTest::newRow("unknown loss") << "format: membudget/1\ntraining:\n  loss: liger\n"
                                      << 3 << 9 << "liger-fused";
        QTest::newRow("bad fsdp dtype")
            << "format: membudget/1\nparallelism:\n  fsdp_param_dtype: int8\n"
            << 3 << 21 << "fp32";
        QTest::newRow("missing deepspeed config")
            << "format: membudget/1\nparallelism:\n  deepspeed_config: /nonexistent/ds.json\n"
            << 3 << 21 << "ds.json";
        QTest::newRow("binary garbage")
            << QString::fromLatin1("\x01\x02\xff\xfe: [") << 1 << 1 << "binary file, not text";
        QString deep = "format: membudget/1\nname: ";
        for (int i = 0; i < 2000; ++i)
            deep += "[";
        QTest::newRow("deep nesting") << deep << 2 << 0 << "nesting too deep";
        QTest::newRow("alias bomb")
            << "format: membudget/1\na: &a [x, x]\nb: &b [*a, *a]\nname: *b\n"
            << 2 << 1 << "unknown key 'a'";
    }
    void errors()
    {
        QFETCH(QString, text);
        QFETCH(int, line);
        QFETCH(int, column);
        QFETCH(QString, message);
        LoadError error;
        const auto s
            = parseScenario(text.toStdString(), "bad.yaml", error, &PresetCatalog::bundled());
        QVERIFY(!s.has_value());
        QCOMPARE(QString::fromStdString(error.file), QString("bad.yaml"));
        QVERIFY2(QString::fromStdString(error.message).contains(message), error.toString().c_str());
        QCOMPARE(error.line, line);
        if (column > 0)
            QCOMPARE(error.column, column);
    }

    void stackRoundTripsAndSetsDefaults()
    {
        LoadError error;
        const std::string text = "format: membudget/1\n"
                                 "stack: {name: hf-trainer, version: \"4.46\"}\n"
                                 "training: {method: qlora, precision: bf16}\n";
        const auto s = parseScenario(text, "stack.yaml", error, &PresetCatalog::bundled());
        QVERIFY2(s.has_value(), error.toString().c_str());
        QCOMPARE(s->training.stack.name, Stack::HfTrainer);
        QCOMPARE(s->training.stack.version, std::string("4.46"));
        QCOMPARE(s->training.optimizer, Optimizer::AdamW);
        QCOMPARE(s->training.loss, LossImplementation::Hf446);
        QCOMPARE(s->training.checkpointing, Checkpointing::Full); // PEFT's k-bit recipe
        QVERIFY(!s->training.kbit_fp32_upcast.has_value());       // decided at estimate time
        const std::string saved = scenarioToYaml(*s);
        QVERIFY2(saved.find("stack: {name: hf-trainer, version: \"4.46\"}") != std::string::npos,
                 saved.c_str());
        const auto back = parseScenario(saved, "back.yaml", error, &PresetCatalog::bundled());
        QVERIFY2(back.has_value(), error.toString().c_str());
        QVERIFY(*back == *s);
        QCOMPARE(scenarioToYaml(*back), saved);

        // The PyTorch release under a library stack, written after its version.
        const auto onTorch = parseScenario(
            "format: membudget/1\nstack: {name: trl-sft, torch: \"2.0.1\", version: \"0.20\"}\n",
            "t.yaml",
            error);
        QVERIFY2(onTorch.has_value(), error.toString().c_str());
        QCOMPARE(onTorch->training.stack.torch, std::string("2.0.1"));
        const std::string onTorchSaved = scenarioToYaml(*onTorch);
        QVERIFY2(onTorchSaved.find("stack: {name: trl-sft, version: \"0.20\", torch: 2.0.1}")
                     != std::string::npos,
                 onTorchSaved.c_str());

        // Every key still overrides; a stack-less file keeps today's defaults.
        const auto explicitOpt = parseScenario(
            "format: membudget/1\nstack: torchtune\ntraining: {optimizer: adamw, loss: hf}\n",
            "x.yaml",
            error);
        QVERIFY2(explicitOpt.has_value(), error.toString().c_str());
        QCOMPARE(explicitOpt->training.optimizer, Optimizer::AdamW);
        QCOMPARE(explicitOpt->training.loss, LossImplementation::Hf);
        QCOMPARE(explicitOpt->training.precision, Precision::Bf16);
        const auto plain = parseScenario("format: membudget/1\n", "p.yaml", error);
        QVERIFY(plain.has_value());
        QCOMPARE(plain->training.stack.name, Stack::PlainTorch);
        QVERIFY(scenarioToYaml(*plain).find("stack") == std::string::npos);

        Scenario all = *s;
        all.training.kbit_fp32_upcast = false;
        all.training.use_cache = true;
        all.training.trainer_mixed_precision = false;
        all.parallelism.gpus = 4;
        all.parallelism.sharding = Sharding::Zero2;
        all.parallelism.sequence_parallel = true;
        all.parallelism.shard_group = 2;
        all.parallelism.loss_parallel = false;
        all.training.checkpointing = Checkpointing::Full;
        all.training.checkpoint_every = 3;
        all.parallelism.fsdp_param_dtype = ParamDtype::Bf16;
        all.parallelism.fsdp_reduce_dtype = ParamDtype::Fp32;
        all.parallelism.deepspeed.reduce_bucket_size = 2e8;
        all.parallelism.deepspeed.overlap_comm = false;
        all.parallelism.deepspeed.sub_group_size = 5e8;
        const auto allBack = parseScenario(scenarioToYaml(all), "all.yaml", error);
        QVERIFY2(allBack.has_value(), error.toString().c_str());
        QVERIFY(*allBack == all);
        Scenario inBackward = *s;
        inBackward.training.optimizer_in_backward = true;
        inBackward.training.activation_offloading = true;
        const std::string ibText = scenarioToYaml(inBackward);
        QVERIFY2(ibText.find("  optimizer_in_backward: true\n  activation_offloading: true\n")
                     != std::string::npos,
                 ibText.c_str());
        const auto ibBack = parseScenario(ibText, "ib.yaml", error);
        QVERIFY2(ibBack.has_value(), error.toString().c_str());
        QVERIFY(*ibBack == inBackward && !(*ibBack == *s));
        QVERIFY(!parseScenario("format: membudget/1\ntraining: {optimizer_in_backward: 3}\n",
                               "bad.yaml",
                               error));
        QVERIFY2(error.toString().find("optimizer_in_backward") != std::string::npos,
                 error.toString().c_str());
    }

    void deepSpeedConfigFileFillsWhatTheScenarioLeavesOut()
    {
        const std::string dir = QDir::tempPath().toStdString() + "/membudget-ds-"
                                + std::to_string(QCoreApplication::applicationPid());
        std::filesystem::create_directories(dir);
        std::ofstream(dir + "/ds.json")
            << R"({"zero_optimization": {"stage": 2, "reduce_bucket_size": 2e8, "overlap_comm": true,
   "allgather_bucket_size": "auto", "offload_optimizer": {"device": "cpu"},
   "sub_group_size": 1e8},
 "bf16": {"enabled": true}})";
        std::ofstream(dir + "/s.yaml") << "format: membudget/1\nstack: deepspeed\n"
                                          "parallelism: {gpus: 2, deepspeed_config: ds.json}\n";
        LoadError error;
        const auto s = loadScenarioFile(dir + "/s.yaml", error);
        QVERIFY2(s.has_value(), error.toString().c_str());
        QCOMPARE(s->parallelism.sharding, Sharding::Zero2);
        QCOMPARE(s->training.precision, Precision::MixedBf16);
        QVERIFY(s->training.offload.optimizer);
        QCOMPARE(*s->parallelism.deepspeed_from_file.reduce_bucket_size, 2e8);
        QVERIFY(!s->parallelism.deepspeed.reduce_bucket_size); // the file's, not written back
        QCOMPARE(*s->parallelism.deepspeed_from_file.sub_group_size, 1e8);
        QVERIFY(scenarioToYaml(*s).find("deepspeed_config: ds.json") != std::string::npos);

        // MiCS: ZeRO-3 over groups of mics_shard_size GPUs (-1, DeepSpeed's default: off).
        std::ofstream(dir + "/mics.json")
            << R"({"zero_optimization": {"stage": 3, "mics_shard_size": 4}})";
        std::ofstream(dir + "/m.yaml") << "format: membudget/1\n"
                                          "parallelism: {gpus: 16, deepspeed_config: mics.json}\n";
        const auto m = loadScenarioFile(dir + "/m.yaml", error);
        QVERIFY2(m.has_value(), error.toString().c_str());
        QCOMPARE(m->parallelism.sharding, Sharding::Zero3);
        QCOMPARE(m->parallelism.shard_group, std::int64_t(4));
        std::ofstream(dir + "/off.json")
            << R"({"zero_optimization": {"stage": 3, "mics_shard_size": -1}})";
        std::ofstream(dir + "/o.yaml") << "format: membudget/1\n"
                                          "parallelism: {gpus: 16, deepspeed_config: off.json}\n";
        QCOMPARE(loadScenarioFile(dir + "/o.yaml", error)->parallelism.shard_group, std::int64_t(0));
        std::ofstream(dir + "/badmics.json")
            << R"({"zero_optimization": {"stage": 3, "mics_shard_size": "eight"}})";
        std::ofstream(dir + "/bm.yaml")
            << "format: membudget/1\n"
               "parallelism: {gpus: 16, deepspeed_config: badmics.json}\n";
        QVERIFY(!loadScenarioFile(dir + "/bm.yaml", error).has_value());
        QVERIFY2(QString::fromStdString(error.message).contains("mics_shard_size"),
                 error.toString().c_str());

        // DeepSpeed's bf16 master weights make the run pure bf16; its torch_autocast is AMP
        // (float16 without a dtype: torch.autocast's CUDA default); the scenario's key wins.
        std::ofstream(dir + "/masters.json") << R"({"zero_optimization": {"stage": 3},
 "bf16": {"enabled": true, "bf16_master_weights_and_grads": true, "bf16_optimizer_states": true}})";
        std::ofstream(dir + "/bf.yaml")
            << "format: membudget/1\n"
               "parallelism: {gpus: 8, deepspeed_config: masters.json}\n";
        const auto bf = loadScenarioFile(dir + "/bf.yaml", error);
        QVERIFY2(bf.has_value(), error.toString().c_str());
        QCOMPARE(bf->training.precision, Precision::Bf16);
        QCOMPARE(bf->parallelism.deepspeed_from_file.bf16_master_weights, std::optional<bool>(true));
        QCOMPARE(bf->parallelism.deepspeed_from_file.bf16_optimizer_states,
                 std::optional<bool>(true));
        // bf16_master_weights_and_grads alone keeps DeepSpeed's default fp32 states, which need
        // ZeRO-Offload; the scenario's own key can say so too and saves.
        std::ofstream(dir + "/fp32states.json") << R"({"zero_optimization": {"stage": 2,
 "offload_optimizer": {"device": "cpu"}}, "bf16": {"enabled": true,
 "bf16_master_weights_and_grads": true}})";
        std::ofstream(dir + "/fs.yaml") << "format: membudget/1\n"
                                           "parallelism: {gpus: 8, deepspeed_config: "
                                           "fp32states.json}\n";
        const auto fs = loadScenarioFile(dir + "/fs.yaml", error);
        QVERIFY2(fs.has_value(), error.toString().c_str());
        QCOMPARE(fs->parallelism.deepspeed_from_file.bf16_optimizer_states,
                 std::optional<bool>(false));
        QVERIFY(deepSpeedFp32OptimizerStates(fs->training, fs->parallelism));
        std::ofstream(dir + "/onGpu.json") << R"({"zero_optimization": {"stage": 2},
 "bf16": {"enabled": true, "bf16_master_weights_and_grads": true}})";
        std::ofstream(dir + "/og.yaml") << "format: membudget/1\n"
                                           "parallelism: {gpus: 8, deepspeed_config: onGpu.json}\n";
        const auto og = loadScenarioFile(dir + "/og.yaml", error);
        QVERIFY2(og.has_value(), error.toString().c_str());
        std::string problem; // the estimate refuses it, as DeepSpeed does
        QVERIFY(!resolveScenario(*og, PresetCatalog::bundled(), problem).has_value());
        QVERIFY2(QString::fromStdString(problem).contains("bf16_optimizer_states"), problem.c_str());
        std::ofstream(dir + "/ok.yaml")
            << "format: membudget/1\ntraining: {precision: bf16, offload: {optimizer: true}}\n"
               "parallelism: {gpus: 8, sharding: zero3,\n"
               "  deepspeed: {bf16_master_weights: true, bf16_optimizer_states: false}}\n";
        const auto ok = loadScenarioFile(dir + "/ok.yaml", error);
        QVERIFY2(ok.has_value(), error.toString().c_str());
        QVERIFY(scenarioToYaml(*ok).find("bf16_optimizer_states: false") != std::string::npos);
        std::ofstream(dir + "/autocast.json")
            << R"({"zero_optimization": {"stage": 2}, "torch_autocast": {"enabled": true}})";
        std::ofstream(dir + "/ac.yaml")
            << "format: membudget/1\n"
               "parallelism: {gpus: 8, deepspeed_config: autocast.json}\n";
        QCOMPARE(loadScenarioFile(dir + "/ac.yaml", error)->training.precision, Precision::AmpFp16);
        std::ofstream(dir + "/ac2.yaml")
            << "format: membudget/1\ntraining: {precision: mixed-bf16}\n"
               "parallelism: {gpus: 8, deepspeed: {bf16_master_weights: false},\n"
               "  deepspeed_config: masters.json}\n";
        const auto keyed = loadScenarioFile(dir + "/ac2.yaml", error);
        QVERIFY2(keyed.has_value(), error.toString().c_str());
        QCOMPARE(keyed->training.precision, Precision::MixedBf16);
        QCOMPARE(keyed->parallelism.deepspeed.bf16_master_weights, std::optional<bool>(false));
        QVERIFY(scenarioToYaml(*keyed).find("bf16_master_weights: false") != std::string::npos);

        std::ofstream(dir + "/bad.json") << "{\"zero_optimization\": {\"stage\": 2,}\n";
        std::ofstream(dir + "/b.yaml") << "format: membudget/1\n"
                                          "parallelism: {deepspeed_config: bad.json}\n";
        QVERIFY(!loadScenarioFile(dir + "/b.yaml", error).has_value());
        QVERIFY2(QString::fromStdString(error.message).contains("bad.json:1:"),
                 error.toString().c_str());
        std::filesystem::remove_all(dir);
    }

    void fileErrorsAndAtomicSave()
    {
        LoadError error;
        QVERIFY(!loadScenarioFile("/nonexistent/x.yaml", error).has_value());
        QVERIFY(QString::fromStdString(error.toString()).contains("no such file"));

        const std::string dir = QDir::tempPath().toStdString() + "/membudget-tst-"
                                + std::to_string(QCoreApplication::applicationPid());
        std::filesystem::create_directories(dir);
        const std::string path = dir + "/s.yaml";
        std::string problem;
        QVERIFY(saveScenarioFile(defaultScenario(), path, problem));
        const auto back = loadScenarioFile(path, error, &PresetCatalog::bundled());
        QVERIFY2(back.has_value(), error.toString().c_str());
        QVERIFY(*back == defaultScenario());
        // No temporary file is left behind.
        int files = 0;
        for (const auto &e : std::filesystem::directory_iterator(dir)) {
            Q_UNUSED(e);
            ++files;
        }
        QCOMPARE(files, 1);
        // Saving into a folder that does not exist fails cleanly and writes nothing.
        QVERIFY(!saveScenarioFile(defaultScenario(), dir + "/missing/s.yaml", problem));
        QVERIFY(!problem.empty());
        std::filesystem::remove_all(dir);
    }

    void bundledPresetFilesAllLoad()
    {
        PresetCatalog fresh;
        QDir root(MEMBUDGET_SOURCE_DIR "/presets");
        QDirIterator it(root.path(), {"*.yaml"}, QDir::Files, QDirIterator::Subdirectories);
        int files = 0;
        while (it.hasNext()) {
            const QString path = it.next();
            QFile f(path);
            QVERIFY(f.open(QIODevice::ReadOnly));
            LoadError error;
            QVERIFY2(fresh.addFile(path.toStdString(), f.readAll().toStdString(), error),
                     error.toString().c_str());
            ++files;
        }
        QVERIFY(files >= 3);
        const PresetCatalog &catalog = PresetCatalog::bundled();
        QVERIFY2(catalog.models().size() >= 40, "at least 40 model presets");
        QVERIFY2(catalog.gpus().size() >= 25, "at least 25 GPU presets");
        for (const char *id :
             {"llama-2-7b", "llama-3.1-8b", "mistral-7b-v0.1", "mixtral-8x7b", "qwen2.5-7b"})
            QVERIFY2(catalog.findModel(id), id);
        for (const char *id :
             {"a100-40gb", "a100-80gb", "h100-80gb", "h200", "l40s", "rtx-3090", "rtx-4090", "mi300x"})
            QVERIFY2(catalog.findGpu(id), id);
        // Every bundled scenario resolves and estimates.
        for (const ScenarioPreset &s : catalog.scenarios()) {
            std::string problem;
            QVERIFY2(resolveScenario(s.scenario, catalog, problem).has_value(),
                     (s.id + ": " + problem).c_str());
            for (const std::string &g : s.scenario.gpus)
                QVERIFY2(catalog.findGpu(g), (s.id + ": " + g).c_str());
        }
    }

    void userFolderOverridesBundled()
    {
        const QString dir = QDir::tempPath() + "/membudget-user-"
                            + QString::number(QCoreApplication::applicationPid());
        QDir().mkpath(dir);
        QFile f(dir + "/mine.yaml");
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("format: membudget-presets/1\ngpus:\n  - {id: my-card, name: My card, memory_gib: "
                "48}\n  - {id: my-measured-card, memory_mib: 24576, cuda_memory_mib: 24200}\n");
        f.close();
        QFile bad(dir + "/broken.yaml");
        QVERIFY(bad.open(QIODevice::WriteOnly));
        bad.write("format: membudget-presets/1\ngpus: [{id: x}]\n");
        bad.close();
        PresetCatalog catalog = PresetCatalog::bundled();
        const auto problems = catalog.addFolder(dir.toStdString());
        QCOMPARE(problems.size(), std::size_t(1));
        QVERIFY(QString::fromStdString(problems[0].message).contains("memory"));
        QVERIFY(catalog.findGpu("my-card"));
        QCOMPARE(catalog.findGpu("my-card")->memory_bytes, Q_INT64_C(48) << 30);
        QVERIFY(!catalog.findGpu("my-card")->cudaTotalKnown());
        // With CUDA's figure, that is the capacity; the driver's is kept beside it.
        const GpuSpec *measured = catalog.findGpu("my-measured-card");
        QVERIFY(measured);
        QCOMPARE(measured->memory_bytes, Q_INT64_C(24200) << 20);
        QCOMPARE(measured->driver_total_bytes, Q_INT64_C(24576) << 20);
        QVERIFY(measured->cudaTotalKnown());
        QVERIFY(
            QString::fromStdString(capacityNote(*measured, ByteUnit::GiB))
                .startsWith("23.63 GiB usable, the total CUDA reports; the driver reports 24 GiB "
                            "and keeps the 376.00 MiB"));
        QDir(dir).removeRecursively();
    }

    // NVIDIA presets give their compute capability; a Hopper GPU without one is 9.0, and one given
    // without an architecture names it. ROCm's total, equal to the driver's, counts as known.
    void gpuPresetsGiveComputeCapability()
    {
        PresetCatalog catalog = PresetCatalog::bundled();
        const auto cc = [&](const char *id) {
            return computeCapabilityName(catalog.findGpu(id)->performance.compute_capability);
        };
        QCOMPARE(cc("h100-80gb"), std::string("9.0"));
        QCOMPARE(cc("b200"), std::string("10.0"));
        QCOMPARE(cc("b300"), std::string("10.3"));
        QCOMPARE(cc("gb300"), std::string("10.3"));
        QCOMPARE(catalog.findGpu("gb300")->memory_bytes, Q_INT64_C(283136) << 20); // 276.50 GiB
        QCOMPARE(catalog.findGpu("gb300")->driver_total_bytes, Q_INT64_C(284208) << 20);
        QCOMPARE(cc("rtx-5090"), std::string("12.0"));
        QCOMPARE(cc("rtx-3090"), std::string("8.6"));
        QCOMPARE(cc("mi210"), std::string());
        for (const GpuSpec &g : catalog.gpus())
            QVERIFY2((g.vendor == "NVIDIA") == g.performance.compute_capability.known(),
                     g.id.c_str());
        const GpuSpec *mi210 = catalog.findGpu("mi210");
        QVERIFY(mi210->cudaTotalKnown());
        QCOMPARE(mi210->memory_bytes, mi210->driver_total_bytes);
        QCOMPARE(capacityNote(*mi210, ByteUnit::GiB),
                 std::string(
                     "63.98 GiB usable, the total CUDA reports, which is the driver's total"));

        QTemporaryDir dir;
        QFile f(dir.path() + "/mine.yaml");
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write("format: membudget-presets/1\ngpus:\n"
                "  - {id: my-hopper, memory_gib: 96, architecture: hopper}\n"
                "  - {id: my-blackwell, memory_gib: 180, compute_capability: \"10.3\"}\n"
                "  - {id: my-ampere, memory_gib: 24, compute_capability: 8.6}\n");
        f.close();
        QVERIFY(catalog.addFolder(dir.path().toStdString()).empty());
        QCOMPARE(cc("my-hopper"), std::string("9.0"));
        QCOMPARE(cc("my-blackwell"), std::string("10.3"));
        QCOMPARE(catalog.findGpu("my-blackwell")->performance.architecture,
                 GpuArchitecture::Blackwell);
        QCOMPARE(catalog.findGpu("my-ampere")->performance.architecture, GpuArchitecture::Ampere);
        ComputeCapability parsed;
        for (const char *bad : {"9", "9.", ".0", "sm90", "9.0.1", "0.0", "100.0", " 9.0"})
            QVERIFY2(!parseComputeCapability(bad, parsed), bad);
    }
};

QTEST_APPLESS_MAIN(TestScenarioYaml)
#include "tst_scenario_yaml.moc"
