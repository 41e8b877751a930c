// SPDX-License-Identifier: GPL-3.0-or-later
#include "model/activation_model.h"
#include "model/parameter_layout.h"
#include "test_architectures.h"

#include <QtTest>

using namespace membudget;
using namespace membudget::testing;

// Hand-derived saved bytes per token for the tiny Llama (h 256, I 688, 4 heads, 2 KV heads, d 64).
// Each figure lists the tensors autograd keeps, op by op (see docs/memory-model.md).
class TestActivationModel : public QObject
{
    Q_OBJECT
private:
    static TrainingConfig config(Precision p, Method m, Attention att)
    {
        TrainingConfig t;
        t.precision = p;
        t.method = m;
        t.attention = att;
        t.lora.targets = TargetQ | TargetV;
        t.lora.rank = 8;
        t.lora.dropout = 0.0;
        t.lora.adapter_precision = AdapterPrecision::Fp32;
        return t;
    }

private slots:
    void fp32FullEager()
    {
        const ActivationProfile p
            = activationProfile(tinyLlama(),
                                config(Precision::Fp32, Method::Full, Attention::Eager),
                                1);
        // norms 2 x (x 4h + normalised 4h + rsqrt 4) + q/k/v input 4h + q, repeated k, v 12h
        // + o_proj input 4h + MLP input 4h + gate, silu, up 12I + down input 4I  = 40h + 16I + 8
        QCOMPARE(p.layer_linear, 40.0 * 256 + 16.0 * 688 + 8);
        QCOMPARE(p.layer_score,
                 4.0 * 4); // fp32 softmax output only (its .to(fp32) is the same tensor)
        QCOMPARE(p.layer_checkpoint, 4.0 * 256);
    }

    void bf16FullEager()
    {
        const ActivationProfile p
            = activationProfile(tinyLlama(),
                                config(Precision::Bf16, Method::Full, Attention::Eager),
                                1);
        // norms 2 x (fp32 copy 4h + bf16 normalised 2h + 4) + 2h + 6h + 2h + 2h + 6I + 2I = 24h + 8I + 8
        QCOMPARE(p.layer_linear, 24.0 * 256 + 8.0 * 688 + 8);
        QCOMPARE(p.layer_score, 6.0 * 4); // fp32 softmax + bf16 copy
        // model level: token ids 8 + final norm 6h + 4 + lm_head input 2h; cos/sin [1, s, d] per position
        QCOMPARE(p.model_level, 8.0 + 6.0 * 256 + 4 + 2.0 * 256);
        QCOMPARE(p.model_per_position, 2.0 * 64 * 2);
        QCOMPARE(p.logits_forward, 10.0);
        QCOMPARE(p.logits_backward, 12.0);
    }

    void lossImplementations()
    {
        TrainingConfig t = config(Precision::Bf16, Method::Full, Attention::Flash);
        t.loss = LossImplementation::HfLegacy; // fp32 logits kept in the output + a shifted fp32 copy
        ActivationProfile p = activationProfile(tinyLlama(), t, 1);
        QCOMPARE(p.logits_forward, 12.0);
        QCOMPARE(p.logits_backward, 16.0);
        // Chunked: the bf16 logits are kept, and backward fills their bf16 gradient while one
        // eighth of the fp32 chain (log-softmax, its gradient and the upcast's) exists at a time.
        t.loss = LossImplementation::Chunked;
        p = activationProfile(tinyLlama(), t, 1);
        QCOMPARE(p.logits_forward, 2.0 + 8.0 / 8);
        QCOMPARE(p.logits_backward, 2.0 + 2.0 + 12.0 / 8);
        // A model's own loss without .float() (Qwen v1): the bf16 logits, their shifted bf16 copy
        // and the bf16 log-softmax at the end of forward; its output, gradient and the copy's
        // gradient at the start of backward. Under autocast the log-softmax is fp32.
        t.loss = LossImplementation::NoUpcast;
        p = activationProfile(tinyLlama(), t, 1);
        QCOMPARE(p.logits_forward, 6.0);
        QCOMPARE(p.logits_backward, 6.0);
        t.precision = Precision::AmpBf16;
        p = activationProfile(tinyLlama(), t, 1);
        QCOMPARE(p.logits_forward, 2.0 + 2.0 + 4.0);
        // The model's own fp32 output (torchtitan): the 16-bit logits die at .float(), so the end
        // of forward holds the fp32 output and its log-softmax (8 B, where hf's 10 B keep the
        // 16-bit logits too); backward starts with the log-softmax, its gradient and the
        // output's (12 B). Kept by the loop through backward (torchtitan before June 2024): 4 B
        // more there.
        t.loss = LossImplementation::Fp32Output;
        p = activationProfile(tinyLlama(), t, 1);
        QCOMPARE(p.logits_forward, 4.0 + 4.0);
        QCOMPARE(p.logits_backward, 12.0);
        t.loss = LossImplementation::Fp32OutputKept;
        p = activationProfile(tinyLlama(), t, 1);
        QCOMPARE(p.logits_forward, 4.0 + 4.0);
        QCOMPARE(p.logits_backward, 4.0 + 12.0);
        LossImplementation parsed = LossImplementation::Hf;
        QVERIFY(parseLoss("fp32-output-kept", parsed));
        QCOMPARE(parsed, LossImplementation::Fp32OutputKept);
        QVERIFY(parseLoss("no-upcast", parsed));
        QCOMPARE(parsed, LossImplementation::NoUpcast);
        QCOMPARE(std::string(lossName(parsed)), std::string("no-upcast"));
    }

