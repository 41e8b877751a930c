// SPDX-License-Identifier: GPL-3.0-or-later
// The step timeline: every allocation is freed once, the phase peaks computed block by block equal
// those of the fully expanded event list, and a step ends with exactly what it started with.
#include "model/stack_profile.h"
#include "model/step_model.h"
#include "model/timeline_expand.h"
#include "model/timeline_live.h"
#include "model/timeline_peaks.h"
#include "test_architectures.h"

#include <QtTest>

#include <map>
#include <set>

using namespace membudget;
using namespace membudget::testing;

namespace {

struct Replayed
{
    std::array<double, kPhaseCount> peak{};
    double residentAtStart = 0, residentGradients = 0; // after the Resident blocks
    double liveAtEnd = 0, gradientsAtEnd = 0;
    int badFrees = 0, doubleAllocs = 0;
};

// Replays the expanded event list, checking that every instance is allocated before it is freed,
// and takes each phase's maximum (at the start of each of its blocks and after each event).
Replayed replay(const StepTimeline &tl, double tokens, double seq)
{
    Replayed r;
    std::map<std::int64_t, int> live;
    double running = 0, gradients = 0;
    const std::vector<ExpandedEvent> events = expandTimeline(tl, tokens, seq);
    std::size_t next = 0;
    bool resident = true;
    for (std::size_t bi = 0; bi < tl.blocks.size(); ++bi) {
        const TimelineBlock &b = tl.blocks[bi];
        if (resident && b.stage != Stage::Resident) {
            resident = false;
            r.residentAtStart = running;
            r.residentGradients = gradients;
        }
        double &peak = r.peak[static_cast<std::size_t>(b.phase)];
        peak = std::max(peak, running);
        for (; next < events.size() && events[next].block == static_cast<int>(bi); ++next) {
            const ExpandedEvent &e = events[next];
            int &n = live[e.instance];
            r.doubleAllocs += e.alloc && n > 0;
            r.badFrees += !e.alloc && n <= 0;
            n += e.alloc ? 1 : -1;
            const double v = static_cast<double>(e.bytes) * (e.alloc ? 1 : -1);
            running += v;
            if (tl.tensors[static_cast<std::size_t>(e.tensor)].component == Component::Gradients)
                gradients += v;
            peak = std::max(peak, running);
        }
    }
    r.liveAtEnd = running;
    r.gradientsAtEnd = gradients;
    return r;
}

EstimateInput input(const ModelArchitecture &arch)
{
    EstimateInput in;
    in.arch = arch;
    return in;
}

// At two shapes: no tensor freed that is not live or allocated twice, the step ending with what it
// started with (a training step; inference keeps its KV cache), and the block-by-block phase peaks
// equal to those of the expanded event list.
void verifyBalancedAndExact(const StepModel &model)
{
    const bool training = model.input().training.mode == Mode::Train;
    // The resident optimizer states, laid out tensor by tensor or in equal shares, add up to what
    // the GPU holds of them.
    double states = 0, pieces = 0;
    const StepTimeline &tl = model.timeline();
    for (const ExpandedEvent &e : expandTimeline(tl, 1, 1, 0, residentBlocks(tl)))
        if (e.alloc && std::string(tl.tensors[std::size_t(e.tensor)].name) == "optimizer states") {
            states += double(e.bytes);
            ++pieces;
        }
    QVERIFY2(std::abs(states - model.states().resident_states) <= 1e-9 * states + pieces,
             qPrintable(QString("%1 bytes of states in the timeline, %2 resident")
                            .arg(states)
                            .arg(model.states().resident_states)));
    for (auto [b, s] : {std::pair{1, 7}, std::pair{3, 512}}) {
        const double tokens = double(b) * s;
        const Replayed r = replay(model.timeline(), tokens, s);
        QCOMPARE(r.badFrees, 0);
        QCOMPARE(r.doubleAllocs, 0);
        // A step ends with what it started with, but for gradients that zero_grad frees
        // (those kept by gradient accumulation; ZeRO-2's partition buffer stays).
        const double others = r.liveAtEnd - r.gradientsAtEnd;
        QVERIFY2(!training || std::abs(others - (r.residentAtStart - r.residentGradients)) <= 16,
                 qPrintable(QString("%1 left at the end, %2 resident at the start")
                                .arg(r.liveAtEnd)
                                .arg(r.residentAtStart)));
        QVERIFY(r.gradientsAtEnd == 0 || r.gradientsAtEnd == r.residentGradients);
        const auto peaks = timelinePeaks(model.timeline(), tokens, s);
        for (int p = 0; p < kPhaseCount; ++p) {
            const double expected = r.peak[static_cast<std::size_t>(p)];
            const double got = peaks[static_cast<std::size_t>(p)].allocated;
            QVERIFY2(std::abs(got - expected) <= 1e-6 * expected + 4096,
                     qPrintable(QString("phase %1: %2 block by block, %3 expanded")
                                    .arg(p)
                                    .arg(got)
                                    .arg(expected)));
        }
    }
}

// Llama-2-7B in mixed bf16 (fp32 master weights, as DeepSpeed keeps them) under `sharding` on
// `gpus` GPUs, with `stack` (its defaults applied).
EstimateInput deepSpeedInput(Sharding sharding, std::int64_t gpus, StackConfig stack = {})
{
    EstimateInput in = input(llama2_7b());
    in.training.stack = stack;
    applyStackDefaults(in.training, in.parallelism);
    in.training.precision = Precision::MixedBf16;
    in.parallelism.gpus = gpus;
    in.parallelism.sharding = static_cast<Sharding>(sharding);
    return in;
}

// The choices of a drawn combination, for a failure message.
QString describe(const EstimateInput &in)
{
    const TrainingConfig &t = in.training;
    const ParallelismConfig &p = in.parallelism;
    return QString("hidden %1, stack %2, mode %3, method %4, precision %5, optimizer %6, "
                   "checkpointing %7 every %8, attention %9, loss %10, accumulation %11, "
                   "in-backward %12, activation offload %13, offload optimizer %14 parameters "
                   "%15, tp %16 cp %17 pp %18 stage %19, sharding %20, gpus %21")
        .arg(in.arch.hidden_size)
        .arg(stackName(t.stack.name))
        .arg(int(t.mode))
        .arg(int(t.method))
        .arg(int(t.precision))
        .arg(int(t.optimizer))
        .arg(int(t.checkpointing))
        .arg(t.checkpoint_every)
        .arg(int(t.attention))
        .arg(int(t.loss))
        .arg(t.gradient_accumulation_steps)
        .arg(t.optimizer_in_backward)
        .arg(t.activation_offloading)
        .arg(t.offload.optimizer)
        .arg(t.offload.parameters)
        .arg(p.tensor_parallel)
        .arg(p.context_parallel)
        .arg(p.pipeline_parallel)
        .arg(in.pipeline_stage)
        .arg(int(p.sharding))
        .arg(p.gpus);
}

} // namespace

