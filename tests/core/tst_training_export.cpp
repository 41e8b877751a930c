// SPDX-License-Identifier: GPL-3.0-or-later
// export-config in the core: each format carries the scenario's settings (parsed back with
// nlohmann/json and yaml-cpp), uses only documented keys (tests/data/export-keys), says what it
// cannot express, refuses inference scenarios, and keeps hostile scenario names inside comments and
// string literals. tests/export/check_exports.py checks the same files with Python's own parsers.
#include "export/export_text.h"
#include "export/training_export.h"
#include "io/preset_catalog.h"

#include <QFile>
#include <QtTest>

#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <set>

using namespace membudget;

namespace {

std::set<std::string> keyList(const char *format)
{
    std::set<std::string> keys;
    QFile f(QStringLiteral(MEMBUDGET_SOURCE_DIR "/tests/data/export-keys/%1.keys")
                .arg(QLatin1String(format)));
    if (!f.open(QIODevice::ReadOnly))
        qFatal("no key list for %s", format);
    for (const QByteArray &raw : f.readAll().split('\n')) {
        const QByteArray line = raw.trimmed();
        if (!line.isEmpty() && !line.startsWith('#'))
            keys.insert(line.toStdString());
    }
    return keys;
}

void jsonPaths(const nlohmann::json &j, const std::string &prefix, std::vector<std::string> &out)
{
    if (!j.is_object())
        return;
    for (auto it = j.begin(); it != j.end(); ++it) {
        out.push_back(prefix + it.key());
        jsonPaths(it.value(), prefix + it.key() + ".", out);
    }
}

void yamlPaths(const YAML::Node &n, const std::string &prefix, std::vector<std::string> &out)
{
    if (!n.IsMap())
        return;
    for (const auto &kv : n) {
        const std::string key = kv.first.as<std::string>();
        out.push_back(prefix + key);
        yamlPaths(kv.second, prefix + key + ".", out);
    }
}

Scenario scenario(Method method, Precision precision, Sharding sharding, int gpus = 4)
{
    Scenario s = defaultScenario();
    s.name = "test";
    s.model = ModelSpec{};
    s.model.preset = "mistral-7b-v0.1";
    s.training.method = method;
    s.training.precision = precision;
    s.training.quantization = method == Method::Qlora ? Quantization::Nf4Double
                                                      : Quantization::None;
    s.training.micro_batch_size = 3;
    s.training.gradient_accumulation_steps = 5;
    s.training.sequence_length = 3072;
    s.training.lora.rank = 24;
    s.training.lora.alpha = 48;
    s.training.lora.dropout = 0.05;
    s.parallelism.gpus = gpus;
    s.parallelism.sharding = sharding;
    return s;
}

TrainingExport exported(const Scenario &s, TrainingFormat f)
{
    std::string problem;
    const auto e = exportTrainingConfig(s, PresetCatalog::bundled(), f, problem);
    if (!e)
        qFatal("export failed: %s", problem.c_str());
    return *e;
}

bool has(const std::string &text, const std::string &piece)
{
    return text.find(piece) != std::string::npos;
}

} // namespace

