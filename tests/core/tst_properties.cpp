// SPDX-License-Identifier: GPL-3.0-or-later
// Property tests over random valid scenarios: every figure finite and non-negative, monotone where
// physics says so, sharding and checkpointing never make things worse, nothing wraps around.
#include "base/byte_format.h"
#include "io/preset_catalog.h"
#include "model/memory_estimator.h"
#include "model/step_model.h"

#include <QtTest>

#include <cmath>
#include <random>

using namespace membudget;

namespace {

struct Generator
{
    std::mt19937_64 rng{20261122};

    double uniform(double lo, double hi)
    {
        return std::uniform_real_distribution<double>(lo, hi)(rng);
    }
    std::int64_t logUniform(std::int64_t lo, std::int64_t hi)
    {
        return std::clamp<std::int64_t>(std::llround(std::exp(
                                            uniform(std::log(double(lo)), std::log(double(hi))))),
                                        lo,
                                        hi);
    }
    template<typename Enum>
    Enum pick(int count)
    {
        return static_cast<Enum>(std::uniform_int_distribution<int>(0, count - 1)(rng));
    }

    EstimateInput next()
    {
        EstimateInput in;
        const auto &models = PresetCatalog::bundled().models();
        if (!models.empty() && uniform(0, 1) < 0.5)
            in.arch
                = models[std::uniform_int_distribution<std::size_t>(0, models.size() - 1)(rng)].arch;
        else
            in.arch = quickArchitecture(std::exp(uniform(std::log(1e7), std::log(2e12))));
        TrainingConfig &t = in.training;
        t.mode = uniform(0, 1) < 0.85 ? Mode::Train : Mode::Inference;
        t.method = pick<Method>(3);
        t.precision = pick<Precision>(7);
        t.quantization = t.method == Method::Qlora ? static_cast<Quantization>(1 + pick<int>(3))
                                                   : Quantization::None;
        if (t.mode == Mode::Inference)
            t.quantization = pick<Quantization>(4);
        t.optimizer = pick<Optimizer>(9);
        t.micro_batch_size = logUniform(1, 4096);
        t.sequence_length = logUniform(1, 1 << 20);
        t.gradient_accumulation_steps = logUniform(1, 64);
        t.checkpointing = pick<Checkpointing>(3);
        t.attention = pick<Attention>(3);
        t.lora.rank = logUniform(1, 256);
        t.lora.dropout = uniform(0, 1) < 0.5 ? 0.0 : 0.1;
        t.lora.targets = 1u
                         + static_cast<unsigned>(std::uniform_int_distribution<int>(0, 126)(rng));
        t.lora.adapter_precision = pick<AdapterPrecision>(2);
        in.parallelism.gpus = logUniform(1, 4096);
        in.parallelism.tensor_parallel = 1;
        if (in.parallelism.gpus % 8 == 0 && in.arch.attention_heads % 8 == 0 && uniform(0, 1) < 0.3)
            in.parallelism.tensor_parallel = 8;
        // Half the scenarios shard the sequence too (from a drawn value: the draws stay as they were).
        in.parallelism.sequence_parallel = t.micro_batch_size % 2 == 0;
        in.parallelism.sharding = pick<Sharding>(6);
        // From drawn values, so that the draws stay as they were: full checkpointing on one layer
        // in 1, 2 or 3; hybrid sharding in groups of 8 for a third of those that can.
        t.checkpoint_every = 1 + t.sequence_length % 3;
        if (in.parallelism.dataParallel() % 8 == 0 && t.micro_batch_size % 3 == 0)
            in.parallelism.shard_group = 8;
        t.offload.optimizer = uniform(0, 1) < 0.15;
        t.offload.parameters = (in.parallelism.sharding == Sharding::Zero3
                                || in.parallelism.sharding == Sharding::FsdpFull)
                               && uniform(0, 1) < 0.2;
        // One scenario in 200 replays its step through the caching-allocator model (a few
        // milliseconds each); the others take a fixed reserve, which the arithmetic checks below
        // do not depend on.
        if (uniform(0, 1) >= 1.0 / 200)
            in.overheads.allocator_reserve_fraction = uniform(0, 0.5);
        else if (uniform(0, 1) < 0.3)
            in.overheads.allocator_conf = "expandable_segments:True";
        return in;
    }
};

bool sane(const MemoryEstimate &e)
{
    for (const Breakdown &b : e.phases)
        for (Bytes v : b.bytes)
            if (v < 0)
                return false;
    // Every intermediate quantity the estimate was built from is a finite, non-negative number.
    const Derivation &d = e.derivation;
    for (double v : {d.parameters,
                     d.active_parameters,
                     d.trainable_parameters,
                     d.params_per_gpu,
                     d.trainable_per_gpu,
                     d.weight_bytes_full,
                     d.tokens,
                     d.layer_saved_bytes,
                     d.layer_checkpoint_bytes,
                     d.embedding_activation_bytes,
                     d.logits_forward_bytes,
                     d.logits_backward_bytes,
                     d.kv_cache_bytes,
                     d.cpu_offload_bytes})
        if (!std::isfinite(v) || v < 0)
            return false;
    return e.peak_allocated >= 0 && e.peak_reserved >= e.peak_allocated
           && e.device_total >= e.peak_reserved;
}

} // namespace