class TestStepTimeline : public QObject
{
    Q_OBJECT
private slots:
    void balancedAndExact_data()
    {
        QTest::addColumn<int>("arch");
        QTest::addColumn<int>("method");
        QTest::addColumn<int>("precision");
        QTest::addColumn<int>("checkpointing");
        QTest::addColumn<int>("attention");
        QTest::addColumn<int>("sharding");
        QTest::addColumn<int>("accumulation");
        int row = 0;
        for (int arch = 0; arch < 4; ++arch)
            for (int method = 0; method < 3; ++method)
                for (int precision : {0, 1, 3, 5})
                    for (int ckpt = 0; ckpt < 3; ++ckpt)
                        for (int attention : {0, 2}) {
                            const int sharding = row % 6;
                            const int accumulation = row % 5 == 0 ? 4 : 1;
                            QTest::addRow("%d", row++) << arch << method << precision << ckpt
                                                       << attention << sharding << accumulation;
                        }
    }

    void balancedAndExact()
    {
        QFETCH(int, arch);
        QFETCH(int, method);
        QFETCH(int, precision);
        QFETCH(int, checkpointing);
        QFETCH(int, attention);
        QFETCH(int, sharding);
        QFETCH(int, accumulation);
        const ModelArchitecture archs[] = {tinyLlama(), gpt2_small(), mixtral_8x7b(), llama3_8b()};
        EstimateInput in = input(archs[arch]);
        in.arch.layers = std::min<std::int64_t>(in.arch.layers, 4);
        TrainingConfig &t = in.training;
        t.method = static_cast<Method>(method);
        t.quantization = t.method == Method::Qlora ? Quantization::Nf4 : Quantization::None;
        t.precision = static_cast<Precision>(precision);
        t.checkpointing = static_cast<Checkpointing>(checkpointing);
        t.checkpoint_every = 1
                             + (arch + method + precision) % 3; // with full: 1, 2 or 3 of 4 layers
        t.attention = static_cast<Attention>(attention);
        t.gradient_accumulation_steps = accumulation;
        t.lora.dropout = arch % 2 ? 0.1 : 0.0;
        in.parallelism.gpus = sharding == 0 ? 1 : 4;
        in.parallelism.sharding = static_cast<Sharding>(sharding);
        const StepModel model(in);
        QVERIFY(model.valid());
        verifyBalancedAndExact(model);
    }

    // Every stage of a pipeline, with tensor and sequence parallelism, sharded or not, under each
    // schedule and checkpointing: balanced over the step and exact block by block. (torchtitan's
    // full checkpointing of every second layer without sharding failed: zero_grad freed the
    // checkpointed layers' .grad as the plain layers'.)
    void pipelineStagesAreBalanced_data()
    {
        QTest::addColumn<int>("stack");
        QTest::addColumn<int>("schedule");
        QTest::addColumn<int>("stage");
        QTest::addColumn<int>("tp");
        QTest::addColumn<int>("sharding");
        QTest::addColumn<int>("checkpointing");
        for (Stack stack : {Stack::Torchtitan, Stack::PlainTorch})
            for (int schedule = 0; schedule < 3; ++schedule)
                for (int stage = 0; stage < 3; ++stage)
                    for (int tp : {1, 2})
                        for (int sharding : {int(Sharding::None), int(Sharding::FsdpFull)})
                            for (int ckpt = 0; ckpt < 3; ++ckpt)
                                QTest::addRow("%s-%d-%d-%d-%d-%d",
                                              stackName(stack),
                                              schedule,
                                              stage,
                                              tp,
                                              sharding,
                                              ckpt)
                                    << int(stack) << schedule << stage << tp << sharding << ckpt;
    }

    void pipelineStagesAreBalanced()
    {
        QFETCH(int, stack);
        QFETCH(int, schedule);
        QFETCH(int, stage);
        QFETCH(int, tp);
        QFETCH(int, sharding);
        QFETCH(int, checkpointing);
        EstimateInput in = input(llama3_8b());
        in.arch.layers = 6;
        in.training.stack = {static_cast<Stack>(stack), "", ""};
        applyStackDefaults(in.training, in.parallelism);
        in.training.checkpointing = static_cast<Checkpointing>(checkpointing);
        in.training.gradient_accumulation_steps = 6;
        in.parallelism.gpus = 3 * tp * (sharding ? 2 : 1);
        in.parallelism.tensor_parallel = tp;
        in.parallelism.pipeline_parallel = 3;
        in.parallelism.pipeline_schedule = static_cast<PipelineSchedule>(schedule);
        if (in.parallelism.pipeline_schedule == PipelineSchedule::Interleaved1F1B)
            in.parallelism.pipeline_virtual_stages = 2;
        in.parallelism.sharding = static_cast<Sharding>(sharding);
        in.pipeline_stage = stage;
        const StepModel model(in);
        QVERIFY2(model.valid(), validateInput(in).c_str());
        verifyBalancedAndExact(model);
    }