class TestTrainingExport : public QObject
{
    Q_OBJECT
private slots:
    void deepspeedCarriesTheSettings_data()
    {
        QTest::addColumn<int>("sharding");
        QTest::addColumn<int>("precision");
        QTest::addColumn<int>("stage");
        QTest::addColumn<QString>("section");
        QTest::newRow("zero2 mixed-bf16")
            << int(Sharding::Zero2) << int(Precision::MixedBf16) << 2 << "bf16";
        QTest::newRow("zero3 pure bf16")
            << int(Sharding::Zero3) << int(Precision::Bf16) << 3 << "bf16";
        QTest::newRow("zero1 mixed-fp16")
            << int(Sharding::Zero1) << int(Precision::MixedFp16) << 1 << "fp16";
        QTest::newRow("none amp-bf16")
            << int(Sharding::None) << int(Precision::AmpBf16) << 0 << "torch_autocast";
        QTest::newRow("fsdp-full fp32")
            << int(Sharding::FsdpFull) << int(Precision::Fp32) << 3 << "";
    }
    void deepspeedCarriesTheSettings()
    {
        QFETCH(int, sharding);
        QFETCH(int, precision);
        QFETCH(int, stage);
        QFETCH(QString, section);
        Scenario s = scenario(Method::Full, Precision(precision), Sharding(sharding));
        s.training.offload.optimizer = sharding != int(Sharding::None)
                                       && sharding != int(Sharding::FsdpFull);
        const TrainingExport e = exported(s, TrainingFormat::DeepSpeed);
        const auto j = nlohmann::json::parse(e.text);
        QCOMPARE(j["train_micro_batch_size_per_gpu"].get<int>(), 3);
        QCOMPARE(j["gradient_accumulation_steps"].get<int>(), 5);
        QCOMPARE(j["train_batch_size"].get<int>(), 3 * 5 * 4);
        QCOMPARE(j["zero_optimization"]["stage"].get<int>(), stage);
        QCOMPARE(j["zero_optimization"].contains("offload_optimizer"), s.training.offload.optimizer);
        if (!section.isEmpty())
            QVERIFY(j[section.toStdString()]["enabled"].get<bool>());
        else
            QVERIFY(!j.contains("bf16") && !j.contains("fp16") && !j.contains("torch_autocast"));
        if (precision == int(Precision::Bf16)) {
            QVERIFY(j["bf16"]["bf16_master_weights_and_grads"].get<bool>());
            QVERIFY(j["bf16"]["bf16_optimizer_states"].get<bool>());
            Scenario fp32States = s; // offloaded: DeepSpeedCPUAdam keeps fp32 states
            fp32States.parallelism.deepspeed.bf16_optimizer_states = false;
            const auto f = nlohmann::json::parse(
                exported(fp32States, TrainingFormat::DeepSpeed).text);
            QVERIFY(f["bf16"]["bf16_master_weights_and_grads"].get<bool>());
            QVERIFY(!f["bf16"]["bf16_optimizer_states"].get<bool>());
        }
        s.parallelism.deepspeed = {2e8, false, 5e8, std::nullopt, std::nullopt};
        const auto sized = nlohmann::json::parse(exported(s, TrainingFormat::DeepSpeed).text);
        const auto &z = sized["zero_optimization"];
        QCOMPARE(z.value("reduce_bucket_size", 0LL), stage > 0 ? 200000000LL : 0LL);
        QCOMPARE(z.contains("overlap_comm"), stage > 0);
        QCOMPARE(z.value("sub_group_size", 0LL), stage == 3 ? 500000000LL : 0LL);
        const auto keys = keyList("deepspeed");
        std::vector<std::string> paths;
        jsonPaths(sized, "", paths);
        for (const std::string &p : paths)
            QVERIFY2(keys.count(p), p.c_str());
        QCOMPARE(e.fileName, std::string("ds_config.json"));
        QVERIFY(!e.header.empty());
    }

    // Under the Trainer its bf16 flag is DeepSpeed's bf16 section: AMP and pure bf16 export as
    // "bf16" (what the estimate steps them as, mixed-bf16), not torch_autocast; bf16 master weights
    // only where the scenario asks for them.
    void deepspeedUnderTheTrainerIsMixed()
    {
        Scenario s = scenario(Method::Full, Precision::AmpBf16, Sharding::Zero2);
        s.training.stack = {Stack::HfTrainer, "", ""};
        const auto json = [&] {
            return nlohmann::json::parse(exported(s, TrainingFormat::DeepSpeed).text);
        };
        QVERIFY(json()["bf16"]["enabled"].get<bool>());
        QVERIFY(!json().contains("torch_autocast"));
        s.training.precision = Precision::Bf16;
        QVERIFY(!json()["bf16"].contains("bf16_master_weights_and_grads"));
        s.parallelism.deepspeed.bf16_master_weights = true;
        QVERIFY(json()["bf16"]["bf16_master_weights_and_grads"].get<bool>());
        s.training.stack = {Stack::PlainTorch, "", ""}; // DeepSpeed's own torch_autocast
        s.training.precision = Precision::AmpBf16;
        QVERIFY(json()["torch_autocast"]["enabled"].get<bool>());
    }

