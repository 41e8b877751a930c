// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/memory_estimator.h"
#include "model/parameter_layout.h"
#include "model/scenario.h"
#include "model/stack_profile.h"
#include "model/step_model.h"
#include "model/torch_release.h"
#include "test_architectures.h"

#include <QtTest>

#include <optional>

using namespace membudget;
using namespace membudget::testing;

class TestStackProfile : public QObject
{
    Q_OBJECT
private:
    static EstimateInput input(const ModelArchitecture &arch, Method method, Precision precision)
    {
        EstimateInput in;
        in.arch = arch;
        in.training.method = method;
        in.training.precision = precision;
        if (method == Method::Qlora)
            in.training.quantization = Quantization::Nf4;
        in.training.micro_batch_size = 1;
        in.training.sequence_length = 512;
        in.training.attention = Attention::Flash;
        return in;
    }
    static EstimateInput withStack(EstimateInput in, Stack stack, const std::string &version = "")
    {
        in.training.stack = {stack, version, ""};
        applyStackDefaults(in.training, in.parallelism);
        return in;
    }
    static qint64 at(const MemoryEstimate &e, Phase p, Component c) { return e.phase(p)[c]; }
    // Llama-3.2-1B at 4,096 tokens on one 8-GPU tensor-parallel group.
    static EstimateInput tensorParallel8(Precision precision)
    {
        EstimateInput in = input(llama32_1b(), Method::Full, precision);
        in.training.sequence_length = 4096;
        in.parallelism.gpus = 8;
        in.parallelism.tensor_parallel = 8;
        return in;
    }

private slots:
    void versionsParse()
    {
        LibraryVersion v;
        QVERIFY(parseLibraryVersion("4.46.3", v));
        QCOMPARE(v, (LibraryVersion{4, 46, 3}));
        QVERIFY(parseLibraryVersion("v0.25", v));
        QCOMPARE(v, (LibraryVersion{0, 25, 0}));
        QVERIFY(parseLibraryVersion("4.57.0.dev0", v));
        QCOMPARE(v, (LibraryVersion{4, 57, 0}));
        QVERIFY(!parseLibraryVersion("", v));
        QVERIFY(!parseLibraryVersion("latest", v));
        QVERIFY(!parseLibraryVersion("4.46 beta", v));
    }

    // transformers' default optim and loss by release (stack_profile.cpp cites the PRs).
    void hfTrainerDefaultsFollowTheVersion_data()
    {
        QTest::addColumn<QString>("version");
        QTest::addColumn<int>("optimizer");
        QTest::addColumn<int>("loss");
        QTest::newRow("4.31: adamw_hf, sliced fp32 copy")
            << "4.31" << int(Optimizer::AdamWFused) << int(LossImplementation::HfLegacy);
        QTest::newRow("4.40: adamw_torch")
            << "4.40" << int(Optimizer::AdamW) << int(LossImplementation::HfLegacy);
        QTest::newRow("4.46: ForCausalLMLoss with a shifted copy")
            << "4.46.1" << int(Optimizer::AdamW) << int(LossImplementation::Hf446);
        QTest::newRow("4.49: padded labels")
            << "4.49" << int(Optimizer::AdamW) << int(LossImplementation::Hf);
        QTest::newRow("4.54: adamw_torch_fused")
            << "4.54" << int(Optimizer::AdamWFused) << int(LossImplementation::Hf);
        QTest::newRow("newest known")
            << "" << int(Optimizer::AdamWFused) << int(LossImplementation::Hf);
    }
    void hfTrainerDefaultsFollowTheVersion()
    {
        QFETCH(QString, version);
        QFETCH(int, optimizer);
        QFETCH(int, loss);
        const EstimateInput in = withStack(input(tinyLlama(), Method::Full, Precision::Bf16),
                                           Stack::HfTrainer,
                                           version.toStdString());
        QCOMPARE(int(in.training.optimizer), optimizer);
        QCOMPARE(int(in.training.loss), loss);
    }

    void explicitKeysWinAndPlainTorchKeepsTodaysBehaviour()
    {
        EstimateInput in = input(tinyLlama(), Method::Full, Precision::Bf16);
        in.training.optimizer = Optimizer::Lion;
        in.training.stack.name = Stack::Torchtune;
        ExplicitKeys given;
        given.optimizer = true;
        applyStackDefaults(in.training, in.parallelism, given);
        QCOMPARE(in.training.optimizer, Optimizer::Lion);
        QCOMPARE(in.training.loss, LossImplementation::TorchtuneChunked);
        QCOMPARE(in.parallelism.sharding, Sharding::FsdpFull);
        // torchtitan's loss upcasts the model's 16-bit output (PR #642, October 2024): hf's bytes,
        // not those of the fp32 output its model returned before.
        in.training.stack.name = Stack::Torchtitan;
        applyStackDefaults(in.training, in.parallelism, given);
        QCOMPARE(in.training.loss, LossImplementation::Hf);

        const EstimateInput plain = input(tinyLlama(), Method::Full, Precision::Bf16);
        const EstimateInput viaStack = withStack(plain, Stack::PlainTorch);
        QVERIFY(viaStack.training == plain.training);
        QCOMPARE(estimateMemory(viaStack).peak_allocated, estimateMemory(plain).peak_allocated);
    }

    // adamw_torch_fused has no foreach temporaries: the optimizer step of a full bf16 fine-tune
    // loses the group-wide sqrt(exp_avg_sq) copy (the size of one state: 2 bytes per parameter).
    void hfTrainerFusedOptimizerDropsForeachTemporaries()
    {
        const EstimateInput plain = input(tinyLlama(), Method::Full, Precision::Bf16);
        const EstimateInput hf = withStack(plain, Stack::HfTrainer);
        const MemoryEstimate a = estimateMemory(plain);
        const MemoryEstimate b = estimateMemory(hf);
        const qint64 psi = a.trainable_parameters;
        QCOMPARE(at(a, Phase::OptimizerStep, Component::Temporaries)
                     - at(b, Phase::OptimizerStep, Component::Temporaries),
                 2 * psi);
    }

    // torch.optim.AdamW's workspace by release (model/torch_release.h), checked against the CPU
    // harness in tools/measure/compare.py: 1.13 loops tensor by tensor, 2.0 keeps two
    // parameter-sized lists, 2.1 and later one.
    void torchReleaseSizesTheAdamWWorkspace_data()
    {
        QTest::addColumn<QString>("torch");
        QTest::addColumn<int>("lists"); // state-sized lists; -1: per tensor
        QTest::newRow("1.13: one tensor at a time") << "1.13" << -1;
        QTest::newRow("2.0: roots and denominators") << "2.0.1" << 2;
        QTest::newRow("2.1: eps added in place") << "2.1" << 1;
        QTest::newRow("newest known") << "" << 1;
    }
    void torchReleaseSizesTheAdamWWorkspace()
    {
        QFETCH(QString, torch);
        QFETCH(int, lists);
        const EstimateInput in = withStack(input(tinyLlama(), Method::Full, Precision::Bf16),
                                           Stack::PlainTorch,
                                           torch.toStdString());
        const MemoryEstimate e = estimateMemory(in);
        const qint64 psi = e.trainable_parameters;
        const qint64 workspace = at(e, Phase::OptimizerStep, Component::Temporaries);
        if (lists > 0) {
            QCOMPARE(workspace, lists * 2 * psi);
            return;
        }
        // Square root, quotient and the previous tensor's denominator: three MLP matrices (gate
        // then up), or two embeddings when those are larger.
        const ModelArchitecture a = tinyLlama();
        const qint64 mlp = a.hidden_size * a.intermediate_size;
        const qint64 embedding = a.hidden_size * a.vocab_size;
        QCOMPARE(workspace, 2 * std::max(3 * mlp, 2 * embedding));
    }

    // The Trainer's adamw_torch_fused default needs torch 2.8 (transformers PR #37358); a scenario
    // on an older torch gets adamw_torch, and switching stacks keeps the release.
    void trainerOptimizerFollowsTheTorchRelease()
    {
        EstimateInput in = input(tinyLlama(), Method::Full, Precision::Bf16);
        in.training.stack = {Stack::HfTrainer, "4.57", "2.7"};
        applyStackDefaults(in.training, in.parallelism);
        QCOMPARE(in.training.optimizer, Optimizer::AdamW);
        QCOMPARE(describeStack(in.training.stack),
                 std::string("hf-trainer (transformers 4.57, PyTorch 2.7)"));
        setTorchRelease(in.training, in.parallelism, "");
        QCOMPARE(in.training.optimizer, Optimizer::AdamWFused);
        in.training.optimizer = Optimizer::Lion; // chosen by hand: kept
        setTorchRelease(in.training, in.parallelism, "2.0");
        QCOMPARE(in.training.optimizer, Optimizer::Lion);
        QCOMPARE(torchReleaseRange(in.training.stack), 5);
        switchStack(in.training, in.parallelism, Stack::PlainTorch);
        QCOMPARE(in.training.stack.version, std::string("2.0"));
        QVERIFY(in.training.stack.torch.empty());
        QCOMPARE(torchReleaseRange(in.training.stack), 5);
        switchStack(in.training, in.parallelism, Stack::TrlSft);
        QCOMPARE(in.training.stack.torch, std::string("2.0"));
        QCOMPARE(in.training.optimizer, Optimizer::AdamW);
    }