    // Valid combinations drawn over every stack, method, precision, optimizer, checkpointing,
    // attention, loss, sharding, parallelism and offloading choice (a fixed linear congruential
    // sequence, so a failure names its draw): balanced over the step and exact block by block.
    // (It found FSDP2's kept reduce-scatter input applied to DeepSpeed's ZeRO-2 under the
    // torchtitan stack, never released; then FSDP2's root all-gather output under a DeepSpeed
    // ZeRO-3 choice with torchtune.) Ten other seeds passed when it was written; another seed can
    // be tried with MEMBUDGET_DRAW_SEED.
    void drawnCombinationsAreBalanced()
    {
        bool seeded = false;
        const qulonglong seed = qEnvironmentVariable("MEMBUDGET_DRAW_SEED").toULongLong(&seeded);
        std::uint64_t state = seeded ? seed : 20261129;
        const auto pick = [&state](int n) {
            state = state * 6364136223846793005ULL + 1442695040888963407ULL;
            return static_cast<int>((state >> 33) % static_cast<std::uint64_t>(n));
        };
        int valid = 0;
        for (int draw = 0; draw < 1500; ++draw) {
            const ModelArchitecture archs[]
                = {tinyLlama(), gpt2_small(), mixtral_8x7b(), llama3_8b()};
            EstimateInput in = input(archs[pick(4)]);
            in.arch.layers = 4;
            TrainingConfig &t = in.training;
            t.stack = {static_cast<Stack>(pick(7)), "", ""};
            applyStackDefaults(t, in.parallelism);
            t.mode = pick(8) == 0 ? Mode::Inference : Mode::Train;
            t.method = static_cast<Method>(pick(4));
            t.quantization = t.method == Method::Qlora ? Quantization::Nf4 : Quantization::None;
            t.precision = static_cast<Precision>(pick(7));
            t.optimizer = static_cast<Optimizer>(pick(9));
            t.checkpointing = static_cast<Checkpointing>(pick(4));
            t.checkpoint_every = 1 + pick(3);
            t.attention = static_cast<Attention>(pick(3));
            t.loss = static_cast<LossImplementation>(pick(9));
            t.gradient_accumulation_steps = pick(2) ? 1 : 3;
            t.optimizer_in_backward = pick(6) == 0;
            t.activation_offloading = pick(6) == 0;
            t.offload.optimizer = pick(6) == 0;
            t.offload.parameters = pick(8) == 0;
            ParallelismConfig &par = in.parallelism;
            par.tensor_parallel = pick(3) == 0 ? 2 : 1;
            par.context_parallel = pick(5) == 0 ? 2 : 1;
            par.pipeline_parallel = pick(5) == 0 ? 2 : 1;
            par.sharding = static_cast<Sharding>(pick(6));
            par.gpus = par.tensor_parallel * par.context_parallel * par.pipeline_parallel
                       * (par.sharding == Sharding::None && pick(2) ? 1 : 2);
            in.pipeline_stage = par.pipeline_parallel > 1 ? pick(2) : -1;
            if (!validateInput(in).empty())
                continue;
            ++valid;
            const StepModel model(in);
            if (!model.valid())
                continue;
            const Replayed r = replay(model.timeline(), 512, 512);
            if (r.badFrees != 0 || r.doubleAllocs != 0)
                QFAIL(qPrintable(QString("draw %1: %2 frees of nothing, %3 second allocations: %4")
                                     .arg(draw)
                                     .arg(r.badFrees)
                                     .arg(r.doubleAllocs)
                                     .arg(describe(in))));
            verifyBalancedAndExact(model);
            if (QTest::currentTestFailed())
                QFAIL(qPrintable(QString("draw %1: %2").arg(draw).arg(describe(in))));
        }
        QVERIFY(valid > 300);
    }

    // FSDP2's gathers (torchtitan, torchtune): each unit's flat all-gather output on the gather
    // stream and its parameters copied out on the compute stream, balanced over the step and
    // exact block by block.
    void fsdp2GathersAreBalanced_data()
    {
        QTest::addColumn<int>("stack");
        QTest::addColumn<int>("checkpointing");
        QTest::addColumn<int>("accumulation");
        QTest::addColumn<QString>("torch"); // before 2.5: no reduce-scatter state kept
        for (Stack stack : {Stack::Torchtitan, Stack::Torchtune})
            for (int ckpt = 0; ckpt < 3; ++ckpt)
                for (int accumulation : {1, 4})
                    for (const char *torch : {"", "2.4"})
                        QTest::addRow("%s-%d-%d-%s", stackName(stack), ckpt, accumulation, torch)
                            << int(stack) << ckpt << accumulation << QString(torch);
    }

    void fsdp2GathersAreBalanced()
    {
        QFETCH(int, stack);
        QFETCH(int, checkpointing);
        QFETCH(int, accumulation);
        QFETCH(QString, torch);
        EstimateInput in = input(llama3_8b());
        in.arch.layers = 5;
        in.training.stack = {static_cast<Stack>(stack), "", torch.toStdString()};
        applyStackDefaults(in.training, in.parallelism);
        in.training.checkpointing = static_cast<Checkpointing>(checkpointing);
        in.training.checkpoint_every = 1 + (accumulation + checkpointing) % 2; // 2: groups of two
        in.training.gradient_accumulation_steps = accumulation;
        in.parallelism.gpus = 4;
        in.parallelism.sharding = Sharding::FsdpFull;
        const StepModel model(in);
        QVERIFY(model.valid());
        int flat = 0, unsharded = 0;
        for (const TimelineTensor &t : model.timeline().tensors) {
            if (std::string(t.name) == "all-gather output")
                flat = t.stream;
            if (std::string(t.name) == "gathered layer parameters")
                unsharded = 1 + t.stream;
        }
        QVERIFY(flat > 0);
        QCOMPARE(unsharded, 1); // the compute stream
        verifyBalancedAndExact(model);
    }

    // FSDP's root unit (embeddings, final norm, lm_head) reduces once, after the embedding's
    // backward: the head's gradients are held through every layer's backward, one root shard is
    // kept, of the root's gradients over the shards; FSDP1 (plain torch) and FSDP2 (torchtitan).
    void rootUnitReducesOnce_data()
    {
        QTest::addColumn<int>("stack");
        QTest::newRow("fsdp1") << int(Stack::PlainTorch);
        QTest::newRow("fsdp2") << int(Stack::Torchtitan);
    }