    void accelerateCarriesTheSettings()
    {
        const auto keys = keyList("accelerate");
        for (Sharding sh : {Sharding::None,
                            Sharding::Zero2,
                            Sharding::Zero3,
                            Sharding::FsdpFull,
                            Sharding::FsdpGradOp}) {
            Scenario s = scenario(Method::Lora, Precision::AmpBf16, sh);
            s.training.checkpointing = Checkpointing::Full;
            s.training.offload.parameters = sh == Sharding::Zero3 || sh == Sharding::FsdpFull;
            const TrainingExport e = exported(s, TrainingFormat::Accelerate);
            QVERIFY(e.text.rfind("# Training setup exported by MemBudget", 0) == 0);
            const YAML::Node y = YAML::Load(e.text);
            QCOMPARE(y["num_processes"].as<int>(), 4);
            QCOMPARE(y["mixed_precision"].as<std::string>(), std::string("bf16"));
            std::vector<std::string> paths;
            yamlPaths(y, "", paths);
            for (const std::string &p : paths)
                QVERIFY2(keys.count(p), p.c_str());
            const std::string type = y["distributed_type"].as<std::string>();
            if (sh == Sharding::FsdpFull || sh == Sharding::FsdpGradOp) {
                QCOMPARE(type, std::string("FSDP"));
                QCOMPARE(y["fsdp_config"]["fsdp_reshard_after_forward"].as<std::string>(),
                         std::string(sh == Sharding::FsdpFull ? "FULL_SHARD" : "SHARD_GRAD_OP"));
                QCOMPARE(y["fsdp_config"]["fsdp_offload_params"].as<bool>(),
                         s.training.offload.parameters);
                QVERIFY(y["fsdp_config"]["fsdp_activation_checkpointing"].as<bool>());
            } else if (sh == Sharding::None) {
                QCOMPARE(type, std::string("MULTI_GPU"));
            } else {
                QCOMPARE(type, std::string("DEEPSPEED"));
                QCOMPARE(y["deepspeed_config"]["zero_stage"].as<int>(),
                         sh == Sharding::Zero3 ? 3 : 2);
                QCOMPARE(y["deepspeed_config"]["gradient_accumulation_steps"].as<int>(), 5);
                QCOMPARE(y["deepspeed_config"]["offload_param_device"].as<std::string>(),
                         std::string(s.training.offload.parameters ? "cpu" : "none"));
            }
        }
        // One GPU, fp32: "NO" and "no" stay strings for YAML 1.1 readers (PyYAML).
        const TrainingExport single
            = exported(scenario(Method::Full, Precision::Fp32, Sharding::None, 1),
                       TrainingFormat::Accelerate);
        QVERIFY(has(single.text, "distributed_type: \"NO\""));
        QVERIFY(has(single.text, "mixed_precision: \"no\""));
    }

    // trainer_mixed_precision: false is a Trainer on bf16 weights without its bf16 flag: the
    // exports leave the flag off (accelerate's mixed_precision too) but still load in bf16.
    void trainerMixedPrecisionOffIsExported()
    {
        Scenario s = scenario(Method::Lora, Precision::Bf16, Sharding::None, 1);
        s.training.stack = {Stack::TrlSft, "0.13", ""};
        QVERIFY(has(exported(s, TrainingFormat::Sft).text, "    bf16=True,"));
        s.training.trainer_mixed_precision = false;
        const TrainingExport sft = exported(s, TrainingFormat::Sft);
        QVERIFY(has(sft.text, "    bf16=False,"));
        QVERIFY(has(sft.text, "    fp16=False,"));
        QVERIFY(has(sft.text, "bfloat16"));
        QVERIFY(has(exported(s, TrainingFormat::Accelerate).text, "mixed_precision: \"no\""));
    }

