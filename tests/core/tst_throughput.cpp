// SPDX-License-Identifier: GPL-3.0-or-later
// The throughput model (core/throughput): FLOP counts against their closed forms, and the direction
// and size of each technique's effect on the step time.
#include "io/preset_catalog.h"
#include "model/parameter_layout.h"
#include "model/scenario.h"
#include "test_architectures.h"
#include "test_presets.h"
#include "throughput/attention_kernel.h"
#include "throughput/device_model.h"
#include "throughput/step_work.h"
#include "throughput/throughput_model.h"

#include <QtTest>

using namespace membudget;
using namespace membudget::testing;

class TestThroughput : public QObject
{
    Q_OBJECT
private:
    static EstimateInput fullTraining(const ModelArchitecture &arch)
    {
        EstimateInput in;
        in.arch = arch;
        in.training.precision = Precision::Bf16;
        in.training.attention = Attention::Flash;
        in.training.micro_batch_size = 4;
        in.training.sequence_length = 2048;
        return in;
    }

    static double linearParameters(const ModelArchitecture &arch)
    {
        double n = 0;
        for (const TensorGroup &g : parameterLayout(arch))
            if (g.linear)
                n += g.totalElements();
        if (arch.tied_embeddings)
            n += static_cast<double>(arch.vocab_size * arch.hidden_size);
        return n;
    }

private slots:
    // Dense training does 6 FLOPs per weight and token (2 forward, 2 input gradient, 2 weight
    // gradient: Kaplan et al. 2020, section 2.1) plus the attention core, 6 b s^2 a d L with a causal
    // mask counted once.
    void denseTrainingIsSixNPlusAttention()
    {
        const EstimateInput in = fullTraining(llama2_7b());
        const DeviceModel device(bundledGpu("a100-80gb"), in.training.precision);
        const MicroBatchWork w = microBatchWork(in.arch, in.training, 1, device);
        const double T = 4.0 * 2048;
        const double sixN = 6 * linearParameters(in.arch) * T;
        const double attention = 6.0 * 4 * 2048.0 * 2048 * 32 * 128 * 32;
        QVERIFY(qAbs(w.model_flops - (sixN + attention)) / w.model_flops < 1e-9);
        QVERIFY(w.model_flops >= sixN);
        QCOMPARE(w.recompute.flops, 0.0);
    }

    // LoRA skips the base weights' gradient: 4 instead of 6 FLOPs per weight and token, plus the
    // adapters (Hu et al. 2021).
    void loraSkipsTheWeightGradient()
    {
        EstimateInput in = fullTraining(llama2_7b());
        const DeviceModel device(bundledGpu("a100-80gb"), in.training.precision);
        const double full = microBatchWork(in.arch, in.training, 1, device).model_flops;
        in.training.method = Method::Lora;
        in.training.lora.rank = 16;
        in.training.lora.targets = TargetAllLinear;
        const double lora = microBatchWork(in.arch, in.training, 1, device).model_flops;
        QVERIFY(lora < full * 0.72 && lora > full * 0.66);
    }

    // Full checkpointing recomputes every layer's forward in backward: its matmul time equals the
    // forward's, minus lm_head.
    void checkpointingRecomputesTheForward()
    {
        EstimateInput in = fullTraining(llama2_7b());
        const DeviceModel device(bundledGpu("a100-80gb"), in.training.precision);
        const MicroBatchWork none = microBatchWork(in.arch, in.training, 1, device);
        in.training.checkpointing = Checkpointing::Full;
        const MicroBatchWork full = microBatchWork(in.arch, in.training, 1, device);
        QVERIFY(full.recompute.matmul > 0.9 * none.forward.matmul);
        QVERIFY(full.recompute.matmul < none.forward.matmul);
        QCOMPARE(full.model_flops, none.model_flops); // recomputation is not model FLOPs
        const double slower
            = estimateThroughput(in, bundledGpu("a100-80gb")).step_seconds
              / estimateThroughput(fullTraining(llama2_7b()), bundledGpu("a100-80gb")).step_seconds;
        QVERIFY2(slower > 1.15 && slower < 1.45, qPrintable(QString::number(slower)));
    }