    // PEFT prepare_model_for_kbit_training: every parameter that is not 4-bit becomes fp32.
    void kbitPreparationUpcastsTheParametersLeftInSixteenBit()
    {
        const ModelArchitecture arch = tinyLlama();
        // A 16-bit base (torch_dtype=bfloat16) under the Trainer's bf16 autocast.
        const EstimateInput plain = input(arch, Method::Qlora, Precision::Bf16);
        const EstimateInput hf = withStack(plain, Stack::HfTrainer);
        QVERIFY(!resolveStackChoices(plain).training.kbit_fp32_upcast.value_or(false));
        QVERIFY(resolveStackChoices(hf).training.kbit_fp32_upcast.value_or(false));
        double unquantized = 0;
        for (const TensorGroup &g : parameterLayout(arch))
            if (!g.linear || g.role == TensorRole::LmHead)
                unquantized += g.totalElements();
        const MemoryEstimate a = estimateMemory(plain);
        const MemoryEstimate b = estimateMemory(hf);
        QCOMPARE(at(b, Phase::Forward, Component::Weights)
                     - at(a, Phase::Forward, Component::Weights),
                 static_cast<qint64>(2 * unquantized));
        // The switch overrides the stack.
        EstimateInput off = hf;
        off.training.kbit_fp32_upcast = false;
        QCOMPARE(at(estimateMemory(off), Phase::Forward, Component::Weights),
                 at(a, Phase::Forward, Component::Weights));
    }

    // transformers builds a DynamicCache in a training forward unless use_cache is off: the
    // Trainer turns it off from transformers 5.0, TRL's SFTTrainer from 0.22; checkpointing always.
    void trainingCacheFollowsTheStack()
    {
        const EstimateInput plain = input(tinyLlama(), Method::Full, Precision::Bf16);
        const auto resolved = [](const EstimateInput &in) {
            return trainingKvCache(resolveStackChoices(in).training);
        };
        QVERIFY(!resolved(plain));
        QVERIFY(resolved(withStack(plain, Stack::HfTrainer, "4.57")));
        QVERIFY(!resolved(withStack(plain, Stack::HfTrainer, "5.0")));
        QVERIFY(!resolved(withStack(plain, Stack::HfTrainer))); // 5.0, the newest known
        QVERIFY(resolved(withStack(plain, Stack::TrlSft, "0.21")));
        QVERIFY(!resolved(withStack(plain, Stack::TrlSft, "0.22")));
        QVERIFY(!resolved(withStack(plain, Stack::Torchtitan)));
        EstimateInput checkpointed = withStack(plain, Stack::HfTrainer, "4.57");
        checkpointed.training.checkpointing = Checkpointing::Full;
        QVERIFY(!resolved(checkpointed));
        checkpointed.training.checkpointing = Checkpointing::OpSelective; // not transformers' own
        QVERIFY(resolved(checkpointed));
        EstimateInput inference = withStack(plain, Stack::HfTrainer, "4.57");
        inference.training.mode = Mode::Inference;
        QVERIFY(!resolved(inference));
        // The key overrides the stack; torchtune's and torchtitan's models take no cache.
        EstimateInput on = plain;
        on.training.use_cache = true;
        QVERIFY(resolved(on));
        EstimateInput titan = withStack(on, Stack::Torchtitan);
        std::string key;
        QVERIFY(!validateInput(titan, &key).empty());
        QCOMPARE(key, std::string("training.use_cache"));
        switchStack(on.training, on.parallelism, Stack::Torchtune);
        QVERIFY(!on.training.use_cache.has_value());
    }

    // What use_cache adds to the forward's peak (at the loss) for one stack version.
    static qint64 trainingCacheBytes(const ModelArchitecture &arch,
                                     Precision precision,
                                     Attention attention,
                                     const char *version)
    {
        EstimateInput off = withStack(input(arch, Method::Full, precision),
                                      Stack::HfTrainer,
                                      version);
        off.training.attention = attention;
        off.training.use_cache = false;
        EstimateInput on = off;
        on.training.use_cache = true;
        return estimateMemory(on).phase(Phase::Forward).allocated()
               - estimateMemory(off).phase(Phase::Forward).allocated();
    }

    // The cache keeps each layer's keys and values until the loss. It is extra where the attention
    // saves other tensors: keys and values repeated to every head (eager, GQA), the bf16 casts of
    // AMP's fp32 rotated keys; nothing where it saves the cached ones (flash in bf16, multi-head
    // eager). The CPU harness measures the same (cases *-use-cache*.yaml).
    void trainingCacheHoldsWhatTheAttentionDoesNotSave()
    {
        const ModelArchitecture gqa = tinyLlama();
        ModelArchitecture mha = gqa;
        mha.kv_heads = mha.attention_heads;
        const auto kvBytes = [](const ModelArchitecture &a, double keyBytes, double valueBytes) {
            const double perToken = static_cast<double>(a.kv_heads * a.head_dim);
            return static_cast<qint64>(static_cast<double>(a.layers) * 512 * perToken
                                       * (keyBytes + valueBytes));
        };
        for (const char *version : {"4.55", "4.57"}) {
            QCOMPARE(trainingCacheBytes(gqa, Precision::Bf16, Attention::Eager, version),
                     kvBytes(gqa, 2, 2));
            QCOMPARE(trainingCacheBytes(gqa, Precision::Bf16, Attention::Flash, version), 0);
            QCOMPARE(trainingCacheBytes(mha, Precision::Bf16, Attention::Eager, version), 0);
            QCOMPARE(trainingCacheBytes(gqa, Precision::AmpBf16, Attention::Flash, version),
                     kvBytes(gqa, 4, 0)); // fp32 keys; the values stay bf16, saved as they are
        }
    }

    // GPT-2's fused c_attn: before 4.56 the cache keeps views of the projection's output, which
    // the attention saves anyway; from 4.56 it keeps copies of keys and values, which the attention
    // then saves beside the output (the query's view keeps it).
    void gpt2TrainingCacheFollowsTheFusedProjection()
    {
        const ModelArchitecture gpt2 = gpt2_small();
        const double copies = static_cast<double>(gpt2.layers) * 512 * 2
                              * static_cast<double>(gpt2.hidden_size) * 2;
        QCOMPARE(trainingCacheBytes(gpt2, Precision::Bf16, Attention::Eager, "4.55"), 0);
        QCOMPARE(trainingCacheBytes(gpt2, Precision::Bf16, Attention::Eager, "4.57"),
                 static_cast<qint64>(copies));
    }

    // TRL's SFTConfig.loss_type is "chunked_nll" from 1.7 (PR #5846); the chunks read
    // lm_head.weight, so a quantized lm_head keeps the whole-logits loss, and is refused by hand.
    // TRL's SFTTrainer: a QLoRA sharded over GPUs gets adapters in the model dtype
    // (autocast_adapter_dtype=False) and no k-bit preparation; on one GPU fp32 adapters and the
    // preparation (before 0.26). A scenario's own adapter_precision stays.
    void trlShardedQloraKeepsAdaptersInTheModelDtype()
    {
        EstimateInput one = input(tinyLlama(), Method::Qlora, Precision::Bf16);
        one = withStack(one, Stack::TrlSft, "0.13");
        QCOMPARE(one.training.lora.adapter_precision, AdapterPrecision::Fp32);
        QVERIFY(*resolveStackChoices(one).training.kbit_fp32_upcast);
        EstimateInput two = input(tinyLlama(), Method::Qlora, Precision::Bf16);
        two.parallelism.gpus = 2;
        two.parallelism.sharding = Sharding::FsdpFull;
        two = withStack(two, Stack::TrlSft, "0.13");
        QCOMPARE(two.training.lora.adapter_precision, AdapterPrecision::Base);
        QVERIFY(!*resolveStackChoices(two).training.kbit_fp32_upcast);
        int listed = 0;
        for (const StackChoice &c : stackChoices(two))
            if (c.key == "training.lora.adapter_precision") {
                QVERIFY(c.from_stack);
                ++listed;
            }
        QCOMPARE(listed, 1);
        // Edited from one GPU to two, the stack's choice follows; a chosen dtype stays.
        EstimateInput edited = one;
        edited.parallelism = two.parallelism;
        followStackAdapterPrecision(one.training,
                                    one.parallelism,
                                    edited.training,
                                    edited.parallelism);
        QCOMPARE(edited.training.lora.adapter_precision, AdapterPrecision::Base);
        EstimateInput chosen = two; // fp32 adapters chosen against the stack's bf16
        chosen.training.lora.adapter_precision = AdapterPrecision::Fp32;
        EstimateInput four = chosen;
        four.parallelism.gpus = 4;
        followStackAdapterPrecision(chosen.training,
                                    chosen.parallelism,
                                    four.training,
                                    four.parallelism);
        QCOMPARE(four.training.lora.adapter_precision, AdapterPrecision::Fp32);
        EstimateInput given = input(tinyLlama(), Method::Qlora, Precision::Bf16);
        given.parallelism = two.parallelism;
        given.training.stack = {Stack::TrlSft, "0.13", ""};
        ExplicitKeys keys;
        keys.adapter_precision = true;
        applyStackDefaults(given.training, given.parallelism, keys);
        QCOMPARE(given.training.lora.adapter_precision, AdapterPrecision::Fp32);
        EstimateInput lora = input(tinyLlama(), Method::Lora, Precision::Bf16); // not quantized
        lora.parallelism = two.parallelism;
        lora = withStack(lora, Stack::TrlSft, "0.13");
        QCOMPARE(lora.training.lora.adapter_precision, AdapterPrecision::Fp32);
    }