    void pythonCarriesTheSettings()
    {
        Scenario s = scenario(Method::Qlora, Precision::Bf16, Sharding::None, 1);
        s.training.optimizer = Optimizer::PagedAdamW8bit;
        s.training.attention = Attention::Flash;
        s.training.checkpointing = Checkpointing::Full;
        s.training.loss = LossImplementation::Chunked;
        const std::string trainer = exported(s, TrainingFormat::Trainer).text;
        for (const char *piece :
             {"per_device_train_batch_size=3,",
              "gradient_accumulation_steps=5,",
              "bf16=True,",
              "fp16=False,",
              "gradient_checkpointing=True,",
              "optim=\"paged_adamw_8bit\",",
              "use_liger_kernel=True,",
              "r=24,",
              "lora_alpha=48.0,",
              "lora_dropout=0.05,",
              "load_in_4bit=True,",
              "bnb_4bit_use_double_quant=True,",
              "\"mistralai/Mistral-7B-v0.1\"",
              "attn_implementation=\"flash_attention_2\"",
              "prepare_model_for_kbit_training(model, use_gradient_checkpointing=True)",
              "3,072-token sequences"})
            QVERIFY2(has(trainer, piece), piece);
        const std::string sft = exported(s, TrainingFormat::Sft).text;
        for (const char *piece : {"max_length=3072,",
                                  "per_device_train_batch_size=3,",
                                  "gradient_checkpointing=True,",
                                  "peft_config=peft_config,",
                                  "quantization_config=quantization_config,",
                                  "model_init_kwargs={\"dtype\": \"bfloat16\", "
                                  "\"attn_implementation\": \"flash_attention_2\"}"})
            QVERIFY2(has(sft, piece), piece);
        // TRL turns checkpointing on by default: off must be written out.
        s.training.checkpointing = Checkpointing::None;
        QVERIFY(has(exported(s, TrainingFormat::Sft).text, "gradient_checkpointing=False,"));
    }

    // An estimate with transformers' KV cache in the training forward (the Trainer before 5.0)
    // exports use_cache=True, which transformers 5 would otherwise turn off; TRL's SFTTrainer
    // turns it off whatever it is told, which a note says.
    void useCacheAsEstimated()
    {
        Scenario s = scenario(Method::Lora, Precision::Bf16, Sharding::None, 1);
        s.training.checkpointing = Checkpointing::None;
        QVERIFY(!has(exported(s, TrainingFormat::Trainer).text, "use_cache"));
        s.training.stack = {Stack::HfTrainer, "4.57", ""};
        QVERIFY(has(exported(s, TrainingFormat::Trainer).text, "    use_cache=True,"));
        const TrainingExport sft = exported(s, TrainingFormat::Sft);
        QVERIFY(!has(sft.text, "use_cache="));
        QVERIFY(std::any_of(sft.notes.begin(), sft.notes.end(), [](const std::string &n) {
            return has(n, "SFTTrainer turns the model's KV cache off");
        }));
        s.training.checkpointing = Checkpointing::Full;
        QVERIFY(!has(exported(s, TrainingFormat::Trainer).text, "use_cache"));
    }

    // TRL 1.7 and later default SFTConfig.loss_type to "chunked_nll": the SFT export says which
    // loss was estimated; Liger's goes through use_liger_kernel, which turns chunked_nll off.
    void sftLossTypeAsEstimated()
    {
        Scenario s = scenario(Method::Lora, Precision::Bf16, Sharding::None, 1);
        QVERIFY(has(exported(s, TrainingFormat::Sft).text, "    loss_type=\"nll\","));
        s.training.loss = LossImplementation::TrlChunkedNll;
        const TrainingExport sft = exported(s, TrainingFormat::Sft);
        QVERIFY(has(sft.text, "    loss_type=\"chunked_nll\","));
        const TrainingExport trainer = exported(s, TrainingFormat::Trainer);
        QVERIFY(!has(trainer.text, "    loss_type="));
        QVERIFY(std::any_of(trainer.notes.begin(), trainer.notes.end(), [](const std::string &n) {
            return has(n, "only the SFT export (--format sft) sets it");
        }));
        s.training.loss = LossImplementation::LigerFused;
        const TrainingExport liger = exported(s, TrainingFormat::Sft);
        QVERIFY(has(liger.text, "    use_liger_kernel=True,"));
        QVERIFY(!has(liger.text, "loss_type"));
        const TrainingExport ligerTrainer = exported(s, TrainingFormat::Trainer);
        QVERIFY(has(ligerTrainer.text, "    use_liger_kernel=True,"));
        QVERIFY(std::any_of(ligerTrainer.notes.begin(), ligerTrainer.notes.end(), [](auto &n) {
            return has(n, "Liger's RMSNorm, RoPE and SwiGLU kernels");
        }));
    }