    // Op-level selective checkpointing reruns mm 2, 4 and 6 of each layer (k_proj, o_proj,
    // up_proj), not SDPA's kernel (FlashAttention-2's op, yes), and every element-wise kernel.
    void opSelectiveRecomputesEverySecondMatmul()
    {
        EstimateInput in = fullTraining(llama2_7b());
        in.training.attention = Attention::Flash;
        in.training.checkpointing = Checkpointing::OpSelective;
        QVERIFY(microBatchWork(in.arch,
                               in.training,
                               1,
                               DeviceModel(bundledGpu("a100-80gb"), in.training.precision))
                    .recompute.attention
                > 0);
        in.training.attention = Attention::Sdpa;
        in.training.checkpointing = Checkpointing::None;
        const DeviceModel device(bundledGpu("a100-80gb"), in.training.precision);
        const MicroBatchWork none = microBatchWork(in.arch, in.training, 1, device);
        in.training.checkpointing = Checkpointing::OpSelective;
        const MicroBatchWork op = microBatchWork(in.arch, in.training, 1, device);
        const double h = 4096, I = 11008,
                     T = static_cast<double>(in.training.micro_batch_size
                                             * in.training.sequence_length);
        QCOMPARE(op.recompute.flops,
                 2 * T * (h * h + h * h + h * I) * static_cast<double>(in.arch.layers));
        QCOMPARE(op.recompute.attention, 0.0);
        QCOMPARE(op.forward.matmul, none.forward.matmul);
        in.training.checkpointing = Checkpointing::Full;
        const MicroBatchWork full = microBatchWork(in.arch, in.training, 1, device);
        QCOMPARE(op.recompute.elementwise, full.recompute.elementwise);
        QVERIFY(op.recompute.matmul < 0.5 * full.recompute.matmul);
    }

    void flashAttentionBeatsEagerAtLongSequences()
    {
        EstimateInput in = fullTraining(llama2_7b());
        in.training.micro_batch_size = 1;
        in.training.sequence_length = 8192;
        const double flash = estimateThroughput(in, bundledGpu("a100-80gb")).step_seconds;
        in.training.attention = Attention::Eager;
        const double eager = estimateThroughput(in, bundledGpu("a100-80gb")).step_seconds;
        QVERIFY(eager > 1.2 * flash);
    }

    // Mixture of experts: each token runs experts_per_token of the experts.
    void moeCountsActiveExpertsOnly()
    {
        EstimateInput in = fullTraining(mixtral_8x7b());
        const DeviceModel device(bundledGpu("h100-80gb"), in.training.precision);
        const MicroBatchWork w = microBatchWork(in.arch, in.training, 1, device);
        const double T = 4.0 * 2048;
        const double active = parameterLayout(in.arch).active;
        QVERIFY(w.model_flops > 6 * (active - 2 * 32000.0 * 4096) * T);
        QVERIFY(w.model_flops < 6 * active * T * 1.15);
    }

    // Decoding reads every weight once per step: on an A100 a 7B model in bf16 (13.5 GB) cannot
    // decode faster than 2039 GB/s / 13.5 GB = 151 steps per second; a bigger batch shares the read.
    void decodingIsBoundByMemory()
    {
        EstimateInput in = fullTraining(llama2_7b());
        in.training.mode = Mode::Inference;
        in.training.micro_batch_size = 1;
        in.training.sequence_length = 512;
        const ThroughputEstimate one = estimateThroughput(in, bundledGpu("a100-80gb"));
        QVERIFY(one.valid);
        QVERIFY(one.decode_tokens_per_second < 151);
        QVERIFY(one.decode_tokens_per_second > 30);
        in.training.micro_batch_size = 16;
        const ThroughputEstimate sixteen = estimateThroughput(in, bundledGpu("a100-80gb"));
        QVERIFY(sixteen.decode_tokens_per_second > 8 * one.decode_tokens_per_second);
        // 4-bit weights: a quarter of the bytes to read per step.
        const DeviceModel device(bundledGpu("a100-80gb"), in.training.precision);
        in.training.micro_batch_size = 1;
        const double bf16 = decodeStepWork(in.arch, in.training, 1, 512, device).gpuSeconds();
        in.training.quantization = Quantization::Nf4;
        const double nf4 = decodeStepWork(in.arch, in.training, 1, 512, device).gpuSeconds();
        QVERIFY(nf4 < 0.5 * bf16);
    }