class TestProperties : public QObject
{
    Q_OBJECT
private slots:
    void randomScenarios()
    {
        // 100,000 by default; the sanitizer pass (CMakePresets.json, test preset "asan") checks
        // 25,000, which is what fits its time on two cores (memory errors show in any of them).
        const int wanted = qEnvironmentVariableIsSet("MEMBUDGET_PROPERTY_SCENARIOS")
                               ? qEnvironmentVariableIntValue("MEMBUDGET_PROPERTY_SCENARIOS")
                               : 100000;
        Generator gen;
        int checked = 0;
        int tooLarge = 0;
        for (int i = 0; i < 250000 && checked < wanted; ++i) {
            const EstimateInput in = gen.next();
            if (!validateInput(in).empty())
                continue;
            ++checked;
            const MemoryEstimate e = estimateMemory(in);
            QVERIFY(sane(e));
            // Saturated figures are flagged and shown as "too large", never wrapped.
            if (e.too_large)
                QCOMPARE(QString::fromStdString(formatBytes(e.device_total, ByteUnit::GB)),
                         QStringLiteral("too large"));
            tooLarge += e.too_large ? 1 : 0;
            if (e.too_large)
                continue;

            // Monotone in micro-batch and sequence length. These compare allocated bytes, which
            // need no replay of the allocator (allocatedEstimate): a fifth of the replays, so the
            // sanitizer build gets through 100,000 scenarios in its time.
            const auto allocated = [](const EstimateInput &x) {
                return StepModel(x).allocatedEstimate();
            };
            EstimateInput more = in;
            more.training.micro_batch_size *= 2;
            QVERIFY(allocated(more).peak_allocated >= e.peak_allocated);
            more = in;
            more.training.sequence_length *= 2;
            QVERIFY(allocated(more).peak_allocated >= e.peak_allocated);
            more = in;
            more.arch.layers += 1;
            QVERIFY(allocated(more).peak_allocated >= e.peak_allocated);

            // More GPUs never increase per-GPU model states.
            if (in.parallelism.sharding != Sharding::None) {
                EstimateInput wider = in;
                wider.parallelism.gpus *= 2;
                const MemoryEstimate w = allocated(wider);
                const Breakdown &a = e.phase(Phase::OptimizerStep);
                const Breakdown &b = w.phase(Phase::OptimizerStep);
                QVERIFY(b[Component::Weights] <= a[Component::Weights]);
                QVERIFY(b[Component::Gradients] <= a[Component::Gradients]);
                QVERIFY(b[Component::OptimizerStates] <= a[Component::OptimizerStates]);
            }
            // Checkpointing never increases what is saved at the end of forward.
            if (in.training.mode == Mode::Train
                && in.training.checkpointing == Checkpointing::None) {
                EstimateInput ckpt = in;
                for (Checkpointing c : {Checkpointing::Selective, Checkpointing::Full}) {
                    // Selective recomputation keeps q, k and v as checkpoint inputs even where the
                    // first LoRA layer would not: with a handful of tokens per sequence the dropped
                    // s x s terms cannot pay for that, so it is only required to help from 64 on.
                    if (c == Checkpointing::Selective && in.training.sequence_length < 64)
                        continue;
                    ckpt.training.checkpointing = c;
                    ckpt.training.checkpoint_every = 1; // every layer (one in N: between the two)
                    const double with = allocated(ckpt).derivation.saved_activation_bytes;
                    const double without = e.derivation.saved_activation_bytes;
                    QVERIFY2(with <= without,
                             qPrintable(QString("%1 > %2: layers %3 h %4 b %5 s %6 method %7 "
                                                "attention %8 targets %9")
                                            .arg(with)
                                            .arg(without)
                                            .arg(in.arch.layers)
                                            .arg(in.arch.hidden_size)
                                            .arg(in.training.micro_batch_size)
                                            .arg(in.training.sequence_length)
                                            .arg(int(in.training.method))
                                            .arg(int(in.training.attention))
                                            .arg(in.training.lora.targets)));
                }
            }
        }
        qInfo("checked %d valid random scenarios (%d saturated as too large)", checked, tooLarge);
        QCOMPARE(checked, wanted);
    }

    void everyPresetMethodPrecisionCombination()
    {
        int count = 0;
        for (const ModelPreset &m : PresetCatalog::bundled().models()) {
            for (int method = 0; method < 3; ++method) {
                for (int precision = 0; precision < 7; ++precision) {
                    EstimateInput in;
                    in.arch = m.arch;
                    in.training.method = static_cast<Method>(method);
                    in.training.precision = static_cast<Precision>(precision);
                    in.training.quantization = in.training.method == Method::Qlora
                                                   ? Quantization::Nf4
                                                   : Quantization::None;
                    QVERIFY2(validateInput(in).empty(), m.id.c_str());
                    const MemoryEstimate e = estimateMemory(in);
                    QVERIFY(sane(e));
                    QVERIFY(e.peak_allocated > 0);
                    ++count;
                }
            }
        }
        QVERIFY(count >= 40 * 21);
    }
};

QTEST_APPLESS_MAIN(TestProperties)
#include "tst_properties.moc"