    void trlChunkedLossFollowsTheStack()
    {
        const EstimateInput plain = input(tinyLlama(), Method::Lora, Precision::Bf16);
        QCOMPARE(withStack(plain, Stack::TrlSft, "1.6").training.loss, LossImplementation::Hf);
        QCOMPARE(withStack(plain, Stack::TrlSft, "1.7").training.loss,
                 LossImplementation::TrlChunkedNll);
        QCOMPARE(withStack(plain, Stack::TrlSft).training.loss, LossImplementation::TrlChunkedNll);
        QCOMPARE(withStack(plain, Stack::HfTrainer).training.loss, LossImplementation::Hf);
        EstimateInput gptq = input(tinyLlama(), Method::Qlora, Precision::Bf16);
        gptq.training.quantization = Quantization::Gptq;
        gptq.training.quantization_options.lm_head = true;
        EstimateInput sft = withStack(gptq, Stack::TrlSft);
        QCOMPARE(sft.training.loss, LossImplementation::Hf);
        std::string key;
        QVERIFY(validateInput(sft, &key).empty());
        sft.training.loss = LossImplementation::TrlChunkedNll;
        QVERIFY(!validateInput(sft, &key).empty());
        QCOMPARE(key, std::string("training.loss"));
    }

    // accelerate wraps a Trainer's forward in autocast for bf16=True, 16-bit weights too, but not
    // under DeepSpeed: TRL's chunks then cast lm_head's fp32 copy back to 16-bit (V x H x 2 more
    // at the matmul, while the logits are 16-bit there); the hf loss does not move.
    void trainerAutocastFollowsTheStack()
    {
        // Llama-3.2-1B: lm_head's fp32 copy (1 GB) makes the forward's peak.
        EstimateInput plain = input(llama32_1b(), Method::Full, Precision::Bf16);
        plain.training.checkpointing = Checkpointing::Full; // as TRL's default
        plain.training.loss = LossImplementation::TrlChunkedNll;
        const EstimateInput sft = withStack(plain, Stack::TrlSft);
        QVERIFY(!trainerAutocast(plain));
        QVERIFY(trainerAutocast(sft));
        EstimateInput deepSpeed = sft;
        deepSpeed.parallelism.gpus = 2;
        deepSpeed.parallelism.sharding = Sharding::Zero2;
        QVERIFY(!trainerAutocast(deepSpeed));
        EstimateInput fp32 = withStack(input(tinyLlama(), Method::Full, Precision::Fp32),
                                       Stack::TrlSft);
        QVERIFY(!trainerAutocast(fp32));
        const double vh = static_cast<double>(plain.arch.vocab_size)
                          * static_cast<double>(plain.arch.hidden_size);
        const auto forwardPeak = [](EstimateInput in) {
            in.training.loss = LossImplementation::TrlChunkedNll;
            return static_cast<double>(estimateMemory(in).phase(Phase::Forward).allocated());
        };
        QVERIFY(forwardPeak(sft) - forwardPeak(plain) > vh); // 2 x V x H less two 256 x V

        EstimateInput hf = sft;
        hf.training.loss = LossImplementation::Hf;
        EstimateInput hfPlain = plain;
        hfPlain.training.loss = LossImplementation::Hf;
        QCOMPARE(estimateMemory(hf).phase(Phase::Forward).allocated(),
                 estimateMemory(hfPlain).phase(Phase::Forward).allocated());
    }

    // PEFT's fp32 adapters on bf16 weights under a Trainer's bf16=True: lora_A casts the input's
    // fp32 copy back to bf16 and saves that, and lora_B's input is bf16: per token and adapter
    // 2 x (in + r) bytes fewer saved than the same step without autocast. The harness measured it
    // (tools/measure/cases/bf16-lora-all-trainer.yaml). bf16 adapters are not cast at all.
    // DeepSpeed over several GPUs casts the module to bf16 (engine.py, _configure_distributed_model):
    // LoRA adapters are bf16 and PEFT's k-bit preparation is undone, whatever the keys say; one
    // GPU, FSDP and fp32 training keep them. The adapters' states are fp32 under a master copy.
    void deepSpeedCastsTheModuleTo16Bit()
    {
        EstimateInput one = input(tinyLlama(), Method::Lora, Precision::MixedBf16);
        one.training.lora.targets = TargetAllLinear;
        one.training.checkpointing = Checkpointing::None;
        one.training.use_cache = false;
        one = withStack(one, Stack::HfTrainer);
        one.training.precision = Precision::MixedBf16; // DeepSpeed's bf16 with its master copy
        QCOMPARE(one.training.lora.adapter_precision, AdapterPrecision::Fp32);
        EstimateInput zero2 = one;
        zero2.parallelism.gpus = 2;
        zero2.parallelism.sharding = Sharding::Zero2;
        QVERIFY(deepSpeedCastsModule(zero2.training, zero2.parallelism));
        QCOMPARE(stackAdapterPrecision(zero2.training, zero2.parallelism), AdapterPrecision::Base);
        // An explicit fp32 dtype is cast all the same, in the memory and the time model's input.
        QCOMPARE(resolveStackChoices(zero2).training.lora.adapter_precision, AdapterPrecision::Base);
        EstimateInput base = zero2;
        base.training.lora.adapter_precision = AdapterPrecision::Base;
        QCOMPARE(at(estimateMemory(zero2), Phase::Forward, Component::Activations),
                 at(estimateMemory(base), Phase::Forward, Component::Activations));
        EstimateInput fsdp = zero2; // FSDP without a param_dtype keeps fp32 adapters
        fsdp.parallelism.sharding = Sharding::FsdpFull;
        fsdp.training.precision = Precision::Bf16;
        fsdp.training.trainer_mixed_precision = false; // no autocast, no FSDP param_dtype
        QVERIFY(!deepSpeedCastsModule(fsdp.training, fsdp.parallelism));
        QCOMPARE(resolveStackChoices(fsdp).training.lora.adapter_precision, AdapterPrecision::Fp32);
        const double cast = static_cast<double>(
            at(estimateMemory(fsdp), Phase::Forward, Component::Activations)
            - at(estimateMemory(base), Phase::Forward, Component::Activations));
        QVERIFY2(cast > 0, "fp32 adapters keep fp32 copies of their inputs");
        EstimateInput fp32 = zero2;
        fp32.training.precision = Precision::Fp32;
        QVERIFY(!deepSpeedCastsModule(fp32.training, fp32.parallelism));
        EstimateInput single = zero2;
        single.parallelism.gpus = 1;
        QVERIFY(!deepSpeedCastsModule(single.training, single.parallelism));
        // bf16 adapters under DeepSpeed's bf16 optimizer: fp32 master and fp32 Adam states.
        const StepModel states(base);
        QCOMPARE(states.states().trainable_state_bytes, 4.0);
        QCOMPARE(states.states().master_bytes_per_param, 4.0);

        EstimateInput qlora = input(tinyLlama(), Method::Qlora, Precision::Bf16);
        qlora.parallelism.gpus = 2;
        qlora.parallelism.sharding = Sharding::Zero2;
        qlora = withStack(qlora, Stack::HfTrainer);
        QVERIFY(!*resolveStackChoices(qlora).training.kbit_fp32_upcast);
        EstimateInput asked = qlora;
        asked.training.kbit_fp32_upcast = true;
        QVERIFY(!*resolveStackChoices(asked).training.kbit_fp32_upcast);
        QCOMPARE(estimateMemory(asked).peak_allocated, estimateMemory(qlora).peak_allocated);
        for (const StackChoice &c : stackChoices(asked))
            if (c.key == "training.kbit_fp32_upcast")
                QVERIFY2(c.from_stack, "DeepSpeed's cast, not the scenario, decides it");
        EstimateInput oneGpu = asked;
        oneGpu.parallelism.gpus = 1;
        oneGpu.parallelism.sharding = Sharding::None;
        QVERIFY(*resolveStackChoices(oneGpu).training.kbit_fp32_upcast);
    }