    void notesSayWhatCannotBeExpressed()
    {
        Scenario s = scenario(Method::Full, Precision::MixedBf16, Sharding::None, 4);
        s.parallelism.tensor_parallel = 2;
        s.training.checkpointing = Checkpointing::Selective;
        s.training.optimizer = Optimizer::SgdMomentum;
        const TrainingExport e = exported(s, TrainingFormat::Trainer);
        auto noted = [&](const char *piece) {
            for (const std::string &n : e.notes)
                if (has(n, piece))
                    return true;
            return false;
        };
        QVERIFY(noted("tensor parallelism (degree 2)"));
        QVERIFY(noted("selective (attention-only) checkpointing"));
        QVERIFY(noted("sgd-momentum"));
        QVERIFY(noted("mixed-bf16")); // no DeepSpeed: written as amp-bf16
        QVERIFY(has(e.text, "dtype=torch.float32,"));
        QVERIFY(has(e.text, "# Not expressed by these settings:"));
        // The optimizer step in backward has no Hugging Face setting: noted, torchtune's named.
        Scenario inBackward = scenario(Method::Full, Precision::Bf16, Sharding::None, 1);
        inBackward.training.optimizer_in_backward = true;
        inBackward.training.gradient_accumulation_steps = 1;
        const TrainingExport ib = exported(inBackward, TrainingFormat::Trainer);
        QVERIFY(std::any_of(ib.notes.begin(), ib.notes.end(), [](const std::string &n) {
            return has(n, "optimizer_in_bwd: True");
        }));
        // A model without a Hugging Face id gets a placeholder and a note.
        Scenario quick = scenario(Method::Lora, Precision::Bf16, Sharding::None, 1);
        quick.model = ModelSpec{};
        quick.model.parameters = 7e9;
        const TrainingExport q = exported(quick, TrainingFormat::Sft);
        QVERIFY(has(q.text, "model=\"path/to/your/model\""));
        QVERIFY(has(q.text, "replace \"path/to/your/model\""));
        // A model fetched from the Hub is named by its id and revision.
        Scenario hub = quick;
        hub.model.source = "Qwen/Qwen3-8B@refs/pr/3";
        const TrainingExport h = exported(hub, TrainingFormat::Trainer);
        QVERIFY(has(h.text, "\"Qwen/Qwen3-8B\",\n    revision=\"refs/pr/3\","));
    }

    void inferenceIsRefused()
    {
        Scenario s = scenario(Method::Full, Precision::Bf16, Sharding::None, 1);
        s.training.mode = Mode::Inference;
        std::string problem;
        QVERIFY(
            !exportTrainingConfig(s, PresetCatalog::bundled(), TrainingFormat::Trainer, problem));
        QVERIFY(has(problem, "inference scenario"));
        s = scenario(Method::Full, Precision::Bf16, Sharding::None, 1);
        s.model.preset = "no-such-model";
        QVERIFY(
            !exportTrainingConfig(s, PresetCatalog::bundled(), TrainingFormat::Trainer, problem));
    }

    // A scenario name cannot end the comment it is quoted in and inject code or YAML keys.
    void hostileNamesStayInComments()
    {
        Scenario s = scenario(Method::Full, Precision::Bf16, Sharding::None, 1);
        s.name = "x\nimport os; os.system('rm -rf ~')\r\nfoo: 1\x1b[31m\xE2\x80\xAE\xC2\x85";
        for (TrainingFormat f :
             {TrainingFormat::Trainer, TrainingFormat::Sft, TrainingFormat::Accelerate}) {
            const std::string text = exported(s, f).text;
            QVERIFY(!has(text, "\nimport os"));
            QVERIFY(!has(text, "\nfoo: 1"));
            QVERIFY(!has(text, "\x1b"));
            QVERIFY(!has(text, "\xE2\x80\xAE")); // right-to-left override
            QVERIFY(!has(text, "\xC2\x85"));     // C1 next-line
        }
        QCOMPARE(pythonString("a\"b\\c\n\xC3\xA9"), std::string("\"a\\\"b\\\\c\\u000a\\u00e9\""));
        QCOMPARE(pythonFloat(16), std::string("16.0"));
        QCOMPARE(pythonFloat(0.05), std::string("0.05"));
    }

    void formatNames()
    {
        TrainingFormat f = TrainingFormat::Trainer;
        for (const char *name : kTrainingFormatNames) {
            QVERIFY(parseTrainingFormat(name, f));
            QCOMPARE(std::string(trainingFormatName(f)), std::string(name));
        }
        QVERIFY(!parseTrainingFormat("Trainer", f));
    }
};

QTEST_APPLESS_MAIN(TestTrainingExport)
#include "tst_training_export.moc"