    void rootUnitReducesOnce()
    {
        QFETCH(int, stack);
        EstimateInput in = input(llama3_8b());
        in.arch.layers = 4;
        in.training.stack = {static_cast<Stack>(stack), "", ""};
        applyStackDefaults(in.training, in.parallelism);
        in.parallelism.gpus = 4;
        in.parallelism.sharding = Sharding::FsdpFull;
        const StepModel model(in);
        QVERIFY(model.valid());
        const StepTimeline &tl = model.timeline();
        const ModelStates &s = model.states();
        int rootShards = 0;
        for (const TimelineTensor &t : tl.tensors)
            if (std::string(t.name) == "gradient shard" && !t.per_layer) {
                ++rootShards;
                QCOMPARE(t.size.fixed, (s.grads - s.layer_grads) / s.grad_shard);
            }
        QCOMPARE(rootShards, 1);
        // The head's gradients: made before the last layer's backward, freed after the first's.
        int headMade = -1, headFreed = -1, layerZeroGrads = -1;
        const std::vector<ExpandedEvent> events = expandTimeline(tl, 512, 512);
        for (std::size_t i = 0; i < events.size(); ++i) {
            const std::string name = tl.tensors[std::size_t(events[i].tensor)].name;
            if (name == "unsharded gradients (head)")
                (events[i].alloc ? headMade : headFreed) = int(i);
            if (name == "unsharded layer gradients" && events[i].layer == 0 && events[i].alloc)
                layerZeroGrads = int(i);
        }
        QVERIFY(headMade >= 0 && layerZeroGrads > headMade && headFreed > layerZeroGrads);
        verifyBalancedAndExact(model);
    }

    // torch's AdamW makes each parameter's exp_avg and exp_avg_sq when it first steps it, in the
    // order the model registers its parameters (adamw.py, _init_group): the embedding's first,
    // then each layer's, then lm_head's, each of the parameter's own size.
    void statesAreMadeTensorByTensor()
    {
        EstimateInput in = input(llama3_8b());
        in.arch.layers = 2;
        in.training.precision = Precision::Bf16;
        in.training.optimizer = Optimizer::AdamW;
        const StepModel model(in);
        QVERIFY(model.valid());
        const StepTimeline &tl = model.timeline();
        std::vector<std::pair<int, double>> states; // (layer, bytes)
        double total = 0;
        for (const ExpandedEvent &e : expandTimeline(tl, 512, 512, 0, residentBlocks(tl)))
            if (e.alloc
                && std::string(tl.tensors[std::size_t(e.tensor)].name) == "optimizer states") {
                states.emplace_back(e.layer, double(e.bytes));
                total += double(e.bytes);
            }
        const double h = 4096, v = 128256, kv = 1024, ff = 14336;
        QCOMPARE(total, model.states().states);
        QCOMPARE(states.size(), std::size_t(2 + 2 * 2 * 9 + 2 + 2));
        QCOMPARE(states[0].second, v * h * 2);                 // exp_avg of the embedding
        QCOMPARE(states[1].second, v * h * 2);                 // its exp_avg_sq
        QCOMPARE(states[states.size() - 2].second, v * h * 2); // lm_head's, last
        for (int layer = 0; layer < 2; ++layer) {
            std::multiset<double> sizes, expected;
            for (const auto &[l, bytes] : states)
                if (l == layer)
                    sizes.insert(bytes);
            for (const double elements :
                 {h * h, h * kv, h * kv, h * h, h * ff, h * ff, h * ff, h, h})
                expected.insert({elements * 2, elements * 2});
            QCOMPARE(sizes, expected);
        }
        // 8-bit states (block-wise, with their scales) stay one equal share per tensor.
        in.training.optimizer = Optimizer::AdamW8bit;
        const StepModel eightBit(in);
        std::set<double> shares;
        for (const ExpandedEvent &e : expandTimeline(eightBit.timeline(), 512, 512, 0, 1))
            if (std::string(eightBit.timeline().tensors[std::size_t(e.tensor)].name)
                == "optimizer states")
                shares.insert(double(e.bytes));
        QCOMPARE(shares.size(), std::size_t(1));
    }

    // From torch 2.5 FSDP2 keeps a unit's reduce-scatter input until the next unit's
    // post-backward: layer 2's input is live while layer 1's gradients are made; before, not.
    void fsdp2KeepsTheReduceScatterState_data()
    {
        QTest::addColumn<QString>("torch");
        QTest::addColumn<bool>("kept");
        QTest::newRow("2.6") << "2.6" << true;
        QTest::newRow("2.4") << "2.4" << false;
    }

    void fsdp2KeepsTheReduceScatterState()
    {
        QFETCH(QString, torch);
        QFETCH(bool, kept);
        EstimateInput in = input(llama3_8b());
        in.arch.layers = 4;
        in.training.stack = {Stack::Torchtitan, "", torch.toStdString()};
        applyStackDefaults(in.training, in.parallelism);
        in.parallelism.gpus = 4;
        in.parallelism.sharding = Sharding::FsdpFull;
        const StepModel model(in);
        const StepTimeline &tl = model.timeline();
        int inputFreed = -1, gradsMade = -1;
        const std::vector<ExpandedEvent> events = expandTimeline(tl, 512, 512);
        for (std::size_t i = 0; i < events.size(); ++i) {
            const ExpandedEvent &e = events[i];
            const std::string name = tl.tensors[std::size_t(e.tensor)].name;
            if (name == "reduce-scatter input" && e.layer == 2 && !e.alloc)
                inputFreed = int(i);
            if (name == "unsharded layer gradients" && e.layer == 1 && e.alloc)
                gradsMade = int(i);
        }
        QVERIFY(inputFreed >= 0 && gradsMade >= 0);
        QCOMPARE(inputFreed > gradsMade, kept);
        verifyBalancedAndExact(model);
    }

    // DTensor's sequence-dimension collectives reorder through a whole-sequence copy
    // (_functional_collectives.py): in forward the all-gather's rank-major buffer is live when its
    // result is made, the reduce-scatter's copy when its shard is; without sequence parallelism
    // neither exists.
    void sequenceParallelCollectivesCopy_data()
    {
        QTest::addColumn<bool>("sequenceParallel");
        QTest::newRow("sequence parallel") << true;
        QTest::newRow("tensor parallel only") << false;
    }

