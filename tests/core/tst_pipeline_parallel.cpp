// SPDX-License-Identifier: GPL-3.0-or-later
// Pipeline parallelism (core/model/pipeline_parallel.h): the stages' layers and ends, the
// micro-batches each schedule keeps in flight, the worst stage, the bubble, the checks, the keys.
#include "advice/fit_advisor.h"
#include "io/preset_catalog.h"
#include "io/scenario_yaml.h"
#include "model/memory_estimator.h"
#include "model/parameter_layout.h"
#include "model/pipeline_parallel.h"
#include "model/step_model.h"
#include "test_architectures.h"
#include "test_presets.h"
#include "throughput/throughput_model.h"

#include <QtTest>

#include <algorithm>
#include <string>

using namespace membudget;
using namespace membudget::testing;

class TestPipelineParallel : public QObject
{
    Q_OBJECT
private:
    // Full bf16 training of Llama-3-8B, one micro-batch of 4k tokens, `m` micro-batches per step.
    static EstimateInput input(std::int64_t stages, std::int64_t m, PipelineSchedule schedule)
    {
        EstimateInput in;
        in.arch = llama3_8b();
        in.training.precision = Precision::Bf16;
        in.training.method = Method::Full;
        in.training.micro_batch_size = 1;
        in.training.sequence_length = 4096;
        in.training.gradient_accumulation_steps = m;
        in.training.attention = Attention::Flash;
        in.parallelism.gpus = stages;
        in.parallelism.pipeline_parallel = stages;
        in.parallelism.pipeline_schedule = schedule;
        return in;
    }
    static EstimateInput stage(EstimateInput in, std::int32_t index)
    {
        in.pipeline_stage = index;
        return in;
    }
    static Bytes at(const MemoryEstimate &e, Phase p, Component c) { return e.phase(p)[c]; }

private slots:
    void layersSplitEvenlyFirstStagesTakeTheRest()
    {
        for (std::int64_t i = 0; i < 4; ++i)
            QCOMPARE(pipelineStageLayers(32, 4, i), std::int64_t(8));
        QCOMPARE(pipelineStageLayers(30, 4, 0), std::int64_t(8));
        QCOMPARE(pipelineStageLayers(30, 4, 1), std::int64_t(8));
        QCOMPARE(pipelineStageLayers(30, 4, 2), std::int64_t(7));
        QCOMPARE(pipelineStageLayers(30, 4, 3), std::int64_t(7));
    }

    // Narayanan et al. 2021 (1F1B: stage i holds p - i), GPipe (all m), and Megatron-LM's
    // interleaved warm-up, which Korthikanti et al. 2022 (section 4.2.3) sum up as the first
    // stage holding p (1 + (p - 1) / (p v)) micro-batches.
    void inFlightMicroBatchesFollowTheSchedule()
    {
        ParallelismConfig p;
        p.pipeline_parallel = 4;
        for (std::int64_t i = 0; i < 4; ++i)
            QCOMPARE(pipelineInFlight(p, 8, i), static_cast<double>(4 - i));
        QCOMPARE(pipelineInFlight(p, 2, 0), 2.0); // no more than the step has
        p.pipeline_schedule = PipelineSchedule::GPipe;
        QCOMPARE(pipelineInFlight(p, 8, 3), 8.0);
        p.pipeline_schedule = PipelineSchedule::Interleaved1F1B;
        p.pipeline_virtual_stages = 2;
        QCOMPARE(pipelineInFlight(p, 8, 0), 4 * (1 + 3.0 / 8));
        QCOMPARE(pipelineBubbleFraction(p, 8), 3.0 / 16);
        p.pipeline_schedule = PipelineSchedule::OneFOneB;
        QCOMPARE(pipelineBubbleFraction(p, 8), 3.0 / 8);
        p.pipeline_parallel = 1;
        QCOMPARE(pipelineInFlight(p, 8, 0), 1.0);
        QCOMPARE(pipelineBubbleFraction(p, 8), 0.0);
    }

    // zero_grad(set_to_none=True) leaves no gradients before a step's first backward: a stage
    // holds them while it runs forward only when a forward follows one of its backwards.
    void gradientsExistInForwardOnlyAfterABackward()
    {
        ParallelismConfig p;
        p.pipeline_parallel = 4;
        QVERIFY(pipelineGradientsInForward(p, 8, 0));  // F F F F B F ...
        QVERIFY(!pipelineGradientsInForward(p, 4, 0)); // F F F F B B B B
        QVERIFY(pipelineGradientsInForward(p, 2, 3));  // F B F B
        QVERIFY(!pipelineGradientsInForward(p, 1, 3));
        p.pipeline_schedule = PipelineSchedule::GPipe;
        QVERIFY(!pipelineGradientsInForward(p, 8, 3));
        // GPipe's last stage: no gradients while its 8 micro-batches are held, so its forward
        // peak has none (the CPU harness measures the same, tools/measure/compare_pipeline.py).
        const MemoryEstimate gpipe = estimateMemory(stage(input(4, 8, PipelineSchedule::GPipe), 3));
        QCOMPARE(at(gpipe, Phase::Forward, Component::Gradients), Bytes(0));
        QVERIFY(at(gpipe, Phase::OptimizerStep, Component::Gradients) > 0);
        const MemoryEstimate oneF = estimateMemory(
            stage(input(4, 8, PipelineSchedule::OneFOneB), 3));
        QCOMPARE(at(oneF, Phase::Forward, Component::Gradients),
                 at(oneF, Phase::OptimizerStep, Component::Gradients));
    }

