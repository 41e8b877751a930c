// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Peak memory against micro-batch size or sequence length, with the selected GPUs' capacity lines
// and the largest value that fits each GPU marked (from the core's fit solver); optionally the
// modelled tokens per second on each GPU (core/throughput) on the right axis, as far as it fits.

#include "base/byte_format.h"
#include "model/gpu_spec.h"
#include "model/memory_estimator.h"
#include "workers/fit_limits_worker.h"

#include <qcustomplot.h>

#include <vector>

class QCheckBox;
class QComboBox;

namespace membudget {

enum class SweepAxis { MicroBatch, SequenceLength };

class SweepChart : public QCustomPlot
{
    Q_OBJECT
public:
    explicit SweepChart(QWidget *parent = nullptr);

    // No input (std::nullopt-like): pass valid=false to clear.
    void setInput(const EstimateInput &input, bool valid);
    void setGpus(std::vector<GpuSpec> gpus);
    void setUnit(ByteUnit unit);
    void setAxis(SweepAxis axis);
    SweepAxis axis() const { return m_axis; }
    void setShowSpeed(bool show);
    bool showSpeed() const { return m_showSpeed; }

    struct Sample
    {
        std::int64_t x;
        Bytes total;     // device total (nvidia-smi)
        Bytes allocated; // peak allocated
    };
    const std::vector<Sample> &samples() const { return m_samples; }
    // The largest value that fits each selected GPU (0: none), in GPU order: the fast estimate
    // (labelled "≈") until the exact answer, worked out off the GUI thread, replaces it.
    const std::vector<std::int64_t> &maxFits() const { return m_maxFits; }
    bool maxFitsExact() const { return !m_exactFits.empty(); }
    FitLimitsWorker *limitsWorker() const { return m_limitsWorker; }
    // Tokens per second on each selected GPU at each sample that fits it (empty when not shown).
    const std::vector<std::vector<std::pair<std::int64_t, double>>> &speeds() const
    {
        return m_speeds;
    }

    void refresh();

protected:
    void mouseMoveEvent(QMouseEvent *event) override;
    void changeEvent(QEvent *event) override;
    void updateLayout() override;

private:
    double toUnit(Bytes bytes) const;
    void applyTheme();
    void refreshSpeed(const std::vector<std::int64_t> &values);
    std::vector<std::int64_t> fitLimits(const StepModel &model);
    void onExactLimits(quint64 generation, const std::vector<std::int64_t> &limits);

    EstimateInput m_input;
    bool m_valid = false;
    std::vector<GpuSpec> m_gpus;
    ByteUnit m_unit = ByteUnit::GiB;
    SweepAxis m_axis = SweepAxis::SequenceLength;
    bool m_showSpeed = true;
    std::vector<Sample> m_samples;
    std::vector<std::int64_t> m_maxFits;
    FitLimitsWorker *m_limitsWorker;
    quint64 m_limitsGeneration = 0;
    std::vector<std::int64_t> m_exactFits; // the newest request's answer, while it stands
    bool m_showingExact = false;           // refresh() for an answer that arrived
    std::vector<std::vector<std::pair<std::int64_t, double>>> m_speeds;
    std::vector<QCPGraph *> m_speedGraphs;
    QCPGraph *m_total = nullptr;
    QCPGraph *m_allocated = nullptr;
    QCPGraph *m_current = nullptr;
    QCPTextElement *m_message = nullptr;
    struct CapacityLabel
    {
        QCPItemText *item;
        double value; // the capacity, in the display unit
    };
    std::vector<CapacityLabel> m_capacityLabels;
};

// The sweep chart with its axis picker above it.
class SweepView : public QWidget
{
    Q_OBJECT
public:
    explicit SweepView(QWidget *parent = nullptr);
    SweepChart *chart() const { return m_chart; }

private:
    SweepChart *m_chart;
    QComboBox *m_axisCombo;
    QCheckBox *m_speedCheck;
};

} // namespace membudget
