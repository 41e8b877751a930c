// SPDX-License-Identifier: GPL-3.0-or-later
#include "advice/explanation.h"
#include "model/decoder_layer_graph.h"
#include "model/memory_estimator.h"
#include "model/parameter_layout.h"
#include "model/step_model.h"
#include "model/weight_format.h"
#include "test_architectures.h"

#include <QtTest>

using namespace membudget;
using namespace membudget::testing;

class TestMemoryEstimator : public QObject
{
    Q_OBJECT
private:
    static EstimateInput input(const ModelArchitecture &arch,
                               Precision p,
                               Optimizer opt = Optimizer::AdamW)
    {
        EstimateInput in;
        in.arch = arch;
        in.training.precision = p;
        in.training.optimizer = opt;
        in.training.method = Method::Full;
        in.training.micro_batch_size = 1;
        in.training.sequence_length = 512;
        in.training.attention = Attention::Flash;
        return in;
    }
    static qint64 at(const MemoryEstimate &e, Phase p, Component c) { return e.phase(p)[c]; }

private slots:
    // torchtitan's layer-selective checkpointing: with checkpoint_every N, layers N-1, 2N-1, ...
    // keep only their input and the rest keep everything, so at the forward's end half of a
    // 32-layer model's layers (N = 2) hold what `none` holds and half what `full` holds; N = 3
    // wraps 10 layers; N beyond the depth wraps none. Recomputation time follows the wrapped share.
    void checkpointingEveryNthLayer()
    {
        EstimateInput in = input(llama2_7b(), Precision::Bf16);
        in.training.sequence_length = 2048;
        auto forwardActivations = [&](Checkpointing c, std::int64_t every) {
            EstimateInput e = in;
            e.training.checkpointing = c;
            e.training.checkpoint_every = every;
            return at(estimateMemory(e), Phase::Forward, Component::Activations);
        };
        const qint64 none = forwardActivations(Checkpointing::None, 1);
        const qint64 full = forwardActivations(Checkpointing::Full, 1);
        QVERIFY(full < none / 10);
        QCOMPARE(forwardActivations(Checkpointing::None, 2), none); // ignored without full
        QCOMPARE(forwardActivations(Checkpointing::Full, 2), (none + full) / 2);
        const qint64 perLayerSaved = (none - full) / 32;
        QCOMPARE(forwardActivations(Checkpointing::Full, 3), full + 22 * perLayerSaved);
        QCOMPARE(forwardActivations(Checkpointing::Full, 33), none);
        QCOMPARE(checkpointedLayers(in.training, 32), std::int64_t(0));
        in.training.checkpointing = Checkpointing::Full;
        in.training.checkpoint_every = 3;
        QCOMPARE(checkpointedLayers(in.training, 32), std::int64_t(10));
    }

    // Op-level selective checkpointing keeps, per layer, the input plus q, v, gate and down (mm
    // 1, 3, 5, 7) and SDPA's output and logsumexp: between full and none, and the explanation
    // says so with the per-layer bytes.
    void opSelectiveKeepsMatmulOutputs()
    {
        EstimateInput in = input(llama2_7b(), Precision::Bf16);
        in.training.sequence_length = 2048;
        in.training.attention = Attention::Sdpa;
        auto forwardActivations = [&](Checkpointing c) {
            EstimateInput e = in;
            e.training.checkpointing = c;
            return at(estimateMemory(e), Phase::Forward, Component::Activations);
        };
        const qint64 full = forwardActivations(Checkpointing::Full);
        const qint64 op = forwardActivations(Checkpointing::OpSelective);
        QVERIFY(op > full && op < forwardActivations(Checkpointing::None));
        const double h = 4096, I = 11008, T = 2048;
        const double perLayer = T * (2 * (h + h + I + h) + 2 * h + 4 * 32);
        QCOMPARE(static_cast<double>(op - full), 32 * perLayer);
        in.training.checkpointing = Checkpointing::OpSelective;
        const MemoryEstimate e = estimateMemory(in);
        const std::string text = explainComponent(in, e, Phase::Forward, Component::Activations);
        QVERIFY2(text.find("every second matmul") != std::string::npos, text.c_str());
    }