    // DeepSpeed's ZeRO optimizers step a master partition of what trains: fp32 unless told
    // otherwise. Pure fp16 has no DeepSpeed setting (mixed-fp16); pure bf16 is its bf16 master
    // weights and optimizer states from 0.18.3 (mixed-bf16 before); AMP is its torch_autocast.
    void deepSpeedKeepsAMasterPartition()
    {
        EstimateInput fp16 = input(tinyLlama(), Method::Full, Precision::Fp16);
        fp16.parallelism.gpus = 4;
        fp16.parallelism.sharding = Sharding::Zero2;
        QCOMPARE(deepSpeedPrecision(fp16.training, fp16.parallelism), Precision::MixedFp16);
        QCOMPARE(resolveStackChoices(fp16).training.precision, Precision::MixedFp16);
        EstimateInput mixed = fp16;
        mixed.training.precision = Precision::MixedFp16;
        QCOMPARE(estimateMemory(fp16).peak_allocated, estimateMemory(mixed).peak_allocated);
        const StepModel half(fp16);
        QCOMPARE(half.states().master_bytes_per_param, 4.0);
        QCOMPARE(half.states().state_bytes, 4.0);
        const double n = static_cast<double>(half.states().trainable);
        const double master = static_cast<double>(
            at(estimateMemory(fp16), Phase::OptimizerStep, Component::MasterWeights));
        QVERIFY2(qAbs(master - 4 * n / 4) < 64, qPrintable(QString::number(master)));
        for (const StackChoice &c : stackChoices(fp16))
            if (c.key == "training.precision") {
                QCOMPARE(c.value, std::string("mixed-fp16"));
                QVERIFY2(c.from_stack, "DeepSpeed, not the scenario, decides it");
            }
        EstimateInput bf16 = fp16; // ZeRO-2 clones a bf16 master partition; bf16 states
        bf16.training.precision = Precision::Bf16;
        QCOMPARE(deepSpeedPrecision(bf16.training, bf16.parallelism), Precision::Bf16);
        const StepModel low(bf16);
        QCOMPARE(low.states().master_bytes_per_param, 2.0);
        QCOMPARE(low.states().state_bytes, 2.0);
        EstimateInput older = bf16;
        older.training.stack = {Stack::DeepSpeed, "0.18.2", ""};
        QCOMPARE(deepSpeedPrecision(older.training, older.parallelism), Precision::MixedBf16);
        older.training.stack = {Stack::DeepSpeed, "0.18.3", ""};
        QCOMPARE(deepSpeedPrecision(older.training, older.parallelism), Precision::Bf16);
        EstimateInput explicitMixed = bf16; // the scenario's bf16_master_weights: false
        explicitMixed.parallelism.deepspeed.bf16_master_weights = false;
        QCOMPARE(deepSpeedPrecision(explicitMixed.training, explicitMixed.parallelism),
                 Precision::MixedBf16);
        EstimateInput ampRaw = fp16; // DeepSpeed's own torch_autocast (plain DeepSpeed)
        ampRaw.training.precision = Precision::AmpBf16;
        QCOMPARE(deepSpeedPrecision(ampRaw.training, ampRaw.parallelism), Precision::AmpBf16);
        // Under the Trainer its bf16 flag turns DeepSpeed's bf16 section on (accelerate's
        // set_mixed_precision) and nothing else: AMP and pure bf16 step as mixed-bf16.
        EstimateInput amp = withStack(fp16, Stack::HfTrainer);
        amp.training.precision = Precision::AmpBf16;
        QCOMPARE(deepSpeedPrecision(amp.training, amp.parallelism), Precision::MixedBf16);
        amp.training.precision = Precision::AmpFp16;
        QCOMPARE(deepSpeedPrecision(amp.training, amp.parallelism), Precision::MixedFp16);
        amp.training.trainer_mixed_precision = false; // no flag: nothing turns DeepSpeed's on
        QCOMPARE(deepSpeedPrecision(amp.training, amp.parallelism), Precision::AmpFp16);
        EstimateInput lora = withStack(bf16, Stack::TrlSft); // fp32 masters and states
        lora.training.method = Method::Lora;
        QCOMPARE(deepSpeedPrecision(lora.training, lora.parallelism), Precision::MixedBf16);
        const StepModel adapters(lora);
        QCOMPARE(adapters.states().master_bytes_per_param, 4.0);
        QCOMPARE(adapters.states().trainable_state_bytes, 4.0);
        lora.parallelism.deepspeed.bf16_master_weights = true; // the file asks for bf16 masters
        QCOMPARE(deepSpeedPrecision(lora.training, lora.parallelism), Precision::Bf16);
        const StepModel bf16Adapters(lora);
        QCOMPARE(bf16Adapters.states().master_bytes_per_param, 2.0);
        QCOMPARE(bf16Adapters.states().trainable_state_bytes, 2.0);
        EstimateInput fsdp = fp16;
        fsdp.parallelism.sharding = Sharding::FsdpFull;
        QCOMPARE(resolveStackChoices(fsdp).training.precision, Precision::Fp16);
        QCOMPARE(at(estimateMemory(fsdp), Phase::OptimizerStep, Component::MasterWeights), 0);
        EstimateInput infer = fp16;
        infer.training.mode = Mode::Inference;
        QCOMPARE(deepSpeedPrecision(infer.training, infer.parallelism), Precision::Fp16);
    }

    // ZeRO-1/2 clone their master partition even from weights already in the master dtype;
    // ZeRO-3 from DeepSpeed 0.18.2 steps those in place.
    void deepSpeedClonesWeightsInTheMasterDtype()
    {
        EstimateInput fp32 = input(tinyLlama(), Method::Full, Precision::Fp32);
        fp32.parallelism.gpus = 4;
        fp32.parallelism.sharding = Sharding::Zero2;
        QCOMPARE(deepSpeedClonedMasterBytes(fp32), 4.0);
        const StepModel zero2(fp32);
        QCOMPARE(zero2.states().master_bytes_per_param, 4.0);
        const double n = static_cast<double>(zero2.states().trainable);
        const double master = static_cast<double>(
            at(estimateMemory(fp32), Phase::OptimizerStep, Component::MasterWeights));
        QVERIFY2(qAbs(master - n) < 64, qPrintable(QString::number(master)));
        EstimateInput amp = fp32; // DeepSpeed's torch_autocast
        amp.training.precision = Precision::AmpBf16;
        QCOMPARE(deepSpeedClonedMasterBytes(amp), 4.0);
        // Under the Trainer AMP is DeepSpeed's mixed-bf16, whose fp32 master mixed-* counts.
        QCOMPARE(deepSpeedClonedMasterBytes(withStack(amp, Stack::HfTrainer)), 0.0);
        EstimateInput mixed = fp32; // an fp32 master of 16-bit weights: mixed-* counts it
        mixed.training.precision = Precision::MixedBf16;
        QCOMPARE(deepSpeedClonedMasterBytes(mixed), 0.0);
        EstimateInput zero3 = fp32;
        zero3.parallelism.sharding = Sharding::Zero3;
        QCOMPARE(deepSpeedClonedMasterBytes(zero3), 0.0); // the newest DeepSpeed
        QCOMPARE(at(estimateMemory(zero3), Phase::OptimizerStep, Component::MasterWeights), 0);
        zero3.training.stack = {Stack::DeepSpeed, "0.18.1", ""};
        QCOMPARE(deepSpeedClonedMasterBytes(zero3), 4.0);
        zero3.training.stack = {Stack::DeepSpeed, "0.18.2", ""};
        QCOMPARE(deepSpeedClonedMasterBytes(zero3), 0.0);
        EstimateInput fsdp = fp32;
        fsdp.parallelism.sharding = Sharding::FsdpFull;
        QCOMPARE(deepSpeedClonedMasterBytes(fsdp), 0.0);
        EstimateInput one = fp32;
        one.parallelism.gpus = 1;
        QCOMPARE(deepSpeedClonedMasterBytes(one), 0.0);
    }

    // ZeRO-Offload's CPU RAM per GPU: a master partition in the master dtype (a copy even where
    // the weights have it), its gradient in the same dtype, the states, and one more copy of the
    // partition in the weights' dtype (ZeRO-1/2's way back, ZeRO-3's gradient partitions); ZeRO-1/2
    // pin a buffer of the largest trainable tensor too. bf16 masters keep fp32 states unless
    // bf16_optimizer_states says otherwise, which DeepSpeed allows only offloaded.
    void zeroOffloadKeepsMasterGradientAndStatesInTheirDtypes()
    {
        EstimateInput mixed = input(tinyLlama(), Method::Full, Precision::MixedBf16);
        mixed.parallelism.gpus = 4;
        mixed.parallelism.sharding = Sharding::Zero2;
        mixed.training.offload.optimizer = true;
        const StepModel model(mixed);
        const double n = model.states().trainable / 4; // this GPU's partition
        const double pinned = 2 * model.states().largest_trainable;
        auto cpu = [](const EstimateInput &in) {
            return static_cast<double>(estimateMemory(in).cpu_offload_bytes);
        };
        auto near = [](double got, double want) { return qAbs(got - want) < 64; };
        QVERIFY2(near(cpu(mixed), n * (4 + 4 + 2 + 8) + pinned),
                 qPrintable(QString::number(cpu(mixed))));
        EstimateInput zero1 = mixed;
        zero1.parallelism.sharding = Sharding::Zero1;
        QVERIFY2(near(cpu(zero1), cpu(mixed)), qPrintable(QString::number(cpu(zero1))));
        EstimateInput bf16 = mixed; // bf16 masters and bf16 states (MemBudget's key: both)
        bf16.training.precision = Precision::Bf16;
        QVERIFY(!deepSpeedFp32OptimizerStates(bf16.training, bf16.parallelism));
        QVERIFY2(near(cpu(bf16), n * (2 + 2 + 2 + 4) + pinned),
                 qPrintable(QString::number(cpu(bf16))));
        EstimateInput fp32States = bf16;
        fp32States.parallelism.deepspeed.bf16_optimizer_states = false;
        QVERIFY(deepSpeedFp32OptimizerStates(fp32States.training, fp32States.parallelism));
        QCOMPARE(StepModel(fp32States).states().state_bytes, 4.0);
        QVERIFY2(near(cpu(fp32States), n * (2 + 2 + 2 + 8) + pinned),
                 qPrintable(QString::number(cpu(fp32States))));
        // Nothing of it moves on the GPU.
        QCOMPARE(estimateMemory(fp32States).peak_allocated, estimateMemory(bf16).peak_allocated);
        EstimateInput zero3 = fp32States; // gradient partitions in CPU RAM; no pinned buffer
        zero3.parallelism.sharding = Sharding::Zero3;
        QVERIFY2(near(cpu(zero3), n * (2 + 2 + 2 + 8)), qPrintable(QString::number(cpu(zero3))));
        EstimateInput amp = zero3; // fp32 weights stepped in place on the GPU, cloned offloaded
        amp.training.precision = Precision::AmpBf16;
        amp.parallelism.deepspeed.bf16_optimizer_states.reset();
        QCOMPARE(deepSpeedClonedMasterBytes(amp), 0.0);
        QVERIFY2(near(cpu(amp), n * (4 + 4 + 4 + 8)), qPrintable(QString::number(cpu(amp))));
        EstimateInput fsdp = bf16; // FSDP: the shards' own gradients, no master
        fsdp.parallelism.sharding = Sharding::FsdpFull;
        QVERIFY2(near(cpu(fsdp), n * (2 + 4)), qPrintable(QString::number(cpu(fsdp))));
    }