    // Data parallelism over NVLink scales nearly linearly; over PCIe, all-gathering a 7B model for
    // every micro-batch shows.
    void communicationDependsOnTheInterconnect()
    {
        EstimateInput in = fullTraining(llama2_7b());
        in.training.micro_batch_size = 1;
        const double one = estimateThroughput(in, bundledGpu("a100-80gb")).tokens_per_second;
        in.parallelism.gpus = 8;
        in.parallelism.sharding = Sharding::FsdpFull;
        const ThroughputEstimate nvlink = estimateThroughput(in, bundledGpu("a100-80gb"));
        QVERIFY(nvlink.tokens_per_second > 7 * one);
        const ThroughputEstimate pcie = estimateThroughput(in, bundledGpu("l40s"));
        QVERIFY(pcie.breakdown.communication > 0.2 * pcie.step_seconds);
    }

    // TRL's chunked loss gathers a tensor-parallel lm_head whole: every rank computes the whole
    // vocabulary's logits (the model's FLOPs stay its share) and all-gathers the weight once per
    // micro-batch instead of the logits.
    void trlChunkedLossRepeatsTheHeadOnEveryRank()
    {
        EstimateInput in = fullTraining(llama32_1b());
        in.parallelism.gpus = 8;
        in.parallelism.tensor_parallel = 8;
        in.training.loss = LossImplementation::TrlChunkedNll;
        const ThroughputEstimate trl = estimateThroughput(in, bundledGpu("h100-80gb"));
        const double V = static_cast<double>(in.arch.vocab_size);
        const double H = static_cast<double>(in.arch.hidden_size);
        const double T = 4.0 * 2048;
        // Forward, the chunk's recomputation, the input and the weight gradients.
        const double headFlops = 2 * T * H * V * 4;
        const DeviceModel device(bundledGpu("h100-80gb"), in.training.precision);
        const MicroBatchWork split = microBatchWork(in.arch, in.training, 8, device);
        const MicroBatchWork whole = microBatchWork(in.arch, in.training, 1, device);
        const auto done = [](const MicroBatchWork &w) {
            return w.forward.flops + w.backward.flops + w.recompute.flops;
        };
        // Everything else splits eight ways; the head is whole on every rank.
        QVERIFY2(qAbs(done(split) - done(whole) / 8 - headFlops * 7 / 8) < 1e-6 * done(whole),
                 qPrintable(QString("%1 %2").arg(done(split)).arg(done(whole))));
        QCOMPARE(split.model_flops, whole.model_flops / 8);
        QVERIFY(trl.breakdown.communication > 0);
    }

    // DeepSpeed has no pure fp16: fp16 under it steps an fp32 master partition, mixed-fp16's
    // step, longer than FSDP's pure-fp16 optimizer step.
    void deepSpeedStepsAnFp32MasterPartition()
    {
        EstimateInput in = fullTraining(llama32_1b());
        in.training.precision = Precision::Fp16;
        in.parallelism.gpus = 4;
        in.parallelism.sharding = Sharding::Zero2;
        EstimateInput mixed = in;
        mixed.training.precision = Precision::MixedFp16;
        const GpuPerformance gpu = bundledGpu("h100-80gb");
        const ThroughputEstimate fp16 = estimateThroughput(in, gpu);
        QCOMPARE(fp16.breakdown.optimizer, estimateThroughput(mixed, gpu).breakdown.optimizer);
        QCOMPARE(fp16.step_seconds, estimateThroughput(mixed, gpu).step_seconds);
        EstimateInput fsdp = in;
        fsdp.parallelism.sharding = Sharding::FsdpFull;
        QVERIFY(estimateThroughput(fsdp, gpu).breakdown.optimizer < fp16.breakdown.optimizer);
    }

    // DeepSpeed's ZeRO step moves more than the fused kernel and clip_grad_norm_: per element of
    // the partition, the norm's float64 copy (G + 16), the flatten (2G), the fp32 cast of 16-bit
    // gradients (G + 4; the kernel then reads 4 B), its own clipping (2 x what the kernel reads)
    // and a cloned master's copy back (ZeRO-1/2 here). FSDP's step over the same shard is the
    // plain one: fused AdamW 2W + G + 4S, clipping 3G.
    void deepSpeedStepMovesItsOwnCopies_data()
    {
        QTest::addColumn<int>("precision");    // a Precision
        QTest::addColumn<int>("sharding");     // a Sharding
        QTest::addColumn<double>("deepSpeed"); // bytes per partition element
        QTest::addColumn<double>("plain");
        // fp32: W = G = S = 4, kernel 28; cloned master copied back, 4 + 4.
        QTest::newRow("fp32 zero2")
            << int(Precision::Fp32) << int(Sharding::Zero2) << 20 + 8 + 28 + 8 + 8.0 << 28 + 12.0;
        // ZeRO-3 from 0.18.2 steps fp32 weights in place: no copy back.
        QTest::newRow("fp32 zero3")
            << int(Precision::Fp32) << int(Sharding::Zero3) << 20 + 8 + 28 + 8.0 << 28 + 12.0;
        // mixed-bf16: W = 4 + 1, S = 4, G = 2; the kernel reads the 4-byte cast.
        QTest::newRow("mixed-bf16 zero2")
            << int(Precision::MixedBf16) << int(Sharding::Zero2) << 18 + 4 + (10 + 4 + 16) + 8 + 6.0
            << (10 + 2 + 16) + 6.0;
    }