    // The stages' parameters add up to the model's; a tied model's last stage keeps its own copy
    // of the embedding as lm_head.
    void stagesHoldTheModelOnce()
    {
        for (const bool tied : {false, true}) {
            EstimateInput in = input(4, 8, PipelineSchedule::OneFOneB);
            in.arch = tied ? llama32_1b() : llama3_8b();
            const ParameterLayout whole = parameterLayout(in.arch);
            double sum = 0;
            for (std::int64_t i = 0; i < 4; ++i)
                sum += parameterLayout(pipelineStageInput(in, i).arch).total;
            const double embedding = static_cast<double>(in.arch.vocab_size)
                                     * static_cast<double>(in.arch.hidden_size);
            QCOMPARE(sum, whole.total + (tied ? embedding : 0.0));
        }
        const EstimateInput in = input(4, 8, PipelineSchedule::OneFOneB);
        const MemoryEstimate whole = estimateMemory(stage(in, 0));
        QCOMPARE(whole.parameters, std::int64_t(8'030'261'248)); // the model's, not the stage's
    }

    // Only the last stage computes the loss; a middle stage holds its layers and nothing else.
    void theLastStageHoldsTheLoss()
    {
        const EstimateInput in = input(4, 8, PipelineSchedule::OneFOneB);
        const MemoryEstimate first = estimateMemory(stage(in, 0));
        const MemoryEstimate middle = estimateMemory(stage(in, 1));
        const MemoryEstimate last = estimateMemory(stage(in, 3));
        for (Phase p : {Phase::Forward, Phase::Backward}) {
            QCOMPARE(at(first, p, Component::Logits), Bytes(0));
            QCOMPARE(at(middle, p, Component::Logits), Bytes(0));
        }
        QVERIFY(at(last, Phase::Backward, Component::Logits) > Bytes(1) << 30);
        const double layer = parameterLayout(in.arch).per_layer;
        QCOMPARE(middle.derivation.params_per_gpu, 8 * layer);
        QVERIFY(first.derivation.params_per_gpu > middle.derivation.params_per_gpu);
        QCOMPARE(first.derivation.stage_layers, std::int64_t(8));
        QCOMPARE(last.derivation.pipeline_stage, std::int64_t(3));
    }

    // With p micro-batches in flight the first stage saves p times one micro-batch's activations:
    // for 1F1B about the whole model's for one micro-batch (Korthikanti et al. 2022, 4.2.3).
    void theFirstStageKeepsEveryMicroBatchInFlight()
    {
        const MemoryEstimate one = estimateMemory(stage(input(4, 1, PipelineSchedule::OneFOneB), 0));
        const MemoryEstimate four = estimateMemory(
            stage(input(4, 8, PipelineSchedule::OneFOneB), 0));
        QCOMPARE(one.derivation.pipeline_in_flight, 1.0);
        QCOMPARE(four.derivation.pipeline_in_flight, 4.0);
        const double ratio = four.derivation.saved_activation_bytes
                             / one.derivation.saved_activation_bytes;
        QVERIFY2(std::abs(ratio - 4) < 1e-9, QByteArray::number(ratio));
        // Against one GPU running all 32 layers: the layers' activations agree within 1%.
        EstimateInput single = input(1, 8, PipelineSchedule::OneFOneB);
        const MemoryEstimate all = estimateMemory(single);
        const double layers = all.derivation.saved_activation_bytes;
        QVERIFY2(std::abs(four.derivation.saved_activation_bytes / layers - 1) < 0.01,
                 QByteArray::number(four.derivation.saved_activation_bytes / layers));
        // They are gone before the optimizer step.
        QCOMPARE(at(four, Phase::OptimizerStep, Component::Activations), Bytes(0));
    }

    // Megatron-LM's interleaved order, 4 stages of 2 chunks, 8 micro-batches: the first stage's
    // 11 warm-up passes (7 + 4 or 8 + 3 of each chunk at its peaks), the last stage's 5 (at most
    // one pass of its last chunk, the one with the loss, with 4 of the first).
    void interleavedStagesHoldChunkPasses()
    {
        EstimateInput in = input(4, 8, PipelineSchedule::Interleaved1F1B);
        in.parallelism.pipeline_virtual_stages = 2;
        using Held = std::vector<std::int64_t>;
        const auto peak = [&](std::int64_t index, double first, double second, std::int64_t m = 8) {
            return interleavedPeakPasses(in.parallelism, m, index, {first, second});
        };
        QCOMPARE(peak(0, 1, 1.01), (Held{7, 4}));
        QCOMPARE(peak(0, 1.01, 1), (Held{8, 3}));
        for (std::int64_t i = 0; i < 4; ++i) {
            const Held h = peak(i, 1, 1);
            QCOMPARE(h[0] + h[1], 2 * (3 - i) + 4 + 1);
        }
        QCOMPARE(peak(3, 0, 1)[1], std::int64_t(1)); // the last chunk: one pass at a time
        QCOMPARE(peak(3, 1, 0)[0], std::int64_t(5));
        QCOMPARE(peak(3, 1, 10), (Held{4, 1}));
        // The steady state repeats every p v passes: a million micro-batches hold what 80 do,
        // worked out as fast.
        for (std::int64_t i = 0; i < 4; ++i)
            QCOMPARE(peak(i, 1, 1.5, 1'000'000), peak(i, 1, 1.5, 80));
        in.parallelism.pipeline_virtual_stages = 1024; // a long warm-up: counted, not run
        QVERIFY(
            interleavedPeakPasses(in.parallelism, 1'000'000, 0, std::vector<double>(1024, 1)).size()
            == 1024);
        in.parallelism.pipeline_virtual_stages = 2;
        // So the last stage holds one loss's logits, not 2.5 micro-batches' worth.
        const MemoryEstimate last = estimateMemory(stage(in, 3));
        QCOMPARE(last.derivation.pipeline_in_flight, 2.5);
        const MemoryEstimate oneFOneB = estimateMemory(
            stage(input(4, 8, PipelineSchedule::OneFOneB), 3));
        const Bytes logits = at(oneFOneB, Phase::Forward, Component::Logits);
        QVERIFY(logits > Bytes(1) << 30);
        const Bytes extra = last.peak_allocated - oneFOneB.peak_allocated;
        const Bytes layerActs = at(oneFOneB, Phase::Forward, Component::Activations);
        QVERIFY2(extra < Bytes(1.6 * static_cast<double>(layerActs)), QByteArray::number(extra));
        QVERIFY(extra > Bytes(1.4 * static_cast<double>(layerActs)));
    }

    // pipelineStagePeaks builds every stage: the first and last agree with their estimates, and
    // with 1F1B's shrinking in-flight count the middle stages allocate less than the first.
    void everyStageHasItsPeak()
    {
        const EstimateInput in = input(4, 8, PipelineSchedule::OneFOneB);
        const std::vector<PipelineStagePeak> peaks = pipelineStagePeaks(in);
        QCOMPARE(peaks.size(), std::size_t(4));
        for (std::int32_t i = 0; i < 4; ++i) {
            QCOMPARE(peaks[static_cast<std::size_t>(i)].stage, std::int64_t(i));
            QCOMPARE(peaks[static_cast<std::size_t>(i)].peak_allocated,
                     estimateMemory(stage(in, i)).peak_allocated);
            QCOMPARE(peaks[static_cast<std::size_t>(i)].in_flight, static_cast<double>(4 - i));
        }
        QVERIFY(peaks[1].peak_allocated < peaks[0].peak_allocated);
        QVERIFY(peaks[2].peak_allocated < peaks[1].peak_allocated);
        QVERIFY(pipelineStagePeaks(input(1, 8, PipelineSchedule::OneFOneB)).empty());
    }

    // Left open, the estimate is of the stage that allocates the most.
    void theEstimateIsTheWorstStage()
    {
        for (const PipelineSchedule s : {PipelineSchedule::OneFOneB, PipelineSchedule::GPipe}) {
            const EstimateInput in = input(4, 8, s);
            const MemoryEstimate worst = estimateMemory(in);
            const Bytes first = estimateMemory(stage(in, 0)).peak_allocated;
            const Bytes last = estimateMemory(stage(in, 3)).peak_allocated;
            QCOMPARE(worst.peak_allocated, std::max(first, last));
            QCOMPARE(StepModel(in).input().pipeline_stage,
                     static_cast<std::int32_t>(first >= last ? 0 : 3));
        }
        // 1F1B's first stage holds 4 micro-batches, GPipe's last stage all 8 and the loss.
        QCOMPARE(estimateMemory(input(4, 8, PipelineSchedule::OneFOneB)).derivation.pipeline_stage,
                 std::int64_t(0));
        QCOMPARE(estimateMemory(input(4, 8, PipelineSchedule::GPipe)).derivation.pipeline_stage,
                 std::int64_t(3));
    }

    // Layers per stage set by hand (Megatron-LM's first/last-stage counts): each stage takes its
    // own, the estimate is of whichever stage allocates the most and the step goes at the pace
    // of the slowest.
    void aSplitSetByHand()
    {
        EstimateInput in = input(4, 8, PipelineSchedule::OneFOneB);
        in.parallelism.pipeline_layers = {7, 9, 9, 7};
        std::string key;
        QVERIFY(validateInput(in, &key).empty());
        for (std::int32_t i = 0; i < 4; ++i) {
            const std::int64_t want = in.parallelism.pipeline_layers[static_cast<std::size_t>(i)];
            QCOMPARE(pipelineStageLayers(in, i), want);
            QCOMPARE(estimateMemory(stage(in, i)).derivation.stage_layers, want);
        }
        // The first stage loses two layers' activations of four micro-batches, and some weights.
        QVERIFY(estimateMemory(stage(in, 0)).peak_allocated
                < estimateMemory(stage(input(4, 8, PipelineSchedule::OneFOneB), 0)).peak_allocated);
        // Most layers on the second stage: it holds 3 micro-batches of 26 layers, more than the
        // first's 4 of 2, so the estimate is of a middle stage, which neither end would show.
        in.parallelism.pipeline_layers = {2, 26, 2, 2};
        const std::vector<PipelineStagePeak> peaks = pipelineStagePeaks(in);
        const auto most = std::max_element(peaks.begin(), peaks.end(), [](auto &a, auto &b) {
            return a.peak_allocated < b.peak_allocated;
        });
        QCOMPARE(most->stage, std::int64_t(1));
        const MemoryEstimate worst = estimateMemory(in);
        QCOMPARE(worst.derivation.pipeline_stage, std::int64_t(1));
        QCOMPARE(worst.peak_allocated, most->peak_allocated);
        // ... and the step waits for it.
        const GpuPerformance &h100 = bundledGpu("h100-80gb");
        const double even
            = estimateThroughput(input(4, 8, PipelineSchedule::OneFOneB), h100).step_seconds;
        QVERIFY(estimateThroughput(in, h100).step_seconds > 2.5 * even);

        // One count per stage, a layer per chunk at least, the model's layers in all.
        in.parallelism.pipeline_layers = {8, 8, 16};
        QVERIFY(validateInput(in, &key).find("one count per stage") != std::string::npos);
        QCOMPARE(key, std::string("parallelism.pipeline_layers"));
        in.parallelism.pipeline_layers = {8, 8, 8, 9};
        QVERIFY(validateInput(in, &key).find("adds up to 33") != std::string::npos);
        QCOMPARE(key, std::string("parallelism.pipeline_layers"));
        in = input(4, 8, PipelineSchedule::Interleaved1F1B);
        in.parallelism.pipeline_layers = {1, 11, 10, 10};
        QVERIFY(validateInput(in, &key).find("stage 1 has 1 layers") != std::string::npos);
        in.parallelism.pipeline_layers = {6, 10, 10, 6};
        QVERIFY(validateInput(in, &key).empty());
        QCOMPARE(estimateMemory(in).derivation.stage_layers,
                 in.parallelism.pipeline_layers[static_cast<std::size_t>(
                     estimateMemory(in).derivation.pipeline_stage)]);
    }

    // torch.distributed.pipelining keeps a receive buffer per micro-batch and direction for each
    // stage object: none for activations on the pipeline's first, none for gradients on its last.
    void torchPipeliningKeepsReceiveBuffers()
    {
        EstimateInput in = input(4, 8, PipelineSchedule::OneFOneB);
        for (std::int32_t i = 0; i < 4; ++i)
            QCOMPARE(pipelineReceiveBufferCount(stage(in, i), 8), std::int64_t(0)); // plain torch
        in.training.stack.name = Stack::Torchtitan;
        const std::int64_t oneF1B[] = {8, 16, 16, 8};
        for (std::int32_t i = 0; i < 4; ++i)
            QCOMPARE(pipelineReceiveBufferCount(stage(in, i), 8), oneF1B[i]);
        in.parallelism.pipeline_schedule = PipelineSchedule::Interleaved1F1B; // 2 stage objects
        const std::int64_t looped[] = {24, 32, 32, 24};
        for (std::int32_t i = 0; i < 4; ++i)
            QCOMPARE(pipelineReceiveBufferCount(stage(in, i), 8), looped[i]);

        // In the stage's timeline: that many buffers of b x s x h in the stream's dtype, live
        // from before the first forward to after the optimizer step.
        const StepModel model(stage(in, 1));
        const StepTimeline &tl = model.timeline();
        const auto buffers = std::find_if(tl.tensors.begin(), tl.tensors.end(), [](auto &t) {
            return std::string(t.name).find("pipeline receive buffers") != std::string::npos;
        });
        QVERIFY(buffers != tl.tensors.end());
        QCOMPARE(buffers->copies, 32.0);
        QCOMPARE(buffers->size.at(4096, 4096), 4096.0 * 4096 * 2); // bf16 hidden states
        const auto id = static_cast<std::int32_t>(buffers - tl.tensors.begin());
        const auto has = [&](const TimelineBlock &b, bool alloc) {
            return std::any_of(b.events.begin(), b.events.end(), [&](const TimelineEvent &e) {
                return e.tensor == id && e.alloc == alloc;
            });
        };
        const auto made = std::find_if(tl.blocks.begin(), tl.blocks.end(), [&](auto &b) {
            return has(b, true);
        });
        QVERIFY(made != tl.blocks.end() && made->phase == Phase::Forward);
        QVERIFY(has(tl.blocks.back(), false));
        QCOMPARE(tl.blocks.back().phase, Phase::OptimizerStep);

        // A million micro-batches: the same bytes in at most 4,096 allocations, and the replay
        // stays quick (each piece is an allocator event; tst_monkey_input timed out on this).
        in.training.gradient_accumulation_steps = 1'000'000;
        const StepModel many(stage(in, 1));
        const auto it = std::find_if(many.timeline().tensors.begin(),
                                     many.timeline().tensors.end(),
                                     [](auto &t) {
                                         return std::string(t.name).find("receive buffers")
                                                != std::string::npos;
                                     });
        QVERIFY(it != many.timeline().tensors.end());
        QCOMPARE(it->copies, 4096.0);
        QCOMPARE(it->size.at(4096, 4096) * it->copies, 4'000'000.0 * 4096 * 4096 * 2);
        const auto in_flight = std::find_if(many.timeline().tensors.begin(),
                                            many.timeline().tensors.end(),
                                            [](auto &t) {
                                                return std::string(t.name).find("in flight")
                                                       != std::string::npos;
                                            });
        QVERIFY(in_flight != many.timeline().tensors.end() && in_flight->copies <= 4096);
        QVERIFY(many.estimate().peak_reserved >= many.estimate().peak_allocated);
    }

    // torch.distributed.pipelining runs a stage's forward on its receive buffer itself: where the
    // stage keeps its input for backward (under full checkpointing), each micro-batch in flight
    // holds its input in a buffer already counted, not in a copy of it. Against the same settings
    // under plain torch (Megatron-style: a new tensor per transfer, no buffers), stage 2 of 4 (3
    // micro-batches in flight under 1F1B, 16 buffers) holds 16 - 3 buffers more at its backward
    // peak; where the input is not kept (bf16 without checkpointing: the norm saves its fp32
    // copy), all 16.
    void torchPipeliningRunsOnItsReceiveBuffers()
    {
        const auto extra = [](Checkpointing checkpointing) {
            EstimateInput titan = stage(input(4, 8, PipelineSchedule::OneFOneB), 1);
            titan.training.checkpointing = checkpointing;
            titan.training.stack = {Stack::Torchtitan, "", "2.10"}; // keeps no outputs
            EstimateInput plain = titan;
            plain.training.stack = {Stack::PlainTorch, "", ""};
            const MemoryEstimate a = StepModel(titan).allocatedEstimate();
            const MemoryEstimate b = StepModel(plain).allocatedEstimate();
            return static_cast<double>(a.phase(Phase::Backward).allocated()
                                       - b.phase(Phase::Backward).allocated());
        };
        const double buffer = 4096.0 * 4096 * 2; // b x s x h in bf16
        QCOMPARE(extra(Checkpointing::Full), (16 - 3) * buffer);
        QCOMPARE(extra(Checkpointing::None), 16 * buffer);
    }

    // torch.distributed.pipelining keeps stage outputs (output_chunks) and the received inputs'
    // gradients until the next step, by release; the newest releases (and a scenario that names
    // none) keep neither.
    void torchPipeliningKeepsOutputsByRelease()
    {
        EstimateInput in = input(4, 8, PipelineSchedule::OneFOneB);
        in.training.stack.name = Stack::Torchtitan;
        const SizeExpr boundary = SizeExpr::constant(1000), logits = SizeExpr::constant(30000);
        const auto kept = [&](const char *torch, std::int32_t index) {
            EstimateInput s = stage(in, index);
            s.training.stack.torch = torch;
            const PipelineKeptTensors k = pipelineKeptTensors(s, 8, boundary, logits);
            return std::make_pair(k.outputs.at(1, 1), k.input_grads.at(1, 1));
        };
        using Pair = std::pair<double, double>;
        // Before 2.8: every stage's 8 outputs (the last stage's are the logits); the gradients
        // of every received input (not on the first stage, which receives none).
        QCOMPARE(kept("2.7", 0), Pair(8000, 0));
        QCOMPARE(kept("2.7", 1), Pair(8000, 8000));
        QCOMPARE(kept("2.7", 3), Pair(240000, 8000));
        // 2.8 and 2.9: only the last stage's logits.
        QCOMPARE(kept("2.9.1", 1), Pair(0, 8000));
        QCOMPARE(kept("2.8", 3), Pair(240000, 8000));
        // 2.10 (return_outputs=False, the gradients cleared once sent) and no release named.
        QCOMPARE(kept("2.10", 3), Pair(0, 0));
        // The last stage's step() also returns the logits merged: one more copy, before 2.10.
        const auto merged = [&](const char *torch, std::int32_t index) {
            EstimateInput s = stage(in, index);
            s.training.stack.torch = torch;
            return pipelineKeptTensors(s, 8, boundary, logits).merged.at(1, 1);
        };
        QCOMPARE(merged("2.7", 3), 240000.0);
        QCOMPARE(merged("2.9", 3), 240000.0);
        QCOMPARE(merged("2.7", 1), 0.0);
        QCOMPARE(merged("2.10", 3), 0.0);
        QCOMPARE(kept("", 3), Pair(0, 0));
        in.parallelism.pipeline_schedule = PipelineSchedule::Interleaved1F1B; // 2 stage objects
        QCOMPARE(kept("2.7", 0), Pair(16000, 8000));
        QCOMPARE(kept("2.7", 3), Pair(248000, 16000));
        in.training.stack.name = Stack::PlainTorch; // Megatron-style: its own buffers
        QCOMPARE(kept("2.7", 3), Pair(0, 0));

        // In the estimate: the last stage of Llama-3-8B (128k vocabulary, fp32 logits of 4k
        // tokens: 2 GiB a micro-batch) holds more the older the release, until the step's end.
        in = input(4, 8, PipelineSchedule::OneFOneB);
        in.training.stack.name = Stack::Torchtitan;
        in.training.precision = Precision::Fp32;
        const auto peak = [&](const char *torch) {
            EstimateInput s = stage(in, 3);
            s.training.stack.torch = torch;
            return StepModel(s).allocatedEstimate();
        };
        const MemoryEstimate newest = peak(""), v29 = peak("2.9"), v27 = peak("2.7");
        QCOMPARE(peak("2.10").peak_allocated, newest.peak_allocated);
        const double gib = 1024.0 * 1024 * 1024;
        const double logitsGiB = 4096.0 * 128256 * 4 / gib; // one micro-batch's fp32 logits
        // The last stage has one micro-batch in flight: seven are done before its last forward,
        // all eight when the step ends, and then merged into a second copy.
        const auto extra = static_cast<double>(v29.peak_allocated - newest.peak_allocated);
        QVERIFY2(extra >= 7 * logitsGiB * gib, qPrintable(QString::number(extra / gib)));
        QVERIFY(extra <= 16.5 * logitsGiB * gib);
        QCOMPARE(v27.peak_allocated, v29.peak_allocated); // the last stage sends no outputs
        // A middle stage kept its sent outputs too before 2.8.
        EstimateInput middle = stage(in, 1);
        middle.training.stack.torch = "2.7";
        const Bytes middle27 = StepModel(middle).allocatedEstimate().peak_allocated;
        middle.training.stack.torch = "2.8";
        QVERIFY(middle27 > StepModel(middle).allocatedEstimate().peak_allocated);
    }

    // The stages are not data parallel: states are sharded over the replicas of one stage.
    void shardingIsWithinAStage()
    {
        EstimateInput in = input(4, 8, PipelineSchedule::OneFOneB);
        in.parallelism.gpus = 8;
        in.parallelism.sharding = Sharding::FsdpFull;
        QCOMPARE(in.parallelism.dataParallel(), std::int64_t(2));
        const MemoryEstimate e = estimateMemory(stage(in, 1));
        QCOMPARE(e.derivation.state_shard, 2.0);
        QCOMPARE(e.derivation.data_parallel, std::int64_t(2));
        // torchtitan keeps a stage's FSDP units gathered between micro-batches.
        in.training.stack.name = Stack::Torchtitan;
        QCOMPARE(pipelineStageInput(in, 1).parallelism.sharding, Sharding::FsdpGradOp);
    }

    // torch.distributed.pipelining runs a stage's backwards with FSDP2's gradient sync off: the
    // gradients stay unsharded, in reduce_dtype, until the stage's last backward reduces them,
    // and the units stay gathered until then.
    void torchPipeliningDefersGradientSync()
    {
        EstimateInput in = input(2, 8, PipelineSchedule::OneFOneB);
        in.parallelism.gpus = 4; // FSDP 2 x PP 2
        in.parallelism.sharding = Sharding::FsdpFull;
        in.training.precision = Precision::AmpBf16; // torchtitan: bf16 params, fp32 reduce
        in.training.checkpointing = Checkpointing::Full;
        in.training.stack.name = Stack::Torchtitan;
        const auto grads = [](const MemoryEstimate &e, Phase p) {
            return static_cast<double>(at(e, p, Component::Gradients));
        };
        const MemoryEstimate titan = StepModel(stage(in, 0)).allocatedEstimate();
        const double fp32 = titan.derivation.trainable_per_gpu * 4; // the stage's, unsharded
        QVERIFY(titan.derivation.grads_live_in_forward);            // 1F1B's steady state
        QVERIFY2(std::abs(grads(titan, Phase::Forward) / fp32 - 1) < 1e-3,
                 qPrintable(QString::number(grads(titan, Phase::Forward) / fp32)));
        QVERIFY(grads(titan, Phase::Backward) >= 0.999 * fp32);
        QVERIFY(std::abs(grads(titan, Phase::OptimizerStep) / (fp32 / 2) - 1) < 1e-3);
        // Each of the stage's 16 layers stays gathered in bf16 to the end of the backward.
        const double gathered = 16 * 218.1e6 * 2;
        const auto temporaries = static_cast<double>(
            at(titan, Phase::Backward, Component::Temporaries));
        QVERIFY2(temporaries > gathered, qPrintable(QString::number(temporaries)));
        // A bf16 reduce_dtype accumulates in bf16.
        EstimateInput bf16 = stage(in, 0);
        bf16.parallelism.fsdp_reduce_dtype = ParamDtype::Bf16;
        const MemoryEstimate half = StepModel(bf16).allocatedEstimate();
        QVERIFY(std::abs(grads(half, Phase::Forward) / (fp32 / 2) - 1) < 1e-3);
        QVERIFY(std::abs(grads(half, Phase::OptimizerStep) / (fp32 / 4) - 1) < 1e-3);
        // Without torch pipelining FSDP reduce-scatters every micro-batch's gradients.
        in.training.stack.name = Stack::PlainTorch;
        in.parallelism.fsdp_param_dtype = ParamDtype::Bf16;
        in.parallelism.fsdp_reduce_dtype = ParamDtype::Fp32;
        const MemoryEstimate plain = StepModel(stage(in, 0)).allocatedEstimate();
        QVERIFY(grads(plain, Phase::Forward) <= 0.501 * fp32);
        QVERIFY(grads(plain, Phase::Backward) <= 0.501 * fp32);
        QVERIFY(static_cast<double>(titan.peak_allocated - plain.peak_allocated) > 0.45 * fp32);
    }

    // The worst stage is looked for among all of them: under torch pipelining with FSDP the
    // second stage of Llama 3.1 405B on PP 8 (torchtitan's 405B benchmark: Float8, PyTorch of
    // December 2024) holds the unsharded gradients of earlier micro-batches and its received
    // inputs' gradients while it holds 7 micro-batches; the first, whose warm-up takes 7 of 8,
    // holds 8 and no gradients yet.
    void theWorstStageMayBeAMiddleOne()
    {
        EstimateInput in = input(8, 8, PipelineSchedule::OneFOneB);
        in.arch = llama(126, 16384, 53248, 128, 8, 128256);
        in.parallelism.gpus = 512;
        in.parallelism.tensor_parallel = 8;
        in.parallelism.sharding = Sharding::FsdpFull;
        in.training.precision = Precision::AmpBf16;
        in.training.micro_batch_size = 4;
        in.training.sequence_length = 8192;
        in.training.checkpointing = Checkpointing::Full;
        in.training.float8 = true;
        in.training.stack = {Stack::Torchtitan, "", "2.6"}; // the benchmark's PyTorch
        const std::vector<PipelineStagePeak> peaks = pipelineStagePeaks(in);
        const auto most = std::max_element(peaks.begin(), peaks.end(), [](auto &a, auto &b) {
            return a.peak_allocated < b.peak_allocated;
        });
        QCOMPARE(most->stage, std::int64_t(1));
        QVERIFY(peaks.front().peak_allocated < most->peak_allocated);
        QCOMPARE(pipelineWorstStage(in), std::int64_t(1));
    }

    void theStepWaitsForTheBubble()
    {
        const GpuPerformance &h100 = bundledGpu("h100-80gb");
        const ThroughputEstimate one = estimateThroughput(input(1, 8, PipelineSchedule::OneFOneB),
                                                          h100);
        const ThroughputEstimate pp = estimateThroughput(input(4, 8, PipelineSchedule::OneFOneB),
                                                         h100);
        QVERIFY(one.valid && pp.valid);
        const ThroughputBreakdown &b = pp.breakdown;
        const double compute = b.matmul + b.attention + b.elementwise + b.dequantize + b.host_wait;
        QCOMPARE(b.pipeline_bubble, compute * 3 / 8);
        // Four GPUs do the work of one in a bit more than a quarter of the time: the bubble, the
        // transfers and lm_head on the last stage.
        QVERIFY(pp.step_seconds > one.step_seconds / 4 * 1.375);
        QVERIFY(pp.step_seconds < one.step_seconds / 2);
        QCOMPARE(pp.tokens_per_step, one.tokens_per_step);
        QVERIFY(std::abs(pp.model_flops_per_step / one.model_flops_per_step - 1) < 1e-9);
        // More micro-batches per step shrink the bubble's share.
        const ThroughputEstimate longer
            = estimateThroughput(input(4, 32, PipelineSchedule::OneFOneB), h100);
        QVERIFY(longer.mfu > pp.mfu);
    }

    // Make It Fit offers 1F1B for a GPipe pipeline that does not fit, and no sharding over the
    // stages of a pipeline without data parallelism.
    void makeItFitOffersOneFOneB()
    {
        const EstimateInput in = input(4, 8, PipelineSchedule::GPipe);
        const GpuSpec gpu = *PresetCatalog::bundled().findGpu("h100-80gb");
        QVERIFY(estimateMemory(in).device_total > gpu.memory_bytes);
        bool offered = false, sharded = false;
        for (const FitSuggestion &f : suggestFits(in, gpu, 20))
            for (const std::string &c : f.changes) {
                if (c.rfind("pipeline schedule: 1f1b", 0) == 0 && f.changes.size() == 1) {
                    offered = true;
                    QVERIFY(f.input.parallelism.pipeline_schedule == PipelineSchedule::OneFOneB);
                    QVERIFY(f.device_total < gpu.memory_bytes);
                }
                sharded = sharded || c.rfind("sharding", 0) == 0;
            }
        QVERIFY(offered);
        QVERIFY(!sharded);
    }

    void whatCannotRunIsRefused()
    {
        std::string key;
        EstimateInput in = input(4, 8, PipelineSchedule::OneFOneB);
        QVERIFY(validateInput(in, &key).empty());
        in.parallelism.gpus = 6;
        QVERIFY(!validateInput(in, &key).empty());
        QCOMPARE(key, std::string("parallelism.pipeline_parallel"));
        in = input(4, 8, PipelineSchedule::OneFOneB);
        in.arch.layers = 3;
        QVERIFY(validateInput(in, &key).find("at least 4") != std::string::npos);
        in = input(4, 6, PipelineSchedule::Interleaved1F1B);
        QVERIFY(!validateInput(in, &key).empty());
        QCOMPARE(key, std::string("training.gradient_accumulation_steps"));
        in = input(4, 8, PipelineSchedule::OneFOneB);
        in.parallelism.gpus = 8;
        in.parallelism.sharding = Sharding::Zero3;
        QVERIFY(!validateInput(in, &key).empty());
        QCOMPARE(key, std::string("parallelism.sharding"));
        in = input(4, 8, PipelineSchedule::OneFOneB);
        in.training.mode = Mode::Inference;
        QVERIFY(validateInput(in, &key).find("training") != std::string::npos);
    }

    void scenarioKeys()
    {
        const std::string text = "format: membudget/1\n"
                                 "model: {preset: llama-3.1-8b}\n"
                                 "training: {method: full, precision: bf16,\n"
                                 "           gradient_accumulation_steps: 8}\n"
                                 "parallelism: {gpus: 8, pipeline_parallel: 4,\n"
                                 "              pipeline_schedule: interleaved-1f1b,\n"
                                 "              pipeline_virtual_stages: 4}\n"
                                 "gpus: [h100-80gb]\n";
        LoadError error;
        const std::optional<Scenario> s = parseScenario(text, "pp.yaml", error);
        QVERIFY2(s.has_value(), error.toString().c_str());
        QCOMPARE(s->parallelism.pipeline_parallel, std::int64_t(4));
        QCOMPARE(s->parallelism.pipeline_schedule, PipelineSchedule::Interleaved1F1B);
        QCOMPARE(s->parallelism.pipeline_virtual_stages, std::int64_t(4));
        QCOMPARE(s->parallelism.dataParallel(), std::int64_t(2));
        const std::string yaml = scenarioToYaml(*s);
        QVERIFY(yaml.find("pipeline_schedule: interleaved-1f1b") != std::string::npos);
        QCOMPARE(*parseScenario(yaml, "again.yaml", error), *s);

        // Settings a single stage leaves unused are kept (the app may set them before the stages).
        Scenario single = *s;
        single.parallelism.pipeline_parallel = 1;
        single.parallelism.pipeline_schedule = PipelineSchedule::GPipe;
        QCOMPARE(*parseScenario(scenarioToYaml(single), "single.yaml", error), single);

        // A split by hand: kept as written, refused where it is not a list of whole counts.
        std::string hand = text;
        hand.replace(hand.find("pipeline_virtual_stages: 4}"),
                     27,
                     "pipeline_virtual_stages: 4,\n              pipeline_layers: [7, 9, 9, 7]}");
        const std::optional<Scenario> split = parseScenario(hand, "hand.yaml", error);
        QVERIFY2(split.has_value(), error.toString().c_str());
        QCOMPARE(split->parallelism.pipeline_layers, (std::vector<std::int64_t>{7, 9, 9, 7}));
        QVERIFY(scenarioToYaml(*split).find("pipeline_layers: [7, 9, 9, 7]") != std::string::npos);
        QCOMPARE(*parseScenario(scenarioToYaml(*split), "again.yaml", error), *split);
        for (const char *wrong : {"[7, 9, nine, 7]", "[7, 9, 0, 7]", "7", "[]"}) {
            std::string bad = hand;
            bad.replace(bad.find("[7, 9, 9, 7]"), 12, wrong);
            QVERIFY2(!parseScenario(bad, "bad.yaml", error).has_value(), wrong);
            QCOMPARE(error.line, 8);
            QVERIFY2(error.message.find("pipeline_layers") != std::string::npos,
                     error.message.c_str());
        }

        std::string bad = text;
        bad.replace(bad.find("interleaved-1f1b"), 16, "zero-bubble");
        QVERIFY(!parseScenario(bad, "bad.yaml", error).has_value());
        QCOMPARE(error.line, 6);
        QVERIFY(error.message.find("gpipe") != std::string::npos);
        bad = text;
        bad.replace(bad.find("gpus: 8"), 7, "gpus: 6");
        QVERIFY(!parseScenario(bad, "bad.yaml", error).has_value());
        QCOMPARE(error.line, 5);
        QVERIFY(error.message.find("pipeline_parallel") != std::string::npos);
    }
};

QTEST_APPLESS_MAIN(TestPipelineParallel)
#include "tst_pipeline_parallel.moc"