    void sequenceParallelCollectivesCopy()
    {
        QFETCH(bool, sequenceParallel);
        EstimateInput in = input(llama3_8b());
        in.arch.layers = 3;
        in.training.stack = {Stack::Torchtitan, "", ""};
        applyStackDefaults(in.training, in.parallelism);
        in.parallelism.gpus = 2;
        in.parallelism.tensor_parallel = 2;
        in.parallelism.sequence_parallel = sequenceParallel;
        const StepModel model(in);
        QVERIFY(model.valid());
        const StepTimeline &tl = model.timeline();
        const double whole = 512.0 * 4096 * 2; // one sequence of 512 tokens, bf16
        std::map<std::string, std::int64_t> live;
        int gathers = 0, scatters = 0, copies = 0;
        for (const ExpandedEvent &e : expandTimeline(tl, 512, 512)) {
            const std::string name = tl.tensors[std::size_t(e.tensor)].name;
            live[name] += e.alloc ? e.bytes : -e.bytes;
            if (e.layer != 1 || !e.alloc || tl.blocks[std::size_t(e.block)].stage != Stage::Forward)
                continue;
            copies += name.find("rank-major") != std::string::npos;
            if (name == "sequence-parallel all-gather") {
                ++gathers;
                QCOMPARE(double(e.bytes), whole);
                QCOMPARE(double(live["all-gather into a rank-major buffer"]), whole);
            }
            if (name == "sequence-parallel reduce-scatter") {
                ++scatters;
                QCOMPARE(double(e.bytes), whole / 2);
                QCOMPARE(double(live["rank-major copy for reduce-scatter"]), whole);
            }
        }
        QCOMPARE(gathers, sequenceParallel ? 2 : 0);
        QCOMPARE(scatters, sequenceParallel ? 2 : 0);
        QCOMPARE(copies, sequenceParallel ? 4 : 0);
        verifyBalancedAndExact(model);
    }

    // transformers' "colwise_rep" lm_head gathers its output through a rank-major buffer (live
    // when the whole logits are made); its backward takes a chunk of the gradient, so the buffer
    // gets none.
    void gatheredLogitsCopyOnce()
    {
        EstimateInput in = input(llama3_8b());
        in.arch.layers = 2;
        in.training.stack = {Stack::HfTrainer, "", ""};
        applyStackDefaults(in.training, in.parallelism);
        in.parallelism.gpus = 2;
        in.parallelism.tensor_parallel = 2;
        const StepModel model(in);
        QVERIFY(model.valid());
        const StepTimeline &tl = model.timeline();
        const double whole = 512.0 * 128256 * 2; // bf16 logits of 512 tokens
        std::map<std::string, std::int64_t> live;
        int gathers = 0;
        for (const ExpandedEvent &e : expandTimeline(tl, 512, 512)) {
            const std::string name = tl.tensors[std::size_t(e.tensor)].name;
            QVERIFY(name != "gradient of all-gather into a rank-major buffer");
            live[name] += e.alloc ? e.bytes : -e.bytes;
            const bool forward = tl.blocks[std::size_t(e.block)].phase == Phase::Forward;
            if (name == "logits all-gather" && e.alloc && forward) {
                ++gathers;
                QCOMPARE(double(e.bytes), whole);
                QCOMPARE(double(live["all-gather into a rank-major buffer"]), whole);
            }
        }
        QCOMPARE(gathers, 1);
        verifyBalancedAndExact(model);
    }

    // Behind a vocabulary-sharded embedding DTensor makes the embedding's gradient for the whole
    // vocabulary; FSDP2 before torch 2.6 reduce-scatters it whole and keeps a shard of it, from
    // 2.6 it chunks it to the parameter's share first.
    void embeddingGradientIsWholeUnderTensorParallel_data()
    {
        QTest::addColumn<QString>("torch");
        QTest::addColumn<bool>("reducedWhole");
        QTest::newRow("2.4") << "2.4" << true;
        QTest::newRow("2.6") << "2.6" << false;
    }

    void embeddingGradientIsWholeUnderTensorParallel()
    {
        QFETCH(QString, torch);
        QFETCH(bool, reducedWhole);
        EstimateInput in = input(llama3_8b());
        in.arch.layers = 3;
        in.training.stack = {Stack::Torchtitan, "", torch.toStdString()};
        applyStackDefaults(in.training, in.parallelism);
        in.parallelism.gpus = 4;
        in.parallelism.tensor_parallel = 2;
        in.parallelism.sharding = Sharding::FsdpFull;
        const StepModel model(in);
        QVERIFY(model.valid());
        const StepTimeline &tl = model.timeline();
        const ModelStates &s = model.states();
        const double vocabGrad = 128256.0 * 4096; // elements, the whole vocabulary
        double held = 0, rootShard = 0;
        for (const TimelineTensor &t : tl.tensors) {
            if (std::string(t.name) == "unsharded gradients (embedding)")
                held = t.size.fixed;
            if (std::string(t.name) == "gradient shard" && !t.per_layer)
                rootShard = t.size.fixed;
        }
        QCOMPARE(held, vocabGrad * 2);                             // bf16 param_dtype
        const double extra = reducedWhole ? vocabGrad / 2 * 4 : 0; // the other rank's half, fp32
        QCOMPARE(rootShard, (s.grads - s.layer_grads + extra) / s.grad_shard);
        verifyBalancedAndExact(model);
    }

    // A pipeline defers the gradient sync: the first stage's embedding gradient is still made
    // whole each micro-batch before it is accumulated at the parameter's share (torch 2.6). The
    // stage's backward starts from the gradient the next stage sends back, freed by its own
    // backward (balanced: failed before, a free of a gradient that was never made).
    void embeddingGradientIsWholeInAPipeline()
    {
        EstimateInput in = input(llama3_8b());
        in.arch.layers = 4;
        in.training.stack = {Stack::Torchtitan, "", "2.6"};
        applyStackDefaults(in.training, in.parallelism);
        in.training.gradient_accumulation_steps = 2;
        in.parallelism.gpus = 8;
        in.parallelism.tensor_parallel = 2;
        in.parallelism.pipeline_parallel = 2;
        in.parallelism.sharding = Sharding::FsdpFull;
        in.pipeline_stage = 0;
        const StepModel model(in);
        QVERIFY(model.valid());
        verifyBalancedAndExact(model); // the gradient from the next stage is allocated as freed
        const ModelStates &s = model.states();
        double made = 0, accumulated = 0;
        for (const TimelineTensor &t : model.timeline().tensors) {
            if (std::string(t.name) == "unsharded gradients" && !t.per_layer)
                made = t.size.fixed;
            if (std::string(t.name) == "unsharded gradients (sync deferred)" && !t.per_layer)
                accumulated = t.size.fixed;
        }
        const double vocabGrad = 128256.0 * 4096;
        const double root = s.grads - s.layer_grads;    // fp32, the parameters' share
        QCOMPARE(made, (root + vocabGrad / 2 * 4) / 2); // bf16, the embedding whole
        QCOMPARE(accumulated, root);
    }