    void deepSpeedStepMovesItsOwnCopies()
    {
        QFETCH(int, precision);
        QFETCH(int, sharding);
        QFETCH(double, deepSpeed);
        QFETCH(double, plain);
        EstimateInput in = fullTraining(llama32_1b());
        in.training.precision = static_cast<Precision>(precision);
        in.training.optimizer = Optimizer::AdamWFused;
        in.parallelism.gpus = 4;
        in.parallelism.sharding = static_cast<Sharding>(sharding);
        EstimateInput fsdp = in;
        fsdp.parallelism.sharding = Sharding::FsdpFull;
        const GpuPerformance gpu = bundledGpu("h100-80gb");
        const double ds = estimateThroughput(in, gpu).breakdown.optimizer;
        const double torch = estimateThroughput(fsdp, gpu).breakdown.optimizer;
        QVERIFY(torch > 0);
        QVERIFY2(qAbs(ds / torch - deepSpeed / plain) < 1e-9,
                 qPrintable(QString("%1 against %2").arg(ds / torch).arg(deepSpeed / plain)));
    }

    // SDPA on Hopper runs cuDNN's attention from torch 2.11, and under torchtitan from 0.2.0
    // whatever the torch: the attention core takes 1 / 1.6 of FlashAttention-2's time. flash-attn
    // (attention: flash), older releases, older torchtitan and other architectures keep FA2.
    void sdpaRunsCudnnAttentionOnHopper()
    {
        EstimateInput in = fullTraining(llama3_8b());
        in.training.attention = Attention::Sdpa;
        const GpuPerformance h100 = bundledGpu("h100-80gb"), a100 = bundledGpu("a100-80gb");
        const auto attention = [](const EstimateInput &e, const GpuPerformance &g) {
            return estimateThroughput(e, g).breakdown.attention;
        };
        QCOMPARE(sdpaKernel(in, h100), AttentionKernel::Cudnn); // the newest torch
        EstimateInput older = in;
        older.training.stack = {Stack::PlainTorch, "2.10", ""};
        QCOMPARE(sdpaKernel(older, h100), AttentionKernel::FlashAttention2);
        const double cudnn = attention(in, h100), flash = attention(older, h100);
        QVERIFY(flash > 0);
        QVERIFY2(qAbs(cudnn / flash - 1 / 1.6) < 1e-9, qPrintable(QString::number(cudnn / flash)));
        EstimateInput flashAttn = in;
        flashAttn.training.attention = Attention::Flash;
        QCOMPARE(attention(flashAttn, h100), flash);
        QCOMPARE(attention(in, a100), attention(older, a100));
        EstimateInput titan = in;
        titan.training.stack = {Stack::Torchtitan, "0.2.0", "2.9"};
        QCOMPARE(sdpaKernel(titan, h100), AttentionKernel::Cudnn);
        titan.training.stack = {Stack::Torchtitan, "0.1.0", "2.11"};
        QCOMPARE(sdpaKernel(titan, h100), AttentionKernel::FlashAttention2);
    }

