// SPDX-License-Identifier: GPL-3.0-or-later
// Published, measured training throughput (tests/calibration/throughput.yaml): the throughput model
// must stay within the targets of docs/accuracy.md on the cases whose setup is stated.
// MEMBUDGET_CALIBRATION_SET=development prints only that set; MEMBUDGET_CALIBRATION_MARKDOWN=1 prints
// the table of docs/accuracy.md.
#include "io/preset_catalog.h"
#include "io/scenario_yaml.h"
#include "throughput/throughput_model.h"

#include <QtTest>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

using namespace membudget;

class TestThroughputCalibration : public QObject
{
    Q_OBJECT
private:
    static double median(std::vector<double> v)
    {
        std::sort(v.begin(), v.end());
        const std::size_t n = v.size();
        return n == 0 ? 0 : (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
    }

    struct Result
    {
        std::string id, set, metric;
        bool expressible = true;
        double measured = 0, estimated = 0, error = 0;
    };

    static Result run(const YAML::Node &c)
    {
        Result r;
        r.id = c["id"].as<std::string>();
        r.set = c["set"].as<std::string>();
        r.metric = c["metric"].as<std::string>();
        r.measured = c["measured"].as<double>();
        r.expressible = c["expressible"].as<std::string>().rfind("no", 0) != 0
                        && c["stated"].as<std::string>() != "no";
        const PresetCatalog &catalog = PresetCatalog::bundled();
        LoadError error;
        const auto scenario = parseScenario(c["scenario"].as<std::string>(), r.id, error, &catalog);
        if (!scenario)
            qFatal("%s", error.toString().c_str());
        std::string problem;
        const auto input = resolveScenario(*scenario, catalog, problem);
        if (!input)
            qFatal("%s: %s", r.id.c_str(), problem.c_str());
        const GpuSpec *gpu = catalog.findGpu(c["gpu"].as<std::string>());
        if (!gpu)
            qFatal("%s: unknown GPU", r.id.c_str());
        const ThroughputEstimate t = estimateThroughput(*input, gpu->performance);
        if (!t.valid)
            qFatal("%s: %s", r.id.c_str(), t.problem.c_str());
        r.estimated = r.metric == "step_seconds" ? t.step_seconds : t.tokens_per_second_per_gpu;
        r.error = (r.estimated - r.measured) / r.measured;
        return r;
    }

private slots:
    void publishedThroughput()
    {
        const YAML::Node root = YAML::LoadFile(MEMBUDGET_SOURCE_DIR
                                               "/tests/calibration/throughput.yaml");
        const char *only = std::getenv("MEMBUDGET_CALIBRATION_SET");
        const bool markdown = std::getenv("MEMBUDGET_CALIBRATION_MARKDOWN") != nullptr;
        std::vector<double> all, heldOut, development;
        double worst = 0;
        std::string worstId;
        int count = 0;
        for (const YAML::Node &c : root["cases"]) {
            const Result r = run(c);
            ++count;
            // "held-out" were held out until their first comparison led to two corrections: they
            // count as development since (docs/accuracy.md); "held-out-2" stayed out.
            const bool held = r.set == "held-out-2";
            const bool match = only
                               && (r.set == only
                                   || (std::string(only) == "development"
                                       && r.set.rfind("development", 0) == 0));
            if (only && !match)
                continue; // a development run looks at its own set only
            const char *kind = !r.expressible        ? "not held"
                               : held                ? "held out"
                               : r.set == "held-out" ? "dev (was held out)"
                                                     : "development";
            if (markdown)
                qInfo("| %s | %s | %s | %.6g | %.6g | %+.1f%% |",
                      r.id.c_str(),
                      kind,
                      r.metric == "step_seconds" ? "s/step" : "tokens/s/GPU",
                      r.measured,
                      r.estimated,
                      100 * r.error);
            else
                qInfo("%-34s %-18s measured %10.4g  estimated %10.4g  %+6.1f%%",
                      r.id.c_str(),
                      kind,
                      r.measured,
                      r.estimated,
                      100 * r.error);
            if (!r.expressible)
                continue;
            all.push_back(std::abs(r.error));
            (held ? heldOut : development).push_back(std::abs(r.error));
            if (std::abs(r.error) > worst) {
                worst = std::abs(r.error);
                worstId = r.id;
            }
        }
        qInfo(
            "%zu cases held to the targets: median |error| %.1f%%, worst %.1f%% (%s); development "
            "(%zu) median %.1f%%, held out (%zu) median %.1f%%",
            all.size(),
            100 * median(all),
            100 * worst,
            worstId.c_str(),
            development.size(),
            100 * median(development),
            heldOut.size(),
            100 * median(heldOut));
        if (only)
            return;
        QVERIFY(count >= 40);
        // Targets (docs/accuracy.md): median |error| <= 15%, every case within 35%.
        QVERIFY2(median(all) <= 0.15, "median error above 15%");
        QVERIFY2(worst <= 0.35, worstId.c_str());
    }
};

QTEST_APPLESS_MAIN(TestThroughputCalibration)
#include "tst_throughput_calibration.moc"