    // bf16_optimizer_states as DeepSpeed checks it: fp32 states beside bf16 masters need the
    // optimizer offloaded; bf16 states need bf16 masters. A DeepSpeed file's
    // bf16_master_weights_and_grads without bf16_optimizer_states is DeepSpeed's default: fp32.
    void bf16OptimizerStatesFollowDeepSpeedsRules()
    {
        EstimateInput in = input(tinyLlama(), Method::Full, Precision::Bf16);
        in.parallelism.gpus = 4;
        in.parallelism.sharding = Sharding::Zero2;
        std::string key;
        in.parallelism.deepspeed.bf16_optimizer_states = false;
        QVERIFY(!validateInput(in, &key).empty());
        QCOMPARE(key, std::string("parallelism.deepspeed.bf16_optimizer_states"));
        in.training.offload.optimizer = true;
        key.clear();
        QVERIFY(validateInput(in, &key).empty());
        EstimateInput mixed = in;
        mixed.parallelism.deepspeed.bf16_master_weights = false;
        QVERIFY(validateInput(mixed, &key).empty()); // fp32 masters: false is DeepSpeed's default
        mixed.parallelism.deepspeed.bf16_optimizer_states = true;
        QVERIFY(!validateInput(mixed, &key).empty());
        QCOMPARE(key, std::string("parallelism.deepspeed.bf16_optimizer_states"));
        EstimateInput file = in; // from a DeepSpeed file: bf16_master_weights_and_grads alone
        file.parallelism.deepspeed = {};
        file.parallelism.deepspeed_from_file.bf16_master_weights = true;
        file.parallelism.deepspeed_from_file.bf16_optimizer_states = false;
        QVERIFY(deepSpeedFp32OptimizerStates(file.training, file.parallelism));
        QVERIFY(deepSpeedFp32OptimizerStates(resolveStackChoices(file).training,
                                             resolveStackChoices(file).parallelism));
        // The scenario's bf16_master_weights does not outvote the file's states: DeepSpeed runs
        // what the file says.
        file.parallelism.deepspeed.bf16_master_weights = true;
        QVERIFY(deepSpeedFp32OptimizerStates(file.training, file.parallelism));
        QVERIFY(deepSpeedFp32OptimizerStates(resolveStackChoices(file).training,
                                             resolveStackChoices(file).parallelism));
        file.parallelism.deepspeed.bf16_optimizer_states = true; // the scenario's states key does
        QVERIFY(!deepSpeedFp32OptimizerStates(file.training, file.parallelism));
        EstimateInput alone = in; // the scenario's bf16_master_weights alone: bf16 states
        alone.parallelism.deepspeed = {};
        alone.parallelism.deepspeed.bf16_master_weights = true;
        alone.training.offload.optimizer = false;
        QVERIFY(!deepSpeedFp32OptimizerStates(alone.training, alone.parallelism));
        QVERIFY(validateInput(alone, &key).empty());
        bool listed = false;
        for (const StackChoice &c : stackChoices(alone))
            if (c.key == "parallelism.deepspeed.bf16_optimizer_states") {
                QCOMPARE(c.value, std::string("true"));
                listed = true;
            }
        QVERIFY(listed);
        EstimateInput statesOnly = in; // a file's bf16 states without its bf16 masters
        statesOnly.parallelism.deepspeed = {};
        statesOnly.training.precision = Precision::MixedBf16;
        statesOnly.parallelism.deepspeed_from_file.bf16_optimizer_states = true;
        QVERIFY(!validateInput(statesOnly, &key).empty());
        QCOMPARE(key, std::string("parallelism.deepspeed.bf16_optimizer_states"));
    }

    // ZeRO-1/2 offloading keep a GPU buffer of the largest trainable tensor for gradients on
    // their way to the CPU; ZeRO-3 and unoffloaded runs do not.
    void zeroOffloadStagesGradientsOnTheGpu()
    {
        EstimateInput in = input(tinyLlama(), Method::Full, Precision::MixedBf16);
        in.parallelism.gpus = 4;
        in.parallelism.sharding = Sharding::Zero2;
        in.training.offload.optimizer = true;
        auto staging = [](const EstimateInput &e) {
            const StepModel model(e);
            for (const TimelineTensor &t : model.timeline().tensors)
                if (std::string(t.name) == "ZeRO-Offload gradient staging buffer")
                    return t.size.at(1, 1);
            return -1.0;
        };
        const StepModel model(in);
        QCOMPARE(staging(in), 2 * model.states().largest_trainable);
        QVERIFY(model.states().largest_trainable
                >= double(tinyLlama().vocab_size) * double(tinyLlama().hidden_size));
        EstimateInput zero3 = in;
        zero3.parallelism.sharding = Sharding::Zero3;
        QCOMPARE(staging(zero3), -1.0);
        EstimateInput kept = in;
        kept.training.offload.optimizer = false;
        QCOMPARE(staging(kept), -1.0);
    }

    // FSDP1's reshard-only hook on a frozen decoder-layer unit keeps, under reentrant
    // checkpointing, every recomputed layer input and its .grad until backward ends, two hidden
    // states per layer. Not with TRL 0.27's non-reentrant default, not for full fine-tuning (its
    // units train), not on one GPU.
    void fsdpReshardHookKeepsRecomputedInputs()
    {
        EstimateInput in = input(llama32_1b(), Method::Lora, Precision::Bf16);
        in.training.sequence_length = 4096;
        in.training.checkpointing = Checkpointing::Full;
        in.training.trainer_mixed_precision = false;
        in.parallelism.gpus = 2;
        in.parallelism.sharding = Sharding::FsdpFull;
        in.training.stack = {Stack::TrlSft, "0.13", ""};
        in.training.loss = LossImplementation::LigerFused; // no logits spike to hide the peak
        QVERIFY(stackCheckpointsReentrant(in.training.stack));
        EstimateInput later = in;
        later.training.stack = {Stack::TrlSft, "0.27", ""};
        QVERIFY(!stackCheckpointsReentrant(later.training.stack));
        const double hidden = 4096.0 * static_cast<double>(in.arch.hidden_size) * 2;
        const double layers = static_cast<double>(in.arch.layers);
        const double held = static_cast<double>(estimateMemory(in).peak_allocated
                                                - estimateMemory(later).peak_allocated);
        // Backward's start holds every layer input anyway; its end now holds them and L - 1
        // gradients besides the first layer's recomputation.
        QVERIFY2(held >= (layers - 2) * hidden && held <= 2 * layers * hidden,
                 qPrintable(QString("%1 hidden states").arg(held / hidden)));
        EstimateInput full = in;
        full.training.method = Method::Full;
        EstimateInput fullLater = later;
        fullLater.training.method = Method::Full;
        QCOMPARE(estimateMemory(full).peak_allocated, estimateMemory(fullLater).peak_allocated);
        EstimateInput one = in;
        one.parallelism.gpus = 1;
        one.parallelism.sharding = Sharding::None;
        EstimateInput oneLater = later;
        oneLater.parallelism = one.parallelism;
        QCOMPARE(estimateMemory(one).peak_allocated, estimateMemory(oneLater).peak_allocated);
        QVERIFY(stackCheckpointsReentrant({Stack::HfTrainer, "4.57", ""}));
        QVERIFY(!stackCheckpointsReentrant({Stack::HfTrainer, "5.0", ""}));
        QVERIFY(!stackCheckpointsReentrant({Stack::Torchtitan, "", ""}));
    }

    void trainerAutocastSavesFp32AdaptersInputsIn16Bit()
    {
        EstimateInput trainer = input(tinyLlama(), Method::Lora, Precision::Bf16);
        trainer.training.lora.targets = TargetAllLinear;
        trainer.training.lora.rank = 8;
        trainer = withStack(trainer, Stack::HfTrainer);
        trainer.training.checkpointing = Checkpointing::None;
        trainer.training.use_cache = false;
        QCOMPARE(trainer.training.lora.adapter_precision, AdapterPrecision::Fp32);
        EstimateInput plain = trainer;
        plain.training.stack = {Stack::PlainTorch, "", ""};
        const auto saved = [](const EstimateInput &in) {
            return static_cast<double>(
                at(estimateMemory(in), Phase::Forward, Component::Activations));
        };
        const double perLayer = 2.0 * (6 * 256 + 688) + 2.0 * 7 * 8; // 2 x (in + r), 7 adapters
        QCOMPARE(saved(plain) - saved(trainer), perLayer * 512 * 2);
        trainer.training.lora.adapter_precision = AdapterPrecision::Base;
        plain.training.lora.adapter_precision = AdapterPrecision::Base;
        QCOMPARE(saved(plain), saved(trainer));
    }