    // PyTorch prefers cuDNN on compute capability 9.0, 10.0 and 10.3: B200 and GB200 (10.0) run it
    // at the same ratio as Hopper; the RTX 50 and RTX PRO Blackwell cards (12.0) stay on flash,
    // as does a Blackwell GPU whose compute capability a user preset does not give.
    void sdpaRunsCudnnAttentionOnB200ButNotRtx50()
    {
        EstimateInput in = fullTraining(llama3_8b());
        in.training.attention = Attention::Sdpa;
        EstimateInput older = in;
        older.training.stack = {Stack::PlainTorch, "2.10", ""};
        const auto ratio = [&](const GpuPerformance &g) {
            return estimateThroughput(in, g).breakdown.attention
                   / estimateThroughput(older, g).breakdown.attention;
        };
        for (const char *id : {"b200", "gb200", "b300", "gb300"}) {
            QCOMPARE(sdpaKernel(in, bundledGpu(id)), AttentionKernel::Cudnn);
            QVERIFY2(qAbs(ratio(bundledGpu(id)) - 1 / 1.6) < 1e-9, id);
        }
        for (const char *id : {"rtx-5090", "rtx-pro-6000"}) {
            QCOMPARE(sdpaKernel(in, bundledGpu(id)), AttentionKernel::FlashAttention2);
            QCOMPARE(ratio(bundledGpu(id)), 1.0);
        }
        GpuPerformance unnamed = bundledGpu("b200");
        unnamed.compute_capability = {};
        QCOMPARE(sdpaKernel(in, unnamed), AttentionKernel::FlashAttention2);
        QVERIFY(sdpaPrefersCudnn({10, 3}));  // B300
        QVERIFY(!sdpaPrefersCudnn({10, 1})); // none
        QVERIFY(!sdpaPrefersCudnn({8, 0}));
        // torchtitan 0.1 asked for cuDNN first from compute capability 10.0 (PR #1196).
        EstimateInput titan = in;
        titan.training.stack = {Stack::Torchtitan, "0.1.0", "2.9"};
        QCOMPARE(sdpaKernel(titan, bundledGpu("b200")), AttentionKernel::Cudnn);
        QCOMPARE(sdpaKernel(titan, bundledGpu("h100-80gb")), AttentionKernel::FlashAttention2);
        titan.training.stack = {Stack::Torchtitan, "0.0.2", "2.9"};
        QCOMPARE(sdpaKernel(titan, bundledGpu("b200")), AttentionKernel::FlashAttention2);
    }

    // TRL's chunked loss under ZeRO-3 gathers lm_head twice per 256-token chunk (its forward and
    // recomputation), exposed: the extra traffic grows with the chunks.
    void trlGathersAZero3HeadPerChunk()
    {
        EstimateInput in = fullTraining(llama3_8b());
        in.training.precision = Precision::MixedBf16;
        in.training.micro_batch_size = 1;
        in.parallelism.gpus = 8;
        in.parallelism.sharding = Sharding::Zero3;
        const GpuPerformance gpu = bundledGpu("h100-80gb");
        const auto extra = [&](std::int64_t tokens) {
            EstimateInput trl = in, hf = in;
            trl.training.sequence_length = hf.training.sequence_length = tokens;
            trl.training.loss = LossImplementation::TrlChunkedNll;
            hf.training.loss = LossImplementation::Hf;
            return estimateThroughput(trl, gpu).breakdown.communication
                   - estimateThroughput(hf, gpu).breakdown.communication;
        };
        const double at2k = extra(2049), at4k = extra(4097); // 8 and 16 chunks
        QVERIFY(at2k > 0);
        QVERIFY2(qAbs(at4k / at2k - 30.0 / 14.0) < 1e-6, qPrintable(QString::number(at4k / at2k)));
        in.parallelism.sharding = Sharding::FsdpFull; // FSDP runs the head module: no extra gathers
        EstimateInput trl = in, hf = in;
        trl.training.loss = LossImplementation::TrlChunkedNll;
        hf.training.loss = LossImplementation::Hf;
        QCOMPARE(estimateThroughput(trl, gpu).breakdown.communication,
                 estimateThroughput(hf, gpu).breakdown.communication);
    }

    // Small micro-batches leave the GPU waiting for the host (Qwen's 256-token rows); larger ones
    // raise tokens per second until the GPU is busy.
    void tokensPerSecondGrowWithTheMicroBatch()
    {
        EstimateInput in = fullTraining(llama32_1b());
        in.training.method = Method::Lora;
        in.training.sequence_length = 256;
        double last = 0;
        for (std::int64_t b : {1, 2, 4, 8, 16}) {
            in.training.micro_batch_size = b;
            const ThroughputEstimate t = estimateThroughput(in, bundledGpu("h100-80gb"));
            QVERIFY(t.tokens_per_second > last);
            QVERIFY(t.mfu > 0 && t.mfu < 1);
            last = t.tokens_per_second;
        }
        in.training.micro_batch_size = 1;
        QVERIFY(estimateThroughput(in, bundledGpu("h100-80gb")).breakdown.host_wait > 0);
    }