    // Inference keeps its KV cache to the end; nothing else outlives the prefill but the weights.
    // DeepSpeed's step with fp32 master weights (stage3.py, stage_1_and_2.py): a float64 copy of
    // one gradient for the norm, then group by group a flattened 16-bit copy and an fp32 gradient.
    // ZeRO-3 groups by sub_group_size elements of the local partition, split at parameters: 1 puts
    // every tensor alone (the embedding and lm_head the largest), more than the partition one group.
    // ZeRO-2 steps its whole partition as one group; its norm copies a whole gradient.
    void deepSpeedStepsGroupByGroup_data()
    {
        QTest::addColumn<int>("stage");
        QTest::addColumn<double>("subGroup");
        QTest::addColumn<double>("largest"); // elements of the largest group on one GPU
        QTest::addColumn<double>("normed");  // elements of the norm's float64 copy
        const double embedding = 32000.0 * 4096, total = 6738415616.0; // Llama-2-7B
        QTest::newRow("zero3, one sub-group") << 3 << 1e12 << total / 2 << embedding / 2;
        QTest::newRow("zero3, every tensor alone") << 3 << 1.0 << embedding / 2 << embedding / 2;
        QTest::newRow("zero2, the whole partition") << 2 << 1.0 << total / 2 << embedding;
    }

    void deepSpeedStepsGroupByGroup()
    {
        QFETCH(int, stage);
        QFETCH(double, subGroup);
        QFETCH(double, largest);
        QFETCH(double, normed);
        EstimateInput in = deepSpeedInput(stage == 3 ? Sharding::Zero3 : Sharding::Zero2, 2);
        in.parallelism.deepspeed.sub_group_size = subGroup;
        const StepModel model(in);
        QVERIFY(model.valid());
        std::map<std::string, double> sizes;
        for (const TimelineTensor &t : model.timeline().tensors)
            sizes[t.name] += t.size.fixed;
        const char *fp32 = stage == 3 ? "fp32 gradients of one ZeRO-3 sub-group"
                                      : "fp32 gradients for the master update";
        QCOMPARE(sizes[fp32], 4 * largest);
        QCOMPARE(sizes["a ZeRO optimizer group's flattened 16-bit gradients"], 2 * largest);
        QCOMPARE(sizes["gradient norm's float64 copy of one gradient"], 8 * normed);
        QVERIFY(!sizes.count("ZeRO-3 overflow check (isinf, then isnan, of the gradients)"));
        verifyBalancedAndExact(model);
    }

    // With masters in the gradients' dtype (fp32 and AMP training; pure bf16's bf16 masters from
    // DeepSpeed 0.18.3) the flattened gradients are what the update reads: no fp32 cast, the flat
    // copy in the gradients' dtype for the group, after the norm's float64 copy of one gradient.
    void deepSpeedStepsGradientsAsTheyAre_data()
    {
        QTest::addColumn<int>("precision"); // a Precision
        QTest::addColumn<int>("stage");
        QTest::addColumn<double>("gradBytes");
        QTest::newRow("fp32 zero2") << int(Precision::Fp32) << 2 << 4.0;
        QTest::newRow("amp-bf16 zero3") << int(Precision::AmpBf16) << 3 << 4.0;
        QTest::newRow("bf16 masters zero2") << int(Precision::Bf16) << 2 << 2.0;
    }

    void deepSpeedStepsGradientsAsTheyAre()
    {
        QFETCH(int, precision);
        QFETCH(int, stage);
        QFETCH(double, gradBytes);
        EstimateInput in = deepSpeedInput(stage == 3 ? Sharding::Zero3 : Sharding::Zero2, 2);
        in.training.precision = static_cast<Precision>(precision);
        in.parallelism.deepspeed.sub_group_size = 1e12; // one group: the whole partition
        const StepModel model(in);
        QVERIFY(model.valid());
        std::map<std::string, double> sizes;
        for (const TimelineTensor &t : model.timeline().tensors)
            sizes[t.name] += t.size.fixed;
        const double partition = 6738415616.0 / 2; // Llama-2-7B on two GPUs
        QCOMPARE(sizes["a ZeRO optimizer group's flattened gradients (stepped as they are)"],
                 gradBytes * partition);
        QVERIFY(sizes["gradient norm's float64 copy of one gradient"] > 0);
        QVERIFY(!sizes.count("a ZeRO optimizer group's flattened 16-bit gradients"));
        QVERIFY(!sizes.count("fp32 gradients for the master update"));
        QVERIFY(!sizes.count("fp32 gradients of one ZeRO-3 sub-group"));
        in.parallelism.gpus = 1; // no ZeRO on one GPU: torch's own step
        const StepModel single(in);
        sizes.clear();
        for (const TimelineTensor &t : single.timeline().tensors)
            sizes[t.name] += t.size.fixed;
        QVERIFY(!sizes.count("a ZeRO optimizer group's flattened gradients (stepped as they are)"));
    }

    // DeepSpeed's default sub_group_size (1e9): Llama-2-7B's 3.37e9 elements per GPU step in groups
    // that reach 1e9 at a parameter's end, so the largest exceeds it by less than one layer tensor
    // (11008 x 4096 / 2). DeepSpeed before 0.11.2 also checks bf16 gradients for overflow, a bool per
    // element of the partition (stage3.py step; PR #4512 limited it to fp16).
    void deepSpeedSubGroupsAndOverflowCheck()
    {
        EstimateInput in = deepSpeedInput(Sharding::Zero3, 2, {Stack::DeepSpeed, "0.10.0", ""});
        const StepModel older(in);
        QVERIFY(older.valid());
        const double n = older.states().largest_step_group;
        QVERIFY2(n >= 1e9 && n < 1e9 + 11008.0 * 4096 / 2, qPrintable(QString::number(n)));
        auto overflowBytes = [](const StepModel &m) {
            for (const TimelineTensor &t : m.timeline().tensors)
                if (std::string(t.name).rfind("ZeRO-3 overflow check", 0) == 0)
                    return t.size.fixed;
            return 0.0;
        };
        QCOMPARE(overflowBytes(older), 6738415616.0 / 2);
        in.training.stack.version = "0.11.2";
        QCOMPARE(overflowBytes(StepModel(in)), 0.0);
        in.training.precision = Precision::MixedFp16;
        QCOMPARE(overflowBytes(StepModel(in)), 6738415616.0 / 2);
        verifyBalancedAndExact(older);
    }

