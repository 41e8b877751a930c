// SPDX-License-Identifier: GPL-3.0-or-later
// Published GPU measurements (tests/calibration, from ../shared/calibration/published.yaml):
// MemBudget must stay within the accuracy targets on the metric each source measured.
#include "advice/fit_solver.h"
#include "io/preset_catalog.h"
#include "io/scenario_yaml.h"

#include <QtTest>

#include <algorithm>

using namespace membudget;

class TestCalibration : public QObject
{
    Q_OBJECT
private:
    struct Case
    {
        const char *file;
        FitMetric metric;
        double measuredGiB;
    };
    static constexpr double kGiBd = 1024.0 * 1024.0 * 1024.0;
    // Answer.AI fsdp_qlora benchmarks_03_2024.md, Llama-2-7B on 2 x RTX 3090.
    static constexpr Case kCases[] = {
        {"aai-1.yaml", FitMetric::PeakReserved, 4.98},
        {"aai-2.yaml", FitMetric::PeakReserved, 5.21},
        {"aai-3.yaml", FitMetric::PeakAllocated, 8.28},
        {"aai-3.yaml", FitMetric::PeakReserved, 10.24},
        {"aai-4.yaml", FitMetric::PeakAllocated, 9.16},
        {"aai-4.yaml", FitMetric::PeakReserved, 10.22},
        {"aai-5.yaml", FitMetric::PeakReserved, 11.22},
        {"aai-6.yaml", FitMetric::PeakReserved, 20.97},
        {"aai-7.yaml", FitMetric::PeakReserved, 16.14},
        {"aai-8.yaml", FitMetric::PeakReserved, 21.35},
        {"aai-9.yaml", FitMetric::PeakReserved, 20.94},
        {"aai-10.yaml", FitMetric::PeakReserved, 22.04},
        // fms-acceleration refs/a100_80gb.csv (commit 24bdadb), Mistral-7B on A100 80GB: the HF
        // Trainer's memory metrics, which add up to torch.cuda.max_memory_allocated (bytes / 2^30).
        {"fms-mistral7b-full-1g-b4.yaml", FitMetric::PeakAllocated, 72434837504 / kGiBd},
        {"fms-mistral7b-full-1g-b8.yaml", FitMetric::PeakAllocated, 72435230720 / kGiBd},
        {"fms-mistral7b-full-2g-b2.yaml", FitMetric::PeakAllocated, 36225939968 / kGiBd},
        {"fms-mistral7b-full-2g-b4.yaml", FitMetric::PeakAllocated, 36226136576 / kGiBd},
        {"fms-mistral7b-lora-1g-b4.yaml", FitMetric::PeakAllocated, 26704571904 / kGiBd},
        {"fms-mistral7b-lora-1g-b8.yaml", FitMetric::PeakAllocated, 38742912512 / kGiBd},
        {"fms-mistral7b-lora-2g-b2.yaml", FitMetric::PeakAllocated, 15144870400 / kGiBd},
        {"fms-mistral7b-lora-2g-b4.yaml", FitMetric::PeakAllocated, 21959827968 / kGiBd},
        {"fms-mistral7b-qlora-1g-b4.yaml", FitMetric::PeakAllocated, 20669338112 / kGiBd},
        {"fms-mistral7b-qlora-1g-b8.yaml", FitMetric::PeakAllocated, 37002646016 / kGiBd},
        {"fms-mistral7b-qlora-2g-b2.yaml", FitMetric::PeakAllocated, 9424594432 / kGiBd},
        {"fms-mistral7b-qlora-2g-b4.yaml", FitMetric::PeakAllocated, 15970067968 / kGiBd},
    };

    static double median(std::vector<double> v)
    {
        std::sort(v.begin(), v.end());
        const std::size_t n = v.size();
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }

private slots:
    void publishedMeasurements()
    {
        std::vector<double> allocated, reserved;
        for (const Case &c : kCases) {
            const std::string path = std::string(MEMBUDGET_SOURCE_DIR "/tests/calibration/")
                                     + c.file;
            LoadError error;
            const auto scenario = loadScenarioFile(path, error, &PresetCatalog::bundled());
            QVERIFY2(scenario.has_value(), error.toString().c_str());
            std::string problem;
            const auto input = resolveScenario(*scenario, PresetCatalog::bundled(), problem);
            QVERIFY2(input.has_value(), problem.c_str());
            const MemoryEstimate e = estimateMemory(*input);
            const double estimated = static_cast<double>(metricOf(e, c.metric))
                                     / static_cast<double>(kGiB);
            const double err = (estimated - c.measuredGiB) / c.measuredGiB;
            qInfo("%-31s %-9s measured %6.2f GiB  estimated %6.2f GiB  %+6.1f%%",
                  c.file,
                  c.metric == FitMetric::PeakAllocated ? "allocated" : "reserved",
                  c.measuredGiB,
                  estimated,
                  100 * err);
            (c.metric == FitMetric::PeakAllocated ? allocated : reserved).push_back(std::abs(err));
            // The verdict: every published run fit its card (24 GB; 80 GB for fms-acceleration).
            // The sources give no device totals (their NCCL buffers are unknown), so the verdict
            // is checked on the metric they measured.
            for (const std::string &g : scenario->gpus)
                QVERIFY2(metricOf(e, c.metric) <= PresetCatalog::bundled().findGpu(g)->memory_bytes,
                         c.file);
        }
        // Targets (docs/accuracy.md): allocated peak within 12% each, median 5%. Reserved is a fraction
        // over allocated, not an allocator simulation: median 8%, each within 25%.
        QVERIFY(*std::max_element(allocated.begin(), allocated.end()) <= 0.12);
        QVERIFY(median(allocated) <= 0.05);
        QVERIFY(*std::max_element(reserved.begin(), reserved.end()) <= 0.25);
        QVERIFY(median(reserved) <= 0.08);
    }
};

QTEST_APPLESS_MAIN(TestCalibration)
#include "tst_calibration.moc"