    void qloraDequantizesAndOffloadCopies()
    {
        EstimateInput in = fullTraining(llama2_7b());
        in.training.method = Method::Lora;
        in.training.checkpointing = Checkpointing::Full;
        const ThroughputEstimate lora = estimateThroughput(in, bundledGpu("rtx-4090"));
        in.training.method = Method::Qlora;
        in.training.quantization = Quantization::Nf4;
        const ThroughputEstimate qlora = estimateThroughput(in, bundledGpu("rtx-4090"));
        QVERIFY(qlora.breakdown.dequantize > 0);
        QVERIFY(qlora.step_seconds > lora.step_seconds);
        EstimateInput full = fullTraining(llama2_7b());
        const ThroughputEstimate resident = estimateThroughput(full, bundledGpu("a100-80gb"));
        full.training.offload.optimizer = true;
        const ThroughputEstimate offloaded = estimateThroughput(full, bundledGpu("a100-80gb"));
        QVERIFY(offloaded.breakdown.offload > 0);
        QCOMPARE(offloaded.breakdown.optimizer, 0.0);
        QVERIFY(offloaded.step_seconds > resident.step_seconds);
    }

    void presetsWithoutSpeedFiguresSayWhy()
    {
        const ThroughputEstimate t = estimateThroughput(fullTraining(llama2_7b()), GpuPerformance{});
        QVERIFY(!t.valid);
        QVERIFY(!t.problem.empty());
        QVERIFY(estimateRelativeThroughput(fullTraining(llama2_7b()), GpuPerformance{}).valid);
        // A preset with bf16 figures but no FP32 rate says which key an fp32 step needs.
        GpuPerformance noFp32 = bundledGpu("a100-80gb");
        noFp32.fp32_tflops = 0;
        EstimateInput fp32 = fullTraining(llama2_7b());
        fp32.training.precision = Precision::Fp32;
        const ThroughputEstimate f = estimateThroughput(fp32, noFp32);
        QVERIFY(!f.valid);
        QCOMPARE(f.problem,
                 std::string("this GPU preset has no speed figures for fp32 (it needs fp32_tflops "
                             "and memory_bandwidth_gbps)"));
        fp32.training.precision = Precision::Bf16;
        QVERIFY(estimateThroughput(fp32, noFp32).valid);
    }

    // A run: steps = tokens / tokens per step (rounded up); GPU-hours and cost follow; the scenario's
    // price overrides the preset's.
    void runTimeAndCost()
    {
        EstimateInput in = fullTraining(mistral_7b());
        in.training.method = Method::Lora;
        in.training.sequence_length = 1024;
        in.training.micro_batch_size = 8;
        in.parallelism.gpus = 2;
        const ThroughputEstimate t = estimateThroughput(in, bundledGpu("a100-80gb"));
        const DatasetConfig data{10000, 1024, 1.0};
        const RunEstimate run = estimateRun(t, in, data, 2.0);
        QVERIFY(run.valid && run.has_price);
        QCOMPARE(run.tokens, 10000.0 * 1024);
        QCOMPARE(run.steps, std::ceil(10000.0 * 1024 / (8 * 1024 * 2)));
        QCOMPARE(run.run_seconds, run.steps * t.step_seconds);
        QCOMPARE(run.gpu_hours, run.run_seconds * 2 / 3600);
        QCOMPARE(run.cost, run.gpu_hours * 2.0);
        QVERIFY(!estimateRun(t, in, data, 0).has_price);
        QVERIFY(!estimateRun(t, in, DatasetConfig{}, 2.0).valid);

        Scenario s;
        s.prices["a100-80gb"] = 1.25;
        QCOMPARE(gpuHourPrice(s, "a100-80gb", 2.4984), 1.25);
        QCOMPARE(gpuHourPrice(s, "h100-80gb", 3.78), 3.78);
    }

    // Every bundled GPU preset has the figures the model needs, and a consumer card's sources line.
    void bundledGpusHaveSpeedFigures()
    {
        for (const GpuSpec &g : PresetCatalog::bundled().gpus()) {
            QVERIFY2(g.performance.known(), g.id.c_str());
            QVERIFY2(!g.performance.sources.empty(), g.id.c_str());
            QVERIFY2(g.performance.price_per_hour == 0 || !g.performance.price_source.empty(),
                     g.id.c_str());
            QVERIFY2(g.performance.multiprocessors > 0, g.id.c_str());
        }
    }
};

QTEST_APPLESS_MAIN(TestThroughput)
#include "tst_throughput.moc"