    // DeepSpeed ZeRO-3 frees gathered parameters unless the trace uses them again within
    // stage3_max_reuse_distance (partitioned_param_coordinator.py): the embedding is gathered for
    // its forward and again for its backward (kept to the end), the final norm and lm_head from
    // their forward to their backward; neither is held while the layers run. FSDP keeps the root
    // unit gathered throughout.
    void deepSpeedReleasesTheRootAfterUse()
    {
        EstimateInput in = deepSpeedInput(Sharding::Zero3, 2);
        in.arch.layers = 4;
        const StepModel model(in);
        QVERIFY(model.valid());
        const StepTimeline &tl = model.timeline();
        std::map<std::string, std::vector<std::pair<std::size_t, bool>>> seen;
        const std::vector<ExpandedEvent> events = expandTimeline(tl, 512, 512);
        for (std::size_t i = 0; i < events.size(); ++i)
            seen[tl.tensors[static_cast<std::size_t>(events[i].tensor)].name].push_back(
                {i, events[i].alloc});
        const auto &embedding = seen["gathered embedding parameters"];
        const auto &head = seen["gathered final norm and lm_head parameters"];
        const auto &layers = seen["gathered layer parameters"];
        QCOMPARE(embedding.size(), std::size_t(4)); // forward, then its backward
        QCOMPARE(head.size(), std::size_t(2));
        QVERIFY(!layers.empty());
        std::size_t lastForward = 0, firstBackward = events.size(), lastGather = 0;
        for (const auto &[i, alloc] : layers) {
            if (!alloc)
                continue;
            lastGather = i;
            if (tl.blocks[static_cast<std::size_t>(events[i].block)].phase == Phase::Forward)
                lastForward = std::max(lastForward, i);
            else
                firstBackward = std::min(firstBackward, i);
        }
        QVERIFY(embedding[1].first < layers.front().first); // freed before layer 0 is gathered
        QVERIFY(embedding[2].first > lastGather);           // gathered again after the layers
        QVERIFY(head[0].first > lastForward);               // gathered after the forward's layers
        QVERIFY(head[1].first < firstBackward);             // and freed before backward's
        const double embeddingBytes = 32000.0 * 4096 * 2, headBytes = 32000.0 * 4096 * 2 + 4096 * 2;
        QCOMPARE(double(events[embedding[0].first].bytes), embeddingBytes);
        QCOMPARE(double(events[head[0].first].bytes), headBytes);
        QVERIFY(seen["gathered embedding and head parameters"].empty());
        verifyBalancedAndExact(model);
        // The last layer is used again by its recomputation within stage3_max_reuse_distance when
        // it and the head's forward and backward stay under 1e9 elements: 2.0e8 + 2 x 1.3e8 here
        // (it stays gathered through the loss), not with Qwen's 152k-token vocabulary.
        const auto keptThroughTheLoss = [](const StepModel &m) {
            const StepTimeline &t = m.timeline();
            for (const ExpandedEvent &e : expandTimeline(t, 512, 512))
                if (e.alloc
                    && std::string(t.tensors[std::size_t(e.tensor)].name)
                           == "gathered layer parameters"
                    && t.blocks[std::size_t(e.block)].stage == Stage::Loss
                    && t.blocks[std::size_t(e.block)].phase == Phase::Forward)
                    return true;
            return false;
        };
        QVERIFY(keptThroughTheLoss(model));
        EstimateInput qwen = in;
        qwen.arch.vocab_size = 151936;
        QVERIFY(!keptThroughTheLoss(StepModel(qwen)));
        in.parallelism.sharding = Sharding::FsdpFull;
        const StepModel fsdp(in);
        QVERIFY(fsdp.valid());
        bool root = false;
        for (const TimelineTensor &t : fsdp.timeline().tensors)
            root = root || std::string(t.name) == "gathered embedding and head parameters";
        QVERIFY(root);
    }

    // TRL's chunked loss reads lm_head.weight without running the module: under ZeRO-3 it gathers
    // the weight inside each chunk (maybe_gather_lm_head_ctx), in the chunk's forward and its
    // recomputation, and partitions it again before the chunk's backward. Only the final norm is
    // held from the head's forward to its backward.
    void trlGathersAZero3HeadPerChunk()
    {
        EstimateInput in = deepSpeedInput(Sharding::Zero3, 2, {Stack::TrlSft, "1.9", ""});
        in.arch.layers = 4;
        QCOMPARE(in.training.loss, LossImplementation::TrlChunkedNll);
        QVERIFY(trlGathersHeadPerChunk(in));
        const StepModel model(in);
        QVERIFY(model.valid());
        const StepTimeline &tl = model.timeline();
        const std::vector<ExpandedEvent> events = expandTimeline(tl, 512, 512);
        const double V = 32000, H = 4096;
        bool gatheredLive = false;
        int forwardGathers = 0, backwardGathers = 0, gradients = 0;
        for (const ExpandedEvent &e : events) {
            const std::string name = timelineTensorName(
                tl.tensors[static_cast<std::size_t>(e.tensor)]);
            const Phase phase = tl.blocks[static_cast<std::size_t>(e.block)].phase;
            if (name == "gathered final norm and lm_head parameters")
                QCOMPARE(double(e.bytes), H * 2); // the norm alone
            if (name.rfind("lm_head GatheredParameters (ZeRO-3)", 0) == 0) {
                QCOMPARE(double(e.bytes), V * H * 2);
                gatheredLive = e.alloc;
                if (e.alloc)
                    ++(phase == Phase::Forward ? forwardGathers : backwardGathers);
            }
            if (name == "gradient of lm_head weight .float()" && e.alloc) {
                ++gradients;
                QVERIFY2(!gatheredLive, "partitioned again before the chunk's backward");
            }
        }
        QVERIFY(forwardGathers >= 1);
        QCOMPARE(backwardGathers, forwardGathers); // once more in each recomputation
        QVERIFY(gradients >= 1);
        verifyBalancedAndExact(model);
        EstimateInput tied = in; // embed_tokens keeps a shared weight gathered
        tied.arch.tied_embeddings = true;
        QVERIFY(!trlGathersHeadPerChunk(tied));
        EstimateInput fsdp = in;
        fsdp.parallelism.sharding = Sharding::FsdpFull;
        QVERIFY(!trlGathersHeadPerChunk(fsdp));
        EstimateInput hf = in;
        hf.training.loss = LossImplementation::Hf;
        QVERIFY(!trlGathersHeadPerChunk(hf));
        QVERIFY(!resolveStackChoices(hf).training.head_gathered_per_chunk);
        QVERIFY(resolveStackChoices(in).training.head_gathered_per_chunk);
    }