    // TrainingArguments' bf16 flag left off (trainer_mixed_precision: false): no autocast, so the
    // fp32 adapters keep their fp32 inputs as without a Trainer; contradictions are refused.
    void trainerMixedPrecisionKeySwitchesTheAutocast()
    {
        EstimateInput trainer = input(tinyLlama(), Method::Lora, Precision::Bf16);
        trainer.training.lora.targets = TargetAllLinear;
        trainer = withStack(trainer, Stack::TrlSft, "0.13");
        trainer.training.checkpointing = Checkpointing::None;
        trainer.training.use_cache = false;
        QVERIFY(trainerMixedPrecision(trainer.training));
        QVERIFY(trainerAutocast(trainer));
        EstimateInput off = trainer;
        off.training.trainer_mixed_precision = false;
        QVERIFY(!trainerMixedPrecision(off.training));
        QVERIFY(!trainerAutocast(off));
        EstimateInput plain = off;
        plain.training.trainer_mixed_precision.reset();
        plain.training.stack = {Stack::PlainTorch, "", ""};
        const auto saved = [](const EstimateInput &in) {
            return at(estimateMemory(in), Phase::Forward, Component::Activations);
        };
        QCOMPARE(saved(off), saved(plain));
        QVERIFY(saved(trainer) < saved(off));
        const auto choice = [](const EstimateInput &in) {
            for (const StackChoice &c : stackChoices(in))
                if (c.key == "training.trainer_mixed_precision")
                    return std::optional<StackChoice>(c);
            return std::optional<StackChoice>();
        };
        QCOMPARE(choice(trainer)->value, std::string("true"));
        QVERIFY(choice(trainer)->from_stack);
        QCOMPARE(choice(off)->value, std::string("false"));
        QVERIFY(!choice(off)->from_stack);
        QVERIFY(!choice(plain).has_value());
        std::string key;
        QVERIFY(validateInput(plain, &key).empty());   // plain without the key: valid
        plain.training.trainer_mixed_precision = true; // not a Trainer stack
        QVERIFY(!validateInput(plain, &key).empty());
        QCOMPARE(key, std::string("training.trainer_mixed_precision"));
        const auto refused = [&key](const EstimateInput &in) {
            key.clear();
            return !validateInput(in, &key).empty() && key == "training.trainer_mixed_precision";
        };
        EstimateInput amp = off;
        amp.training.precision = Precision::AmpBf16; // AMP is the flag itself
        QVERIFY(refused(amp));
        EstimateInput fp32 = trainer;
        fp32.training.precision = Precision::Fp32;
        fp32.training.trainer_mixed_precision = true; // fp32 weights under the flag are AMP
        QVERIFY(refused(fp32));
        EstimateInput mixed = off;
        mixed.training.precision = Precision::MixedBf16; // DeepSpeed's or Megatron's master copy
        QVERIFY(refused(mixed));
        EstimateInput deepSpeed = off;
        deepSpeed.parallelism.gpus = 2;
        deepSpeed.parallelism.sharding = Sharding::Zero2;
        QVERIFY(refused(deepSpeed));
        deepSpeed.parallelism.gpus = 1; // one GPU: accelerate autocasts as without DeepSpeed
        deepSpeed.training.offload.optimizer = true;
        QVERIFY(validateInput(deepSpeed, &key).empty());
    }

    // chunked_nll's forward holds one 256-token chunk's fp32 chain whatever the sequence length
    // (logits, log-softmax, and the logged entropy's exp and product: 4 x 256 x V x 4 bytes), and
    // a bf16 lm_head's fp32 copy (V x H x 4) while the chunk's matmul runs.
    void trlChunkedLossHoldsOneChunk()
    {
        EstimateInput in = input(tinyLlama(), Method::Lora, Precision::Bf16);
        in.training.loss = LossImplementation::TrlChunkedNll;
        const double v = static_cast<double>(in.arch.vocab_size);
        const auto logitsAt = [&](std::int64_t tokens) {
            in.training.sequence_length = tokens;
            return static_cast<double>(at(estimateMemory(in), Phase::Forward, Component::Logits));
        };
        const double shortRun = logitsAt(512);
        const double longRun = logitsAt(4096);
        QVERIFY(shortRun >= 4 * 256 * v * 4);
        QVERIFY(longRun - shortRun <= 16.0 * (4096 - 512)); // the int64 labels and order only
        in.training.loss = LossImplementation::Hf; // the whole fp32 chain grows with the tokens
        QVERIFY(logitsAt(4096) - logitsAt(512) > 4 * (4096 - 512) * v);
    }

    // Under tensor parallelism TRL's chunked loss gathers the split lm_head whole (full_tensor())
    // and holds it through the loss's backward: each chunk's logits cover the whole vocabulary (at
    // the forward's peak, the matmul, its 16-bit output) and the 16-bit gathered weight sits beside
    // its fp32 copy and autocast's copy back.
    void trlChunkedLossGathersASplitHead()
    {
        const EstimateInput in = withStack(tensorParallel8(Precision::Bf16), Stack::TrlSft, "1.9");
        QCOMPARE(in.training.loss, LossImplementation::TrlChunkedNll);
        const double V = static_cast<double>(in.arch.vocab_size);
        const double H = static_cast<double>(in.arch.hidden_size);
        const MemoryEstimate e = estimateMemory(in);
        QVERIFY(static_cast<double>(at(e, Phase::Forward, Component::Logits)) >= 256 * V * 2);
        const double copies = static_cast<double>(at(e, Phase::Forward, Component::Temporaries));
        QVERIFY2(copies >= (2 + 4 + 2) * V * H, qPrintable(QString::number(copies)));
        EstimateInput one = in; // one GPU: the same chunk, no gathered copy beside it
        one.parallelism.gpus = 1;
        one.parallelism.tensor_parallel = 1;
        const MemoryEstimate whole = estimateMemory(one);
        QCOMPARE(at(whole, Phase::Forward, Component::Logits),
                 at(e, Phase::Forward, Component::Logits));
        QVERIFY(static_cast<double>(at(whole, Phase::Forward, Component::Temporaries))
                < (4 + 2 + 1) * V * H);
    }

    // The loss's fp32 chain (T tokens, V vocabulary): transformers >= 4.49 holds the 16-bit logits,
    // their fp32 upcast and the fp32 log-softmax (10 bytes x T x V); 4.46-4.48 add a shifted fp32
    // copy (14); torchtune keeps every chunk's fp32 log-softmax and one chunk's upcast (2 + 4 + 4/8);
    // Liger never builds the T x V logits.
    void lossVariantsSizeTheLogitsChain()
    {
        EstimateInput in = input(tinyLlama(), Method::Full, Precision::Bf16);
        const double tv = 512.0 * 1000.0;
        auto logits = [&](LossImplementation loss) {
            in.training.loss = loss;
            return static_cast<double>(estimateMemory(in).derivation.logits_forward_bytes);
        };
        const double hf = logits(LossImplementation::Hf);
        const double hf446 = logits(LossImplementation::Hf446);
        const double tune = logits(LossImplementation::TorchtuneChunked);
        const double liger = logits(LossImplementation::LigerFused);
        QCOMPARE(hf446 - hf, 4 * tv);
        QCOMPARE(hf - tune, (10 - 6.5) * tv);
        // Liger: a chunk of T / ceil(V / H) tokens' 16-bit logits and the bf16 grad_input (T x H).
        QCOMPARE(liger, 512.0 * (1000.0 / std::ceil(1000.0 / 256)) * 2 + 512.0 * 256 * 2);
    }

    // DeepSpeedZeroOptimizer.backward: one reduce bucket, two with overlap_comm.
    void deepSpeedBucketsFollowTheConfig()
    {
        EstimateInput in = input(llama32_1b(), Method::Full, Precision::MixedBf16);
        in.parallelism.gpus = 2;
        in.parallelism.sharding = Sharding::Zero2;
        in.training.stack.name = Stack::DeepSpeed;
        in.parallelism.deepspeed.reduce_bucket_size = 2e8;
        in.parallelism.deepspeed.overlap_comm = true;
        const qint64 both = at(estimateMemory(in), Phase::Backward, Component::Temporaries);
        in.parallelism.deepspeed.overlap_comm = false;
        const qint64 one = at(estimateMemory(in), Phase::Backward, Component::Temporaries);
        QCOMPARE(both - one, static_cast<qint64>(2e8 * 2));
        // DeepSpeed's own defaults: 5e8 elements, overlap_comm only for ZeRO-3.
        in.parallelism.deepspeed = {};
        const EstimateInput resolved = resolveStackChoices(in);
        QCOMPARE(*resolved.parallelism.deepspeed.reduce_bucket_size, 5e8);
        QVERIFY(!*resolved.parallelism.deepspeed.overlap_comm);
        QCOMPARE(*resolved.parallelism.deepspeed.sub_group_size, 1e9); // config.py's default
    }

    // accelerate's FSDP plugin under bf16: MixedPrecision(param_dtype=bf16): the layers run as a
    // pure bf16 model while shards and states stay fp32.
    void accelerateFsdpComputesInBf16()
    {
        EstimateInput plain = input(llama32_1b(), Method::Full, Precision::AmpBf16);
        plain.parallelism.gpus = 8;
        plain.parallelism.sharding = Sharding::FsdpFull;
        const EstimateInput acc = withStack(plain, Stack::AccelerateFsdp);
        const MemoryEstimate a = estimateMemory(plain);
        const MemoryEstimate b = estimateMemory(acc);
        QCOMPARE(at(b, Phase::OptimizerStep, Component::OptimizerStates),
                 at(a, Phase::OptimizerStep, Component::OptimizerStates));
        QVERIFY(b.peak_allocated < a.peak_allocated);
        QVERIFY(at(b, Phase::Forward, Component::Activations)
                < at(a, Phase::Forward, Component::Activations));
        EstimateInput fp32 = acc;
        fp32.parallelism.fsdp_param_dtype = ParamDtype::Fp32;
        QCOMPARE(estimateMemory(fp32).peak_allocated, a.peak_allocated);
    }