    // torchtune's optimizer_in_bwd: each parameter is stepped as soon as its gradient exists and
    // that gradient is freed, so no phase holds all the gradients; the optimizer-step phase has
    // nothing left to do. torchtune refuses gradient accumulation with it; MemBudget models one GPU.
    void optimizerInBackwardFreesEachGradient()
    {
        EstimateInput in = input(llama2_7b(), Precision::Bf16);
        const MemoryEstimate after = estimateMemory(in);
        in.training.optimizer_in_backward = true;
        QCOMPARE(validateInput(in), std::string());
        const MemoryEstimate inBackward = estimateMemory(in);
        const qint64 allGrads = at(after, Phase::OptimizerStep, Component::Gradients);
        QCOMPARE(allGrads, qint64(6'738'415'616LL * 2));
        QCOMPARE(at(inBackward, Phase::OptimizerStep, Component::Gradients), qint64(0));
        QCOMPARE(at(inBackward, Phase::OptimizerStep, Component::Temporaries), qint64(0));
        const qint64 embedding = 32000LL * 4096 * 2;
        QVERIFY(at(inBackward, Phase::Backward, Component::Gradients) <= embedding);
        QVERIFY(inBackward.peak_allocated < after.peak_allocated - allGrads / 2);
        for (auto [change, key] :
             std::initializer_list<std::pair<void (*)(EstimateInput &), const char *>>{
                 {[](EstimateInput &e) { e.training.gradient_accumulation_steps = 2; }, "GA"},
                 {[](EstimateInput &e) { e.training.precision = Precision::AmpFp16; }, "fp16"},
                 {[](EstimateInput &e) { e.training.precision = Precision::MixedBf16; }, "mixed"},
                 {[](EstimateInput &e) { e.parallelism.gpus = 2; }, "gpus"}}) {
            EstimateInput bad = in;
            change(bad);
            std::string where;
            QVERIFY2(!validateInput(bad, &where).empty(), key);
            QCOMPARE(where, std::string("training.optimizer_in_backward"));
        }
    }

    // A tied lm_head / embedding weight gets its .grad from the head and the embedding; autograd
    // steps it once both are in, so its gradient lives from the head's backward to the end.
    void optimizerInBackwardStepsATiedWeightLast()
    {
        EstimateInput in = input(llama2_7b(), Precision::Bf16);
        in.training.optimizer_in_backward = true;
        const qint64 untied = at(estimateMemory(in), Phase::Backward, Component::Gradients);
        in.arch.tied_embeddings = true;
        const qint64 tied = at(estimateMemory(in), Phase::Backward, Component::Gradients);
        // Untied, backward peaks while lm_head's gradient is made; tied, in a layer, while an MLP
        // weight's gradient (4096 x 11008) is made and the tied one waits.
        QCOMPARE(untied, qint64(32000LL * 4096 * 2));
        QCOMPARE(tied, qint64(32000LL * 4096 * 2 + 4096LL * 11008 * 2));
        const std::string text
            = explainComponent(in, estimateMemory(in), Phase::Backward, Component::Gradients);
        QVERIFY2(text.find("lm_head") != std::string::npos
                     && text.find("step in backward") != std::string::npos,
                 text.c_str());
    }

    // torchtune's activation offloading: every layer's input leaves the GPU during forward (the
    // final norm's packs push the last ones out of the stash), so at the loss the activations are
    // those of full checkpointing less the 32 layer inputs; CPU RAM holds them. It needs full
    // checkpointing on every layer.
    void activationOffloadingMovesTheLayerInputs()
    {
        EstimateInput in = input(llama2_7b(), Precision::Bf16);
        in.training.sequence_length = 2048;
        in.training.checkpointing = Checkpointing::Full;
        const MemoryEstimate kept = estimateMemory(in);
        in.training.activation_offloading = true;
        QCOMPARE(validateInput(in), std::string());
        const MemoryEstimate offloaded = estimateMemory(in);
        const qint64 inputs = 32LL * 2048 * 4096 * 2;
        QCOMPARE(at(kept, Phase::Forward, Component::Activations)
                     - at(offloaded, Phase::Forward, Component::Activations),
                 inputs);
        QCOMPARE(offloaded.cpu_offload_bytes, Bytes(inputs));
        QCOMPARE(kept.cpu_offload_bytes, Bytes(0));
        const std::string text
            = explainComponent(in, offloaded, Phase::Forward, Component::Activations);
        QVERIFY2(text.find("offloaded to CPU RAM") != std::string::npos, text.c_str());
        for (auto [c, every] : {std::pair{Checkpointing::None, 1},
                                {Checkpointing::Full, 2},
                                {Checkpointing::OpSelective, 1}}) {
            EstimateInput bad = in;
            bad.training.checkpointing = c;
            bad.training.checkpoint_every = every;
            std::string where;
            QVERIFY(!validateInput(bad, &where).empty());
            QCOMPARE(where, std::string("training.activation_offloading"));
        }
    }

    // Hybrid sharding: FSDP on 32 GPUs sharded in groups of 8 holds 1/8 of the weights, gradients
    // and states per GPU, as FSDP on 8 GPUs does; activations do not change.
    void hybridShardingDividesOverTheGroup()
    {
        EstimateInput in = input(llama2_7b(), Precision::AmpBf16);
        in.parallelism.sharding = Sharding::FsdpFull;
        in.parallelism.gpus = 8;
        const MemoryEstimate eight = estimateMemory(in);
        in.parallelism.gpus = 32;
        const MemoryEstimate all = estimateMemory(in);
        in.parallelism.shard_group = 8;
        const MemoryEstimate hybrid = estimateMemory(in);
        for (Component c : {Component::Weights, Component::Gradients, Component::OptimizerStates})
            QCOMPARE(at(hybrid, Phase::OptimizerStep, c), at(eight, Phase::OptimizerStep, c));
        QVERIFY(at(hybrid, Phase::OptimizerStep, Component::OptimizerStates)
                > 3 * at(all, Phase::OptimizerStep, Component::OptimizerStates));
        QCOMPARE(at(hybrid, Phase::Forward, Component::Activations),
                 at(all, Phase::Forward, Component::Activations));
        in.parallelism.shard_group = 5;
        QVERIFY(validateInput(in).find("shard_group") != std::string::npos);
    }

    void bytesPerParameter_data()
    {
        QTest::addColumn<int>("precision");
        QTest::addColumn<int>("weights");
        QTest::addColumn<int>("grads");
        QTest::addColumn<int>("master");
        QTest::addColumn<int>("states");
        QTest::newRow("fp32") << int(Precision::Fp32) << 4 << 4 << 0 << 8;
        QTest::newRow("amp-bf16") << int(Precision::AmpBf16) << 4 << 4 << 0 << 8;
        QTest::newRow("bf16 (pure)") << int(Precision::Bf16) << 2 << 2 << 0 << 4;
        QTest::newRow("mixed-bf16 (ZeRO paper: 2+2+12)")
            << int(Precision::MixedBf16) << 2 << 2 << 4 << 8;
    }
    void bytesPerParameter()
    {
        QFETCH(int, precision);
        QFETCH(int, weights);
        QFETCH(int, grads);
        QFETCH(int, master);
        QFETCH(int, states);
        const EstimateInput in = input(llama2_7b(), static_cast<Precision>(precision));
        const MemoryEstimate e = estimateMemory(in);
        const qint64 psi = 6738415616;
        QCOMPARE(e.parameters, psi);
        QCOMPARE(e.trainable_parameters, psi);
        QCOMPARE(at(e, Phase::OptimizerStep, Component::Weights), weights * psi);
        QCOMPARE(at(e, Phase::OptimizerStep, Component::Gradients), grads * psi);
        QCOMPARE(at(e, Phase::OptimizerStep, Component::MasterWeights), master * psi);
        QCOMPARE(at(e, Phase::OptimizerStep, Component::OptimizerStates), states * psi);
    }

    void eightBitAdamIsBlockwise()
    {
        // bitsandbytes: uint8 states + fp32 absmax per 256 values; tensors under 4096 values stay fp32.
        const ModelArchitecture arch = tinyLlama();
        const MemoryEstimate e = estimateMemory(input(arch, Precision::Bf16, Optimizer::AdamW8bit));
        double expected = 0;
        for (const TensorGroup &g : parameterLayout(arch)) {
            const double n = g.elements();
            expected += static_cast<double>(g.count)
                        * (n < 4096 ? 8 * n : 2 * (n + 4 * std::ceil(n / 256)));
        }
        QCOMPARE(at(e, Phase::OptimizerStep, Component::OptimizerStates),
                 static_cast<qint64>(expected));
    }

    void zeroStagesShard()
    {
        EstimateInput in = input(llama2_7b(), Precision::MixedBf16);
        in.parallelism.gpus = 8;
        const qint64 psi = 6738415616;
        in.parallelism.sharding = Sharding::Zero1;
        MemoryEstimate e = estimateMemory(in);
        QCOMPARE(at(e, Phase::OptimizerStep, Component::Weights), 2 * psi);
        QCOMPARE(at(e, Phase::OptimizerStep, Component::Gradients), 2 * psi);
        QCOMPARE(at(e, Phase::OptimizerStep, Component::OptimizerStates), 8 * psi / 8);
        QCOMPARE(at(e, Phase::OptimizerStep, Component::MasterWeights), 4 * psi / 8);
        in.parallelism.sharding = Sharding::Zero2;
        e = estimateMemory(in);
        QCOMPARE(at(e, Phase::OptimizerStep, Component::Gradients), 2 * psi / 8);
        in.parallelism.sharding = Sharding::Zero3;
        e = estimateMemory(in);
        QCOMPARE(at(e, Phase::OptimizerStep, Component::Weights), 2 * psi / 8);
    }

    void qloraWeights()
    {
        EstimateInput in = input(llama2_7b(), Precision::Bf16);
        in.training.method = Method::Qlora;
        in.training.quantization = Quantization::Nf4;
        in.training.lora.targets = TargetAllLinear;
        in.training.lora.rank = 16;
        in.training.lora.adapter_precision = AdapterPrecision::Base;
        const MemoryEstimate e = estimateMemory(in);
        const ParameterLayout layout = parameterLayout(llama2_7b());
        // Linear weights at 4.5 bits, embeddings, lm_head and norms in bf16, adapters in bf16.
        double linear = 0, other = 0;
        for (const TensorGroup &g : layout)
            (g.linear && g.role != TensorRole::LmHead ? linear : other) += g.totalElements();
        const double adapters = loraParameters(layout, TargetAllLinear, 16);
        const double expected = linear * 4.5 / 8 + other * 2 + adapters * 2;
        QVERIFY(std::abs(static_cast<double>(at(e, Phase::OptimizerStep, Component::Weights))
                         - expected)
                < 1e-9 * expected + 64);
        QCOMPARE(e.trainable_parameters, static_cast<qint64>(adapters));
        QCOMPARE(at(e, Phase::OptimizerStep, Component::Gradients),
                 static_cast<qint64>(adapters * 2));
        // QLoRA is smaller than LoRA, which is smaller than full fine-tuning.
        EstimateInput lora = in;
        lora.training.method = Method::Lora;
        lora.training.quantization = Quantization::None;
        EstimateInput full = in;
        full.training.method = Method::Full;
        full.training.quantization = Quantization::None;
        QVERIFY(e.peak_allocated < estimateMemory(lora).peak_allocated);
        QVERIFY(estimateMemory(lora).peak_allocated < estimateMemory(full).peak_allocated);
    }

    void kvCache()
    {
        EstimateInput in = input(llama2_7b(), Precision::Fp16);
        in.training.mode = Mode::Inference;
        in.training.sequence_length = 1;
        QCOMPARE(at(estimateMemory(in), Phase::Forward, Component::KvCache), Q_INT64_C(512) * 1024);
        in.arch = llama3_8b();
        QCOMPARE(at(estimateMemory(in), Phase::Forward, Component::KvCache), Q_INT64_C(128) * 1024);
    }

    static EstimateInput generation(KvCacheKind kind, std::int64_t generated)
    {
        EstimateInput in = input(llama3_8b(), Precision::Bf16);
        in.training.mode = Mode::Inference;
        in.training.attention = Attention::Sdpa;
        in.training.micro_batch_size = 4;
        in.training.sequence_length = 1024;
        in.training.inference.generated_tokens = generated;
        in.training.inference.kv_cache = kind;
        return in;
    }

    void generationGrowsTheCache()
    {
        // Llama-3-8B: 8 KV heads x 128 = 1024 values per position; 4 sequences in bf16: 8192 B per
        // position of one layer's keys (or values).
        const double u = 4 * 1024 * 2;
        const MemoryEstimate prefill = estimateMemory(generation(KvCacheKind::Dynamic, 0));
        QCOMPARE(at(prefill, Phase::Forward, Component::KvCache),
                 static_cast<qint64>(2 * 32 * 1024 * u));
        // At the last of 3072 tokens, in the last layer: 31 layers grown to 4096 positions, the
        // last layer's keys re-made by torch.cat (4096), its old keys freed, its values re-made
        // (4096) while the old values (4095) still live.
        const MemoryEstimate e = estimateMemory(generation(KvCacheKind::Dynamic, 3072));
        QCOMPARE(e.moments[0].stage, Stage::Decode);
        QCOMPARE(e.moments[0].layer, 31);
        QCOMPARE(at(e, Phase::Forward, Component::KvCache),
                 static_cast<qint64>(u * (31 * 2 * 4096 + 2 * 4096 + 4095)));
    }

    // The prefill without autograd keeps what Python names hold (modeling_llama.py, measured on CPU
    // by tools/measure/compare_generation.py): at the last layer's MLP product, inputs_embeds, the
    // layer's input, the attention residual and the MLP's input are alive beside the three MLP
    // intermediates, the rotary tables and every layer's cache.
    void prefillKeepsWhatNamesHold()
    {
        EstimateInput in = generation(KvCacheKind::Dynamic, 0);
        in.training.micro_batch_size = 1;
        in.training.sequence_length = 4096;
        const MemoryEstimate e = estimateMemory(in);
        QCOMPARE(e.moments[0].stage, Stage::Prefill);
        QCOMPARE(e.moments[0].layer, 31);
        const double s = 4096, h = 4096, i = 14336, d = 128;
        const double cache = 2 * 32 * s * 1024 * 2;
        const Breakdown &at = e.phase(Phase::Forward);
        QCOMPARE(double(at[Component::KvCache]), cache);
        const double rest = double(e.peak_allocated) - double(at[Component::Weights]) - cache;
        QCOMPARE(rest, 4 * s * h * 2 + 3 * s * i * 2 + 2 * s * d * 2);
    }

    // A checkpointed layer's forward keeps nothing for backward, so Python names decide what lives
    // (seen in an H200 trace of Llama-3.1-8B, h200-8b-fused-b21-oom.pickle): LlamaRMSNorm's
    // normalized fp32 `hidden_states` until it returns, after its weight product is made; the
    // attention's key_states and value_states until it returns, after o_proj.
    void checkpointedForwardKeepsWhatNamesHold()
    {
        EstimateInput in = input(llama3_8b(), Precision::Bf16);
        in.training.checkpointing = Checkpointing::Full;
        in.training.attention = Attention::Sdpa;
        const StepModel model(in);
        const StepTimeline &tl = model.timeline();
        const auto layer = std::find_if(tl.blocks.begin(), tl.blocks.end(), [](const auto &b) {
            return b.stage == Stage::Forward && b.decoder_layer;
        });
        QVERIFY(layer != tl.blocks.end());
        const auto position = [&](const char *name, bool alloc) { // in the first layer's forward
            for (std::size_t i = 0; i < layer->events.size(); ++i) {
                const TimelineEvent &e = layer->events[i];
                if (e.alloc == alloc && std::string(tl.tensors[e.tensor].name) == name)
                    return static_cast<int>(i);
            }
            return -1;
        };
        QVERIFY(position("norm weight *", true) >= 0);
        QVERIFY(position("norm x * rsqrt", false) > position("norm weight *", true));
        QVERIFY(position("norm mean", false) > position("norm weight *", true));
        QVERIFY(position("o_proj", true) >= 0);
        QVERIFY(position("v_proj", false) > position("o_proj", true));
    }

    // GPT-2's block keeps eager attention's weights to its end from transformers 4.52
    // (`attn_output, self_attn_weights = self.attn(...)`); before, GPT2Attention.forward's name
    // kept them until the attention returned.
    void gpt2BlockKeepsEagerWeightsFrom452()
    {
        const auto freedAfterMlp = [](const char *version) {
            EstimateInput in = input(gpt2_small(), Precision::Fp32);
            in.training.mode = Mode::Inference;
            in.training.attention = Attention::Eager;
            in.training.stack = {Stack::HfTrainer, version, ""};
            const StepModel model(in);
            const StepTimeline &tl = model.timeline();
            int mlp = -1, probs = -1, i = 0;
            for (const TimelineBlock &b : tl.blocks) {
                if (!b.decoder_layer)
                    continue;
                for (const TimelineEvent &e : b.events) {
                    const std::string name = tl.tensors[e.tensor].name;
                    if (e.alloc && name == "mlp fc_in" && mlp < 0)
                        mlp = i;
                    if (!e.alloc && name == "softmax" && probs < 0)
                        probs = i;
                    ++i;
                }
                break; // the first layer
            }
            return mlp >= 0 && probs > mlp;
        };
        QVERIFY(!freedAfterMlp("4.51"));
        QVERIFY(freedAfterMlp("4.52"));
    }

    // Inference runs in eval mode: GPT-2's dropouts (0.1 on attention, residual branches and
    // embeddings) copy nothing and keep no mask; in a training step they do.
    void evalModeDropsNoDropout()
    {
        const auto masks = [](Mode mode) {
            EstimateInput in = input(gpt2_small(), Precision::Fp32);
            in.training.mode = mode;
            in.training.attention = Attention::Eager;
            in.training.micro_batch_size = 2;
            in.training.sequence_length = 256;
            const StepModel model(in);
            int n = 0;
            for (const TimelineTensor &t : model.timeline().tensors)
                n += std::string(t.name).find("dropout") != std::string::npos;
            return n;
        };
        QVERIFY(masks(Mode::Train) > 0);
        QCOMPARE(masks(Mode::Inference), 0);
    }

    // transformers 4.56 made DynamicCache copy the prompt's keys and values (PR #39797): attention
    // reads the copy and the layer's own go at once. Before, the cache kept them.
    void dynamicCacheCopiesFromTransformers456()
    {
        for (const char *version : {"4.55", "4.56"}) {
            EstimateInput in = generation(KvCacheKind::Dynamic, 0);
            in.training.stack.name = Stack::HfTrainer;
            in.training.stack.version = version;
            const StepModel model(in);
            bool copy = false;
            for (const TimelineTensor &t : model.timeline().tensors)
                copy = copy || std::string(t.name) == "key cache";
            QCOMPARE(copy, std::string(version) == "4.56");
        }
    }

    // Padded or packed batches under SDPA (transformers masking_utils): a bool (b, 1, s, s) mask,
    // which SDPA turns into an additive one in the query dtype in every layer, and the
    // memory-efficient kernel keeps that for the backward. With a mask (or torch before 2.5)
    // transformers also repeats the grouped K/V to every query head for SDPA, which keeps the
    // copies. Flash attention gets neither.
    void paddedBatchesGiveSdpaAMask()
    {
        EstimateInput in = input(llama3_8b(), Precision::Bf16);
        in.training.micro_batch_size = 2;
        in.training.sequence_length = 1024;
        in.training.attention = Attention::Sdpa;
        const double none = estimateMemory(in).derivation.saved_activation_bytes;
        const double mask = 2.0 * 1024 * 1024 * 2;                 // b x s x s x 2 bytes (bf16)
        const double repeat = 2 * 2.0 * 1024 * (32 - 8) * 128 * 2; // K and V for 24 more heads
        for (BatchPadding padding : {BatchPadding::Padded, BatchPadding::Packed}) {
            in.training.batch_padding = padding;
            QCOMPARE(estimateMemory(in).derivation.saved_activation_bytes,
                     none + 32 * (mask + repeat));
        }
        in.training.attention = Attention::Flash;
        const double flash = estimateMemory(in).derivation.saved_activation_bytes;
        in.training.batch_padding = BatchPadding::None;
        QCOMPARE(flash, estimateMemory(in).derivation.saved_activation_bytes);

        // torch 2.4: no enable_gqa, so repeat_kv without a mask as well.
        in.training.attention = Attention::Sdpa;
        in.training.stack = {Stack::PlainTorch, "2.4", ""};
        QCOMPARE(estimateMemory(in).derivation.saved_activation_bytes, none + 32 * repeat);

        // transformers before 4.54 repeats them whatever the mask (use_gqa_in_sdpa is 4.54's).
        in.training.stack = {Stack::HfTrainer, "4.54", "2.6"};
        const double gqa = estimateMemory(in).derivation.saved_activation_bytes;
        in.training.stack = {Stack::HfTrainer, "4.53", "2.6"};
        QCOMPARE(estimateMemory(in).derivation.saved_activation_bytes, gqa + 32 * repeat);

        // transformers before 4.53: one additive bf16 mask, shared by every layer's SDPA and kept
        // until the backward ends.
        in.training.batch_padding = BatchPadding::Padded;
        in.training.stack = {Stack::HfTrainer, "4.50", ""};
        const MemoryEstimate legacy = estimateMemory(in);
        QCOMPARE(legacy.derivation.saved_activation_bytes, none + mask + 32 * repeat);
        in.training.batch_padding = BatchPadding::None; // repeated K/V either way before 4.54
        QCOMPARE(at(legacy, Phase::Forward, Component::Activations)
                     - at(estimateMemory(in), Phase::Forward, Component::Activations),
                 static_cast<qint64>(mask));
    }

    // FlashAttention-2's backward with grouped K/V writes dK and dV for every query head (2 bytes
    // x 32 heads x 128 per token each, bf16) besides its fp32 dq accumulator (4 x 32 x 128).
    void flashBackwardExpandsGroupedKv()
    {
        EstimateInput in = input(llama3_8b(), Precision::Bf16);
        const auto workspace = [&](const ModelArchitecture &arch) {
            const OpGraph g = decoderLayerGraph(arch, in.training, parameterLayout(arch), 1, true);
            for (const GraphOp &op : g.ops)
                if (std::string(op.name) == "flash attention")
                    return op.backward_workspace.per_token;
            return -1.0;
        };
        QCOMPARE(workspace(llama3_8b()), 4.0 * 32 * 128 + 2 * 2.0 * 32 * 128);
        ModelArchitecture mha = llama3_8b();
        mha.kv_heads = mha.attention_heads;
        QCOMPARE(workspace(mha), 4.0 * 32 * 128);
    }

    void legacyTupleCacheHoldsTheOldOneUntilTheStepEnds()
    {
        // Tuple past_key_values (Qwen v1's code, transformers before 4.36): every layer's keys and
        // values are re-made by torch.cat while the step's input tuple keeps the old ones, so the
        // step ends with the cache twice over: 32 layers x 2 x (4096 new + 4095 old positions).
        const double u = 4 * 1024 * 2;
        const MemoryEstimate e = estimateMemory(generation(KvCacheKind::Legacy, 3072));
        QCOMPARE(e.moments[0].stage, Stage::Decode);
        QCOMPARE(at(e, Phase::Forward, Component::KvCache),
                 static_cast<qint64>(u * 32 * 2 * (4096 + 4095)));
        // The prefill is the same as a DynamicCache's.
        QCOMPARE(at(estimateMemory(generation(KvCacheKind::Legacy, 0)),
                    Phase::Forward,
                    Component::KvCache),
                 static_cast<qint64>(2 * 32 * 1024 * u));
    }

    void staticCacheIsSizedApart()
    {
        // StaticCache allocates max_cache_len positions at the prefill and writes in place after.
        EstimateInput in = generation(KvCacheKind::Static, 3072);
        in.training.inference.max_cache_len = 8192;
        const MemoryEstimate e = estimateMemory(in);
        QCOMPARE(at(e, Phase::Forward, Component::KvCache), Q_INT64_C(2) * 32 * 4 * 8192 * 2048);
        // Without max_cache_len: prompt + generated tokens.
        in.training.inference.max_cache_len = 0;
        QCOMPARE(at(estimateMemory(in), Phase::Forward, Component::KvCache),
                 Q_INT64_C(2) * 32 * 4 * 4096 * 2048);
        // Longer than that is refused.
        in.training.inference.max_cache_len = 4000;
        QVERIFY(!validateInput(in).empty());
    }

    void kvCacheQuantization()
    {
        const qint64 model = at(estimateMemory(generation(KvCacheKind::Dynamic, 0)),
                                Phase::Forward,
                                Component::KvCache);
        EstimateInput fp8 = generation(KvCacheKind::Dynamic, 0);
        fp8.training.inference.kv_cache_dtype = KvCacheDtype::Fp8;
        QCOMPARE(at(estimateMemory(fp8), Phase::Forward, Component::KvCache), model / 2);
        // quanto 4-bit, groups of 64 with a bf16 scale and zero: 0.5 + 4/64 B per value.
        EstimateInput q = generation(KvCacheKind::Quantized, 0);
        QCOMPARE(at(estimateMemory(q), Phase::Forward, Component::KvCache),
                 static_cast<qint64>(static_cast<double>(model) * (0.5 + 4.0 / 64) / 2));
        // Decoding dequantizes the layer's cache and cats it: temporaries during the decode.
        q.training.inference.generated_tokens = 4096;
        const MemoryEstimate d = estimateMemory(q);
        QCOMPARE(d.moments[0].stage, Stage::Decode);
        QVERIFY(at(d, Phase::Forward, Component::Temporaries) >= 4 * 4 * 5120 * 1024 * 2);
        fp8.training.inference.kv_cache = KvCacheKind::Quantized;
        QVERIFY(!validateInput(fp8).empty()); // a quantized cache has its own bits
    }

    void weightFormatBytes_data()
    {
        QTest::addColumn<int>("format");
        QTest::addColumn<double>("bytes");
        const double n = 4096.0 * 4096;
        // GPTQ 4-bit g128: qweight n/2, qzeros and fp16 scales per group and column, int32 g_idx.
        QTest::newRow("gptq") << int(Quantization::Gptq) << n / 2 + 32 * 4096 * 2.5 + 4 * 4096;
        QTest::newRow("awq") << int(Quantization::Awq) << n / 2 + 32 * 4096 * 2.5;
        QTest::newRow("nf4") << int(Quantization::Nf4) << n / 2 + 4 * n / 64;
        QTest::newRow("fp4 = nf4") << int(Quantization::Fp4) << n / 2 + 4 * n / 64;
        QTest::newRow("hqq 4-bit g64") << int(Quantization::Hqq) << n / 2 + 4 * n / 64;
        QTest::newRow("torchao int4 g128") << int(Quantization::TorchaoInt4) << n / 2 + 4 * n / 128;
        QTest::newRow("torchao int8") << int(Quantization::TorchaoInt8) << n + 10 * 4096;
        QTest::newRow("fp8 per channel") << int(Quantization::Fp8) << n + 4 * 4096;
        QTest::newRow("q4_k 144 B per 256") << int(Quantization::Q4K) << n / 256 * 144;
        QTest::newRow("q6_k 210 B per 256") << int(Quantization::Q6K) << n / 256 * 210;
        QTest::newRow("q8_0 34 B per 32") << int(Quantization::Q8_0) << n / 32 * 34;
    }
    void weightFormatBytes()
    {
        QFETCH(int, format);
        QFETCH(double, bytes);
        const QuantizationOptions o;
        QCOMPARE(quantizedMatrixBytes(static_cast<Quantization>(format), o, 4096, 4096, 1), bytes);
    }

    void weightFormatOptions()
    {
        QuantizationOptions o;
        o.fp8_scales = Fp8Scales::Block; // one fp32 scale per 128 x 128 block
        QCOMPARE(quantizedMatrixBytes(Quantization::Fp8, o, 4096, 4096, 1),
                 4096.0 * 4096 + 4 * 32 * 32);
        o = {};
        o.bits = 3; // HQQ packs 3-bit codes ten to an int32
        QCOMPARE(quantizedMatrixBytes(Quantization::Hqq, o, 4096, 4096, 1),
                 4 * std::ceil(4096.0 * 4096 / 10) + 4 * 4096.0 * 4096 / 64);
        o = {};
        o.group_size = -1; // GPTQ per column: one group
        QCOMPARE(quantizedMatrixBytes(Quantization::Gptq, o, 4096, 4096, 1),
                 4096.0 * 4096 / 2 + 4096 * 2.5 + 4 * 4096);
        // A quantized lm_head: Llama-3-8B's 128256 x 4096 head drops from bf16 to GPTQ's bytes.
        EstimateInput in = generation(KvCacheKind::Dynamic, 0);
        in.training.quantization = Quantization::Gptq;
        const qint64 plain = at(estimateMemory(in), Phase::Forward, Component::Weights);
        in.training.quantization_options.lm_head = true;
        const qint64 head = at(estimateMemory(in), Phase::Forward, Component::Weights);
        const double saved = 4096.0 * 128256 * 2
                             - quantizedMatrixBytes(Quantization::Gptq, {}, 4096, 128256, 1);
        QVERIFY(std::abs(static_cast<double>(plain - head) - saved) < 64);
        // llama.cpp formats cannot be trained in PyTorch.
        EstimateInput train = input(llama2_7b(), Precision::Bf16);
        train.training.method = Method::Qlora;
        train.training.quantization = Quantization::Q4K;
        QVERIFY(!validateInput(train).empty());
    }

    void computeDtypeFp32CostsMore()
    {
        // bnb_4bit_compute_dtype=float32: the dequantized weight is cast once more, to fp32.
        EstimateInput in = input(llama2_7b(), Precision::Bf16);
        in.training.method = Method::Qlora;
        in.training.quantization = Quantization::Nf4;
        const qint64 bf16 = estimateMemory(in).peak_allocated;
        in.training.quantization_options.compute_dtype = QuantComputeDtype::Fp32;
        QVERIFY(estimateMemory(in).peak_allocated > bf16);
    }

    void adaptersBeyondLora()
    {
        EstimateInput lora = input(llama2_7b(), Precision::Bf16);
        lora.training.method = Method::Lora;
        lora.training.lora.targets = TargetQ | TargetV;
        lora.training.lora.rank = 16;
        const MemoryEstimate base = estimateMemory(lora);
        // rsLoRA and LoRA+ change the scaling and the learning rates, not the tensors.
        EstimateInput variants = lora;
        variants.training.lora.use_rslora = true;
        variants.training.lora.loraplus_lr_ratio = 16;
        QCOMPARE(estimateMemory(variants).peak_allocated, base.peak_allocated);
        // DoRA: a magnitude per output row (4096 for q and v in 32 layers) and, every forward,
        // the weight-sized lora_weight and norm terms.
        EstimateInput dora = lora;
        dora.training.lora.use_dora = true;
        const MemoryEstimate d = estimateMemory(dora);
        QCOMPARE(d.trainable_parameters - base.trainable_parameters, Q_INT64_C(32) * 2 * 4096);
        QVERIFY(d.peak_allocated > base.peak_allocated + 2 * 4096 * 4096 * 4);
        // IA3 (PEFT's Llama default: k_proj, v_proj, down_proj): 32 x (4096 + 4096 + 11008).
        EstimateInput ia3 = lora;
        ia3.training.method = Method::Ia3;
        const MemoryEstimate i = estimateMemory(ia3);
        QCOMPARE(i.trainable_parameters, Q_INT64_C(614400));
        // fp32 vectors (adapter_precision fp32) with AdamW: 8 B of states each.
        QCOMPARE(at(i, Phase::OptimizerStep, Component::OptimizerStates), Q_INT64_C(614400) * 8);
        ia3.training.ia3.targets = 0;
        QVERIFY(!validateInput(ia3).empty());
    }

    void componentsSumToThePeak()
    {
        EstimateInput in = input(llama3_8b(), Precision::Bf16);
        in.training.micro_batch_size = 2;
        in.training.sequence_length = 4096;
        const MemoryEstimate e = estimateMemory(in);
        qint64 sum = 0;
        for (int i = 0; i < kAllocatedComponentCount; ++i)
            sum += e.components.bytes[static_cast<std::size_t>(i)];
        QCOMPARE(sum, e.peak_allocated);
        QCOMPARE(e.peak_reserved, e.peak_allocated + e.components[Component::AllocatorReserve]);
        QCOMPARE(e.device_total, e.peak_reserved + e.components[Component::CudaContext]);
        for (int p = 0; p < kPhaseCount; ++p)
            QVERIFY(e.phases[static_cast<std::size_t>(p)].allocated() <= e.peak_allocated);
    }

    void peakPhaseFollowsTheWorkload()
    {
        // Long sequences: activations and logits dominate, the peak is in backward.
        EstimateInput in = input(llama3_8b(), Precision::Bf16);
        in.training.sequence_length = 8192;
        in.training.micro_batch_size = 4;
        QCOMPARE(estimateMemory(in).peak_phase, Phase::Backward);
        // Tiny activations: the foreach AdamW temporaries make the optimizer step the peak.
        in.training.sequence_length = 16;
        in.training.micro_batch_size = 1;
        in.training.checkpointing = Checkpointing::Full;
        QCOMPARE(estimateMemory(in).peak_phase, Phase::OptimizerStep);
    }

    void monotone_data()
    {
        QTest::addColumn<int>("attention");
        QTest::addColumn<int>("method");
        QTest::addColumn<int>("checkpointing");
        QTest::newRow("eager full none")
            << int(Attention::Eager) << int(Method::Full) << int(Checkpointing::None);
        QTest::newRow("flash lora full-ckpt")
            << int(Attention::Flash) << int(Method::Lora) << int(Checkpointing::Full);
        QTest::newRow("sdpa qlora selective")
            << int(Attention::Sdpa) << int(Method::Qlora) << int(Checkpointing::Selective);
    }
    void monotone()
    {
        QFETCH(int, attention);
        QFETCH(int, method);
        QFETCH(int, checkpointing);
        EstimateInput in = input(mistral_7b(), Precision::Bf16);
        in.training.attention = static_cast<Attention>(attention);
        in.training.method = static_cast<Method>(method);
        in.training.quantization = in.training.method == Method::Qlora ? Quantization::Nf4
                                                                       : Quantization::None;
        in.training.checkpointing = static_cast<Checkpointing>(checkpointing);
        qint64 last = 0;
        for (std::int64_t b : {1, 2, 3, 4, 8, 16, 64}) {
            in.training.micro_batch_size = b;
            const qint64 v = estimateMemory(in).peak_allocated;
            QVERIFY(v >= last); // non-decreasing: an optimizer-step peak ignores activations
            last = v;
        }
        in.training.micro_batch_size = 1;
        last = 0;
        for (std::int64_t s : {128, 512, 1000, 4096, 32768}) {
            in.training.sequence_length = s;
            const qint64 v = estimateMemory(in).peak_allocated;
            QVERIFY(v >= last); // non-decreasing: an optimizer-step peak ignores activations
            last = v;
        }
        last = 0;
        for (std::int64_t l : {1, 2, 8, 32, 80}) {
            in.arch.layers = l;
            const qint64 v = estimateMemory(in).peak_allocated;
            QVERIFY(v >= last); // non-decreasing: an optimizer-step peak ignores activations
            last = v;
        }
    }

    void techniquesReduceMemory()
    {
        EstimateInput in = input(llama3_8b(), Precision::Bf16);
        in.training.attention = Attention::Eager;
        in.training.sequence_length = 4096;
        const MemoryEstimate base = estimateMemory(in);
        EstimateInput flash = in;
        flash.training.attention = Attention::Flash;
        QVERIFY(estimateMemory(flash).phase(Phase::Forward)[Component::Activations]
                < base.phase(Phase::Forward)[Component::Activations]);
        EstimateInput ckpt = flash;
        ckpt.training.checkpointing = Checkpointing::Full;
        QVERIFY(estimateMemory(ckpt).phase(Phase::Forward)[Component::Activations]
                < estimateMemory(flash).phase(Phase::Forward)[Component::Activations]);
        EstimateInput eight = in;
        eight.training.optimizer = Optimizer::AdamW8bit;
        // 2.03 bytes per parameter against 4 (two bf16 states)
        QVERIFY(static_cast<double>(
                    estimateMemory(eight).phase(Phase::OptimizerStep)[Component::OptimizerStates])
                < 0.51
                      * static_cast<double>(
                          base.phase(Phase::OptimizerStep)[Component::OptimizerStates]));
    }

    void gradientAccumulationKeepsGradients()
    {
        EstimateInput in = input(llama2_7b(), Precision::Bf16);
        in.training.micro_batch_size = 8;
        EstimateInput acc = in;
        acc.training.micro_batch_size = 2;
        acc.training.gradient_accumulation_steps = 4;
        const MemoryEstimate a = estimateMemory(acc);
        QCOMPARE(a.phase(Phase::Forward)[Component::Gradients], Q_INT64_C(2) * 6738415616);
        QVERIFY(a.phase(Phase::Forward)[Component::Activations]
                < estimateMemory(in).phase(Phase::Forward)[Component::Activations] / 3);
    }

    void offloadMovesStatesToCpu()
    {
        EstimateInput in = input(llama2_7b(), Precision::MixedBf16);
        in.training.offload.optimizer = true;
        const MemoryEstimate e = estimateMemory(in);
        QCOMPARE(e.phase(Phase::OptimizerStep)[Component::OptimizerStates], Q_INT64_C(0));
        QCOMPARE(e.phase(Phase::OptimizerStep)[Component::MasterWeights], Q_INT64_C(0));
        // fp32 master (4) + Adam states (8) + fp32 gradients (4) per parameter in CPU RAM.
        QCOMPARE(e.cpu_offload_bytes, Q_INT64_C(16) * 6738415616);
    }

    void hugeInputsSaturateInsteadOfWrapping()
    {
        EstimateInput in = input(quickArchitecture(2e12), Precision::Fp32);
        in.training.attention = Attention::Eager;
        in.training.micro_batch_size = 1'000'000;
        in.training.sequence_length = 100'000'000;
        const MemoryEstimate e = estimateMemory(in);
        QVERIFY(e.too_large);
        QVERIFY(e.device_total > 0);
        for (const Breakdown &b : e.phases)
            for (Bytes v : b.bytes)
                QVERIFY(v >= 0);
    }

    void validation_data()
    {
        QTest::addColumn<QString>("what");
        QTest::newRow("qlora without quantization") << "qlora";
        QTest::newRow("tp not dividing gpus") << "tp";
        QTest::newRow("parameter offload without zero3") << "offload";
        QTest::newRow("kv heads not dividing heads") << "gqa";
    }
    void validation()
    {
        QFETCH(QString, what);
        EstimateInput in = input(llama2_7b(), Precision::Bf16);
        QVERIFY(validateInput(in).empty());
        if (what == "qlora") {
            in.training.method = Method::Qlora;
        } else if (what == "tp") {
            in.parallelism.gpus = 3;
            in.parallelism.tensor_parallel = 2;
        } else if (what == "offload") {
            in.training.offload.parameters = true;
        } else {
            in.arch.kv_heads = 5;
        }
        QVERIFY(!validateInput(in).empty());
    }
};

QTEST_APPLESS_MAIN(TestMemoryEstimator)
#include "tst_memory_estimator.moc"