    // DeepSpeed ZeRO-2 copies each backward's gradients of this rank's partition into a new buffer
    // (stage_1_and_2.py, copy_grads_in_partition): none before backward; with one micro-batch it is
    // let go by the step, with more it is added into the first one's and freed at the end of
    // backward. With the optimizer offloaded the partition stays on the GPU from the start.
    void deepSpeedZero2PartitionsEachBackward_data()
    {
        QTest::addColumn<int>("accumulation");
        QTest::addColumn<bool>("offload");
        QTest::addColumn<QString>("name");
        QTest::addColumn<int>("allocatedIn");
        QTest::addColumn<int>("freedIn"); // -1: never
        QTest::newRow("one micro-batch") << 1 << false << "partitioned gradients"
                                         << int(Stage::Loss) << int(Stage::OptimizerStep);
        QTest::newRow("three") << 3 << false << "this micro-batch's gradient partition"
                               << int(Stage::Loss) << int(Stage::Backward);
        QTest::newRow("offloaded optimizer")
            << 1 << true << "partitioned gradients" << int(Stage::Resident) << -1;
    }

    void deepSpeedZero2PartitionsEachBackward()
    {
        QFETCH(int, accumulation);
        QFETCH(bool, offload);
        QFETCH(QString, name);
        QFETCH(int, allocatedIn);
        QFETCH(int, freedIn);
        EstimateInput in = deepSpeedInput(Sharding::Zero2, 4);
        in.arch.layers = 4;
        in.training.gradient_accumulation_steps = accumulation;
        in.training.offload.optimizer = offload;
        const StepModel model(in);
        QVERIFY(model.valid());
        const StepTimeline &tl = model.timeline();
        std::vector<std::pair<int, bool>> seen; // the block's stage, allocation or free
        for (const ExpandedEvent &e : expandTimeline(tl, 512, 512)) {
            const TimelineTensor &t = tl.tensors[static_cast<std::size_t>(e.tensor)];
            if (name == t.name) {
                QCOMPARE(double(e.bytes), model.states().resident_grads);
                seen.push_back({int(tl.blocks[static_cast<std::size_t>(e.block)].stage), e.alloc});
            }
        }
        QCOMPARE(seen.size(), std::size_t(freedIn < 0 ? 1 : 2));
        QCOMPARE(seen[0], std::make_pair(allocatedIn, true));
        if (freedIn >= 0)
            QCOMPARE(seen[1], std::make_pair(freedIn, false));
        verifyBalancedAndExact(model);
    }

    void inferenceKeepsTheCache()
    {
        EstimateInput in = input(llama3_8b());
        in.training.mode = Mode::Inference;
        in.training.micro_batch_size = 2;
        in.training.sequence_length = 1000;
        const StepModel model(in);
        const Replayed r = replay(model.timeline(), 2000, 1000);
        QCOMPARE(r.badFrees, 0);
        const double kv = 2.0 * 32 * 2000 * 8 * 128 * 2; // 2 L T k d bytes
        QCOMPARE(r.liveAtEnd - r.residentAtStart, kv);
        QCOMPARE(r.gradientsAtEnd, 0.0);
    }

    // The loss dominates a short-sequence bf16 step with a large vocabulary: forward peaks there.
    void forwardPeaksInTheLoss()
    {
        EstimateInput in = input(llama3_8b());
        in.training.micro_batch_size = 1;
        in.training.sequence_length = 4096;
        in.training.method = Method::Lora;
        in.training.checkpointing = Checkpointing::Full;
        in.training.attention = Attention::Flash;
        const MemoryEstimate e = estimateMemory(in);
        QCOMPARE(e.moments[0].stage, Stage::Loss);
        // 16-bit logits + their fp32 copy + fp32 log-softmax: 10 bytes per token per vocab entry.
        QCOMPARE(double(e.phase(Phase::Forward)[Component::Logits]), 4096.0 * 128256 * 10);
    }

    // A model with an assumed reserve ratio (the app's figure during a slider drag) estimates
    // without replaying: the allocated figures are the replayed model's, reserved is the ratio
    // times the most allocated so far; asked for, its replays are the same as the other's.
    void assumedReserveRatio()
    {
        EstimateInput in = input(llama3_8b());
        in.training.micro_batch_size = 2;
        in.training.sequence_length = 2048;
        in.training.method = Method::Lora;
        const StepModel replayed(in);
        const StepModel assumed(in, 1.25);
        QVERIFY(!replayed.reserveAssumed());
        QVERIFY(assumed.reserveAssumed());
        QCOMPARE(assumed.reserveRatio(), 1.25);
        const MemoryEstimate a = assumed.estimate();
        const MemoryEstimate r = replayed.estimate();
        QCOMPARE(a.peak_allocated, r.peak_allocated);
        QCOMPARE(a.peak_reserved, toBytes(static_cast<double>(a.peak_allocated) * 1.25));
        QVERIFY(replayed.reserveRatio() > 1.0);
        QVERIFY(replayed.reserveRatio() != 1.25);
        QCOMPARE(assumed.referenceReplay().peak_reserved, replayed.referenceReplay().peak_reserved);
        // A ratio below 1 would make reserved less than allocated: it is taken as 1.
        QCOMPARE(StepModel(in, 0.5).reserveRatio(), 1.0);
        // The scenario's own allocator_reserve still wins.
        in.overheads.allocator_reserve_fraction = 0.1;
        QCOMPARE(StepModel(in, 1.25).reserveRatio(), 1.1);
    }
};

QTEST_APPLESS_MAIN(TestStepTimeline)
#include "tst_step_timeline.moc"