    // FSDP casts a unit's fp32 shard to param_dtype before it gathers it: the gathered layer is
    // bf16, half the stored bytes (FSDP2 _fsdp_param.py all_gather_inputs).
    void fsdpGathersInParamDtype()
    {
        EstimateInput in = input(llama32_1b(), Method::Full, Precision::AmpBf16);
        in.parallelism.gpus = 8;
        in.parallelism.sharding = Sharding::FsdpFull;
        auto gathered = [](const EstimateInput &e) {
            const StepModel model(e);
            for (const TimelineTensor &t : model.timeline().tensors)
                if (std::string(t.name) == "gathered layer parameters")
                    return t.size.fixed * t.copies;
            return -1.0;
        };
        const double fp32 = gathered(in);
        const double layer = parameterLayout(in.arch).per_layer;
        QCOMPARE(fp32, 4 * layer);
        in.parallelism.fsdp_param_dtype = ParamDtype::Bf16;
        QCOMPARE(gathered(in), 2 * layer);
    }

    // Autograd's .grad of a gathered unit is in param_dtype; where reduce_dtype differs FSDP2
    // copies it into one flat reduce_dtype input before the reduce-scatter (foreach_reduce).
    void fsdpReducesFromParamDtypeGradients()
    {
        EstimateInput in = input(llama32_1b(), Method::Full, Precision::AmpBf16);
        in.parallelism.gpus = 8;
        in.parallelism.sharding = Sharding::FsdpFull;
        auto size = [](const EstimateInput &e, const char *name) {
            const StepModel model(e);
            for (const TimelineTensor &t : model.timeline().tensors)
                if (std::string(t.name) == name && t.per_layer)
                    return t.size.fixed * t.copies;
            return -1.0;
        };
        const double layer = parameterLayout(in.arch).per_layer;
        QCOMPARE(size(in, "unsharded layer gradients"), 4 * layer); // fp32 in flight
        QCOMPARE(size(in, "reduce-scatter input"), -1.0);
        in.parallelism.fsdp_param_dtype = ParamDtype::Bf16; // accelerate: reduce in bf16 too
        QCOMPARE(size(in, "unsharded layer gradients"), 2 * layer);
        QCOMPARE(size(in, "reduce-scatter input"), -1.0);
        in.parallelism.fsdp_reduce_dtype = ParamDtype::Fp32; // torchtitan
        QCOMPARE(size(in, "unsharded layer gradients"), 2 * layer);
        QCOMPARE(size(in, "reduce-scatter input"), 4 * layer);
        QCOMPARE(size(in, "gradient shard"), 4 * layer / 8);
    }

    // FSDP1 casts a unit's param_dtype .grad to reduce_dtype inside its post-backward stream's
    // context (_runtime_utils.py _post_backward_hook): the cast is that stream's block, which the
    // compute stream cannot reuse; the bytes allocated are the same as on the compute stream.
    void fsdp1CastsOnItsPostBackwardStream()
    {
        EstimateInput in = input(llama32_1b(), Method::Full, Precision::AmpBf16);
        in.parallelism.gpus = 8;
        in.parallelism.sharding = Sharding::FsdpFull;
        in.parallelism.fsdp_param_dtype = ParamDtype::Bf16;
        in.parallelism.fsdp_reduce_dtype = ParamDtype::Fp32;
        int found = 0;
        const StepModel model(in);
        for (const TimelineTensor &t : model.timeline().tensors)
            if (std::string(t.name) == "reduce-scatter input") {
                QCOMPARE(int(t.stream), 2);
                ++found;
            }
        QCOMPARE(found, 2); // a layer's and the root unit's
    }

    // FSDP2 copies every unit's .grad into a flat reduce-scatter input even where the dtypes
    // agree (torchtune's bf16 recipes), and before torch 2.5 made it on its reduce-scatter stream
    // (pytorch PR #129721): the same bytes allocated, more reserved, since the compute stream
    // cannot reuse that pool's cached blocks.
    void fsdp2ReduceScatterInputAndItsStream()
    {
        EstimateInput in = input(llama32_1b(), Method::Full, Precision::AmpBf16);
        in.training.sequence_length = 4096;
        in.parallelism.gpus = 8;
        const auto rsInput = [](const EstimateInput &e) -> std::optional<TimelineTensor> {
            const StepModel model(e);
            for (const TimelineTensor &t : model.timeline().tensors)
                if (std::string(t.name) == "reduce-scatter input" && t.per_layer)
                    return t;
            return std::nullopt;
        };
        const double layer = parameterLayout(in.arch).per_layer;
        EstimateInput titan = resolveStackChoices(withStack(in, Stack::Torchtitan));
        titan.training.stack.torch = "2.6";
        const auto newer = rsInput(titan);
        QVERIFY(newer);
        QCOMPARE(newer->size.fixed * newer->copies, 4 * layer);
        QCOMPARE(int(newer->stream), 0);
        const MemoryEstimate a = estimateMemory(titan);
        titan.training.stack.torch = "2.4";
        const auto older = rsInput(titan);
        QVERIFY(older);
        QCOMPARE(int(older->stream), 2);
        const MemoryEstimate b = estimateMemory(titan);
        QCOMPARE(b.peak_allocated, a.peak_allocated);
        QVERIFY(b.peak_reserved > a.peak_reserved);

        EstimateInput tune = resolveStackChoices(withStack(in, Stack::Torchtune));
        tune.training.loss = LossImplementation::Hf;
        QCOMPARE(tune.training.precision, Precision::Bf16);
        const auto bf16 = rsInput(tune);
        QVERIFY(bf16);
        QCOMPARE(bf16->size.fixed * bf16->copies, 2 * layer);
        tune.training.stack = {Stack::PlainTorch, "", ""}; // FSDP1-style: reduces the .grad itself
        QVERIFY(!rsInput(tune));
    }

    // torchtitan leaves the last transformer block gathered after its forward (apply_fsdp's
    // reshard_after_forward): at the loss, one layer's bf16 parameters more than the same settings
    // under plain torch; not with a pipeline, where no unit is resharded after forward.
    void torchtitanKeepsTheLastLayerGathered()
    {
        EstimateInput in = input(llama32_1b(), Method::Full, Precision::AmpBf16);
        in.training.sequence_length = 4096;
        in.parallelism.gpus = 8;
        const EstimateInput titan = resolveStackChoices(withStack(in, Stack::Torchtitan));
        QCOMPARE(titan.parallelism.sharding, Sharding::FsdpFull);
        EstimateInput plain = titan;
        plain.training.stack = {Stack::PlainTorch, "", ""};
        const MemoryEstimate a = StepModel(titan).allocatedEstimate();
        const MemoryEstimate b = StepModel(plain).allocatedEstimate();
        const double layer = parameterLayout(in.arch).per_layer * 2.0; // bf16, gathered
        QCOMPARE(a.peak_phase, Phase::Backward);
        QCOMPARE(static_cast<double>(a.peak_allocated - b.peak_allocated), layer);
        QCOMPARE(at(a, Phase::Backward, Component::Temporaries)
                     - at(b, Phase::Backward, Component::Temporaries),
                 static_cast<qint64>(layer));
    }

    // torchtitan's ActivationCheckpoint defaults (mode "selective", selective_ac_option "2"):
    // every second layer checkpointed whole, unless the scenario says; another stack resets it.
    void torchtitanCheckpointsEverySecondLayer()
    {
        const EstimateInput titan = withStack(input(llama32_1b(), Method::Full, Precision::AmpBf16),
                                              Stack::Torchtitan);
        QCOMPARE(titan.training.checkpointing, Checkpointing::Full);
        QCOMPARE(titan.training.checkpoint_every, std::int64_t(2));
        bool listed = false;
        for (const StackChoice &c : stackChoices(titan))
            if (c.key == "training.checkpoint_every")
                listed = c.value == "2" && c.from_stack;
        QVERIFY(listed);
        EstimateInput none = input(llama32_1b(), Method::Full, Precision::AmpBf16);
        none.training.stack = {Stack::Torchtitan, "", ""};
        ExplicitKeys given;
        given.checkpointing = true;
        applyStackDefaults(none.training, none.parallelism, given);
        QCOMPARE(none.training.checkpointing, Checkpointing::None);
        TrainingConfig t = titan.training;
        ParallelismConfig p = titan.parallelism;
        switchStack(t, p, Stack::HfTrainer);
        QCOMPARE(t.checkpoint_every, std::int64_t(1));
    }