    void bf16FullFlash()
    {
        const ActivationProfile p
            = activationProfile(tinyLlama(),
                                config(Precision::Bf16, Method::Full, Attention::Flash),
                                1);
        // q 2h, k and v not repeated 2 x 2 x 128, output 2h (also o_proj's input), logsumexp 4 x 4 heads
        const double attention = 2.0 * 256 + 2.0 * 2 * 128 + 2.0 * 256 + 16;
        QCOMPARE(p.layer_linear,
                 2 * (6.0 * 256 + 4) + 2.0 * 256 + attention + 2.0 * 256 + 6.0 * 688 + 2.0 * 688);
        QCOMPARE(p.layer_score, 0.0);
    }

    void fp32LoraNoDropout()
    {
        const ActivationProfile p
            = activationProfile(tinyLlama(),
                                config(Precision::Fp32, Method::Lora, Attention::Eager),
                                1);
        // Frozen base: no linear keeps its input, norms keep only the fp32 input and rsqrt.
        // lora_A of q and v share the un-dropped input (4h once) and lora_B keeps 8 fp32 values each.
        const double expected = 2 * (4.0 * 256 + 4) + 4.0 * 256 + 2 * 8 * 4.0 + 12.0 * 256
                                + 12.0 * 688;
        QCOMPARE(p.layer_linear, expected);
    }

    void bf16LoraDropoutWithFp32Adapters()
    {
        TrainingConfig t = config(Precision::Bf16, Method::Lora, Attention::Flash);
        t.lora.dropout = 0.1;
        const ActivationProfile p = activationProfile(tinyLlama(), t, 1);
        // Each adapter casts its input to fp32 (4h), keeps a 1-byte dropout mask (h) and lora_B input 4r.
        const double adapters = 2 * (4.0 * 256 + 256 + 4.0 * 8);
        const double attention = 2.0 * 256 + 2.0 * 2 * 128 + 2.0 * 256 + 16;
        QCOMPARE(p.layer_linear, 2 * (4.0 * 256 + 4) + adapters + attention + 6.0 * 688);
    }

    void loraFirstLayerHasNoInputGradient()
    {
        // Frozen embeddings: layer 0's first norm keeps nothing; with adapters on q and v only, eager
        // attention keeps no q (needed only for k's gradient).
        const ActivationProfile p
            = activationProfile(tinyLlama(),
                                config(Precision::Fp32, Method::Lora, Attention::Eager),
                                1);
        QCOMPARE(p.first_layer_linear, 4.0 * 256 + 4 + 4.0 * 4 * 64);
        QCOMPARE(p.first_layer_score, 0.0);
    }

    void korthikantiGptLayer()
    {
        // Korthikanti et al. 2022, section 4.1: 34 s b h + 5 a s^2 b bytes per layer in 16-bit with
        // dropout; LayerNorm's fp32 mean and rstd add 8 bytes per token per norm.
        ModelArchitecture a = gpt2_small();
        a.mlp = MlpKind::Gelu;
        TrainingConfig t = config(Precision::Bf16, Method::Full, Attention::Eager);
        const ActivationProfile p = activationProfile(a, t, 1);
        QCOMPARE(p.layer_linear, 34.0 * 768 + 16);
        QCOMPARE(p.layer_score, 5.0 * 12);
        // Selective recomputation drops the 5as term (their section 5).
        t.checkpointing = Checkpointing::Selective;
        QCOMPARE(activationProfile(a, t, 1).layer_score, 0.0);
    }

    void checkpointingAndSelective()
    {
        TrainingConfig t = config(Precision::Bf16, Method::Full, Attention::Eager);
        t.checkpointing = Checkpointing::Selective;
        const ActivationProfile sel = activationProfile(tinyLlama(), t, 1);
        QCOMPARE(sel.layer_score, 0.0); // the s^2 softmax terms are recomputed during backward:
        const StepGraphs g = stepGraphs(tinyLlama(), t, parameterLayout(tinyLlama()), 1);
        QCOMPARE(g.body.regions.size(), std::size_t(1));
        double recomputedScores = 0;
        const RecomputeRegion &r = g.body.regions[0];
        for (int i = r.first_op; i <= r.last_op; ++i)
            for (int o : g.body.ops[static_cast<std::size_t>(i)].outputs)
                recomputedScores += g.body.tensors[static_cast<std::size_t>(o)].size.per_token_seq;
        QVERIFY(recomputedScores > 0);
    }