    // torchtitan shards the sequence between its tensor-parallel blocks, Hugging Face's tp_plan
    // does not; a scenario's own sequence_parallel wins. The step's peak and its activations
    // follow the resolved choice.
    // torchtitan's run_train.sh launches with expandable segments; a scenario's own setting wins,
    // other stacks keep PyTorch's default. Fragmentation of the freed loss buffers goes.
    void torchtitanLaunchesWithExpandableSegments()
    {
        EstimateInput titan = withStack(input(llama3_8b(), Method::Full, Precision::Bf16),
                                        Stack::Torchtitan);
        titan.training.sequence_length = 8192;
        QCOMPARE(QString::fromStdString(resolveStackChoices(titan).overheads.allocator_conf),
                 QStringLiteral("expandable_segments:True"));
        bool listed = false;
        for (const StackChoice &c : stackChoices(titan))
            if (c.key == std::string("overheads.allocator_conf"))
                listed = c.from_stack && c.value == "expandable_segments:True";
        QVERIFY(listed);
        EstimateInput own = titan;
        own.overheads.allocator_conf = "expandable_segments:False";
        QCOMPARE(QString::fromStdString(resolveStackChoices(own).overheads.allocator_conf),
                 QStringLiteral("expandable_segments:False"));
        QVERIFY(estimateMemory(titan).peak_reserved < estimateMemory(own).peak_reserved);
        const EstimateInput trainer = withStack(input(llama3_8b(), Method::Full, Precision::Bf16),
                                                Stack::HfTrainer);
        QVERIFY(resolveStackChoices(trainer).overheads.allocator_conf.empty());
    }

    // transformers' tp_plan splits lm_head but not embed_tokens: an untied embedding is whole on
    // every rank (bf16 weights here, V x h x 2 bytes, where the Megatron layout holds 1/8 of it);
    // a tied one shares lm_head's split weight, and plain torch's Megatron layout splits it.
    void huggingFaceTensorParallelKeepsTheEmbeddingWhole()
    {
        EstimateInput untied = tensorParallel8(Precision::Bf16);
        untied.arch.tied_embeddings = false;
        const double embedding = 128256.0 * 2048 * 2;
        const auto weights = [](const EstimateInput &in) {
            return static_cast<double>(at(estimateMemory(in), Phase::Forward, Component::Weights));
        };
        const double split = weights(untied);
        for (Stack hf : {Stack::HfTrainer, Stack::TrlSft, Stack::AccelerateFsdp})
            QCOMPARE(weights(withStack(untied, hf)) - split, embedding * 7 / 8);
        const EstimateInput tied = tensorParallel8(Precision::Bf16);
        QCOMPARE(weights(withStack(tied, Stack::HfTrainer)), weights(tied));
    }

    void torchtitanShardsTheSequenceWithTensorParallel()
    {
        const EstimateInput plain = tensorParallel8(Precision::AmpBf16);
        const EstimateInput titan = withStack(plain, Stack::Torchtitan);
        QVERIFY(*resolveStackChoices(titan).parallelism.sequence_parallel);
        QVERIFY(
            !*resolveStackChoices(withStack(plain, Stack::HfTrainer)).parallelism.sequence_parallel);
        EstimateInput replicated = titan;
        replicated.parallelism.sequence_parallel = false;
        QVERIFY(!*resolveStackChoices(replicated).parallelism.sequence_parallel);
        const MemoryEstimate sp = estimateMemory(titan);
        const MemoryEstimate tp = estimateMemory(replicated);
        QVERIFY(static_cast<double>(at(sp, Phase::Forward, Component::Activations))
                < 0.75 * static_cast<double>(at(tp, Phase::Forward, Component::Activations)));
        QVERIFY(sp.peak_allocated < tp.peak_allocated);
        bool listed = false;
        for (const StackChoice &c : stackChoices(titan))
            if (c.key == "parallelism.sequence_parallel")
                listed = c.value == "true" && c.from_stack;
        QVERIFY(listed);
    }

    // transformers' tp_plan gathers lm_head's output ("colwise_rep"): every rank holds the whole
    // vocabulary's logits and fp32 loss chain; a vocab-parallel loss holds 1/t of each.
    void huggingFaceTensorParallelGathersTheLogits()
    {
        const EstimateInput plain = tensorParallel8(Precision::Bf16);
        const EstimateInput hf = withStack(plain, Stack::HfTrainer);
        QVERIFY(!*resolveStackChoices(hf).parallelism.loss_parallel);
        QVERIFY(*resolveStackChoices(withStack(plain, Stack::Torchtitan)).parallelism.loss_parallel);
        EstimateInput sharded = hf;
        sharded.parallelism.loss_parallel = true;
        const qint64 gathered = at(estimateMemory(hf), Phase::Backward, Component::Logits);
        const qint64 split = at(estimateMemory(sharded), Phase::Backward, Component::Logits);
        // At backward's start: three whole-vocabulary fp32 buffers gathered, four of 1/8 split
        // (loss parallel's fused backward holds one more): 8 * 3 / 4 = 6 times.
        QVERIFY2(2 * gathered > 11 * split && 2 * gathered < 13 * split,
                 qPrintable(QString("%1 gathered, %2 split").arg(gathered).arg(split)));
    }

    // DTensor's loss parallel (torch/distributed/tensor/parallel/loss.py): nll_loss's backward
    // does log_softmax's too, holding two more buffers of the log-probabilities' size beside them
    // and the gradient it returns, as two allocations; log_softmax's backward allocates nothing.
    void lossParallelBackwardFusesLogSoftmax()
    {
        EstimateInput in = resolveStackChoices(
            withStack(tensorParallel8(Precision::Bf16), Stack::Torchtitan));
        QVERIFY(*in.parallelism.loss_parallel);
        in.training.checkpointing = Checkpointing::None;
        const StepModel model(in);
        QVERIFY(model.valid());
        const StepTimeline &tl = model.timeline();
        double logProbs = 0, scratch = 0, scratchBuffers = 0;
        int upcastGrads = 0;
        for (const TimelineTensor &t : tl.tensors) {
            const std::string name = t.name;
            if (name == "log_softmax" && t.origin == TensorOrigin::Value)
                logProbs = t.size.per_token;
            if (name == "nll_loss" && t.origin == TensorOrigin::Workspace) {
                scratch = t.size.per_token * t.copies;
                scratchBuffers = t.copies;
            }
            upcastGrads += name == "logits fp32 upcast" && t.origin == TensorOrigin::Grad;
        }
        QVERIFY(logProbs > 0);
        QCOMPARE(scratch, 2 * logProbs);
        QCOMPARE(scratchBuffers, 2.0);
        QCOMPARE(upcastGrads, 0);
    }

    // bitsandbytes MatMul8bitLt keeps its input A when the input needs a gradient (LoRA over an
    // int8 base); a 4-bit base keeps nothing.
    void int8BaseKeepsItsInputsUnderLora()
    {
        EstimateInput nf4 = input(tinyLlama(), Method::Qlora, Precision::Bf16);
        EstimateInput int8 = nf4;
        int8.training.quantization = Quantization::Int8;
        QVERIFY(at(estimateMemory(int8), Phase::Forward, Component::Activations)
                > at(estimateMemory(nf4), Phase::Forward, Component::Activations));
    }

    // bitsandbytes paged optimizers: the states of tensors of 1e5 elements or more live in CUDA
    // managed memory, reported apart and kept out of the allocator's replay (so out of the fits
    // test); smaller tensors' states stay ordinary torch tensors.
    void pagedStatesLiveOutsideTheAllocator()
    {
        const ModelArchitecture arch = tinyLlama();
        EstimateInput in = input(arch, Method::Full, Precision::Bf16);
        in.training.optimizer = Optimizer::AdamWFused;
        const MemoryEstimate plain = estimateMemory(in);
        in.training.optimizer = Optimizer::PagedAdamW;
        const MemoryEstimate paged = estimateMemory(in);
        double large = 0;
        for (const TensorGroup &g : parameterLayout(arch))
            if (g.elements() >= 1e5)
                large += g.totalElements();
        QVERIFY(large > 0);
        const qint64 pagedBytes = static_cast<qint64>(2 * 2 * large); // two bf16 states
        QCOMPARE(paged.paged_optimizer_bytes, pagedBytes);
        QCOMPARE(at(paged, Phase::OptimizerStep, Component::OptimizerStates),
                 at(plain, Phase::OptimizerStep, Component::OptimizerStates) - pagedBytes);
        QVERIFY(paged.peak_allocated < plain.peak_allocated);
        // LoRA adapters of a small model stay under the threshold: nothing is paged.
        EstimateInput lora = input(arch, Method::Lora, Precision::Bf16);
        lora.training.optimizer = Optimizer::PagedAdamW;
        QCOMPARE(estimateMemory(lora).paged_optimizer_bytes, qint64(0));
    }

    void choicesSayWhereTheyCameFrom()
    {
        EstimateInput in = withStack(input(tinyLlama(), Method::Full, Precision::Bf16),
                                     Stack::HfTrainer,
                                     "4.46");
        in.training.checkpointing = Checkpointing::Full;
        bool sawOptimizer = false, sawLoss = false;
        for (const StackChoice &c : stackChoices(in)) {
            if (c.key == "training.optimizer") {
                sawOptimizer = true;
                QCOMPARE(c.value, std::string("adamw"));
                QVERIFY(c.from_stack);
            }
            if (c.key == "training.loss") {
                sawLoss = true;
                QCOMPARE(c.value, std::string("hf-4.46"));
            }
            if (c.key == "training.gradient_checkpointing")
                QVERIFY(!c.from_stack);
        }
        QVERIFY(sawOptimizer && sawLoss);
        QCOMPARE(describeStack(in.training.stack), std::string("hf-trainer (transformers 4.46)"));
    }
};

QTEST_APPLESS_MAIN(TestStackProfile)
#include "tst_stack_profile.moc"