    // torchtitan's op-level policy: each layer keeps its input and the outputs of mm 1, 3, 5, 7 —
    // q_proj (a d = h), v_proj (k d = h / 2), gate_proj (I) and down_proj (h) — and, under SDPA,
    // the kernel's output (h) and fp32 logsumexp (4 per head); bf16 everywhere.
    void opSelectiveKeepsEverySecondMatmul()
    {
        const double h = 256, I = 688;
        TrainingConfig t = config(Precision::Bf16, Method::Full, Attention::Sdpa);
        t.checkpointing = Checkpointing::OpSelective;
        const ActivationProfile op = activationProfile(tinyLlama(), t, 1);
        QCOMPARE(op.layer_checkpoint, 2 * h + 2 * (h + h / 2 + I + h) + 2 * h + 4 * 4);
        t.checkpointing = Checkpointing::Full;
        const ActivationProfile full = activationProfile(tinyLlama(), t, 1);
        QCOMPARE(op.layer_linear, full.layer_linear); // the recomputed layer is the same
        // Eager attention's matmuls are bmm: the policy keeps no attention output there.
        t = config(Precision::Bf16, Method::Full, Attention::Eager);
        t.checkpointing = Checkpointing::OpSelective;
        QCOMPARE(activationProfile(tinyLlama(), t, 1).layer_checkpoint,
                 2 * h + 2 * (h + h / 2 + I + h));
        // A bias makes q/k/v addmm: not counted, so the policy keeps o_proj (mm 1) and up_proj (mm 3).
        ModelArchitecture biased = tinyLlama();
        biased.qkv_bias = true;
        QCOMPARE(activationProfile(biased, t, 1).layer_checkpoint, 2 * h + 2 * (h + I));
    }

    // FlashAttention-2 with a padding mask: q, k and v gathered into new tensors (kept by the
    // varlen kernel instead of the originals), the output scattered back into a new padded tensor
    // (o_proj keeps it, the kernel keeps its own), and the layer's int64 token indices.
    void flashWithPaddingKeepsTheUnpaddedCopies()
    {
        TrainingConfig t = config(Precision::Bf16, Method::Full, Attention::Flash);
        const ActivationProfile plain = activationProfile(tinyLlama(), t, 1);
        t.batch_padding = BatchPadding::Padded;
        const ActivationProfile padded = activationProfile(tinyLlama(), t, 1);
        QCOMPARE(padded.layer_linear - plain.layer_linear, 2.0 * 256 + 8);
        t.batch_padding = BatchPadding::Packed; // position_ids: the kernel gets views
        QCOMPARE(activationProfile(tinyLlama(), t, 1).layer_linear, plain.layer_linear);
    }

    void tensorParallelSplitsHeadsAndMlp()
    {
        const TrainingConfig t = config(Precision::Bf16, Method::Full, Attention::Eager);
        ModelArchitecture a = llama2_7b();
        const ActivationProfile one = activationProfile(a, t, 1);
        const ActivationProfile two = activationProfile(a, t, 2);
        QVERIFY(two.layer_linear < one.layer_linear);
        QCOMPARE(two.layer_score, one.layer_score / 2);
    }

    // Korthikanti et al. 2022, section 4.2.2, with DTensor's layouts (torchtitan): with sequence
    // parallelism the norms, residual stream and layer input hold half the sequence at TP 2; each
    // block's gathered input, kept by its matmuls, stays whole.
    void sequenceParallelShardsTheRegionsBetweenBlocks()
    {
        const TrainingConfig t = config(Precision::Bf16, Method::Full, Attention::Eager);
        const double h = 256, I = 688;
        const ActivationProfile tp = activationProfile(tinyLlama(), t, TensorParallelPlan(2));
        // norms 2 x (6h + 4) + q/k/v input 2h + q, repeated k, v 3h + o_proj input h + MLP input 2h
        // + gate, silu, up 3I + down input I
        QCOMPARE(tp.layer_linear, 20.0 * h + 4.0 * I + 8);
        QCOMPARE(tp.layer_checkpoint, 2.0 * h);
        const ActivationProfile sp = activationProfile(tinyLlama(), t, TensorParallelPlan(2, true));
        // norms 2 x (3h + 2), gathered q/k/v input 2h, 3h, h, gathered MLP input 2h, 3I + I
        QCOMPARE(sp.layer_linear, 14.0 * h + 4.0 * I + 4);
        QCOMPARE(sp.layer_score, tp.layer_score);
        QCOMPARE(sp.layer_checkpoint, 1.0 * h);
        // token ids 8 (every rank reads the whole batch), final norm 3h + 2, gathered lm_head
        // input 2h
        QCOMPARE(sp.model_level, 8.0 + 3.0 * h + 2 + 2.0 * h);
        QCOMPARE(sp.logits_forward, tp.logits_forward);
        // Without tensor parallelism there is nothing to shard.
        const ActivationProfile one = activationProfile(tinyLlama(), t, TensorParallelPlan(1, true));
        QCOMPARE(one.layer_linear, activationProfile(tinyLlama(), t, 1).layer_linear);
    }
};

QTEST_APPLESS_MAIN(TestActivationModel)
#include "tst_activation_model.moc"
