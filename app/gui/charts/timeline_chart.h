// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include "charts/stacked_step_areas.h"

// One step's memory over time: the bytes allocated after every allocation and free of the
// estimated step, stacked by component, the caching-allocator model's reserved bytes above them,
// the step's stages shaded, the peak marked with what it is made of, the selected GPUs' capacity
// (less what lives outside PyTorch's allocator) as lines, and, when a snapshot is open, the
// measured allocated and reserved curves placed over the step (trace_alignment.h). Long series
// are drawn at the plot's resolution (column_decimation.h); hovering names the allocation.

#include "base/byte_format.h"
#include "model/gpu_spec.h"
#include "model/timeline_series.h"
#include "snapshot/measured_timeline.h"
#include "snapshot/trace_alignment.h"

#include <qcustomplot.h>

#include <memory>
#include <vector>

namespace membudget {

struct TimelineChartContents
{
    StepTimeline timeline; // tensor names and components of the series' events
    TimelineSeries series;
    Phase peak_phase = Phase::Forward;
    std::vector<GpuSpec> gpus;
    Bytes outside_allocator = 0; // CUDA context and NCCL: capacity lines are lowered by it
};

struct TimelineChartMeasured
{
    std::vector<Bytes> allocated; // at each trace point (0: before the first event)
    std::vector<Bytes> reserved;
    snapshot::TraceAlignment alignment;
    QString name; // the snapshot's file name
};

class TimelineChart : public QCustomPlot
{
    Q_OBJECT
public:
    explicit TimelineChart(QWidget *parent = nullptr);

    void setUnit(ByteUnit unit);
    // The step and the measurement over it (null: none), drawn once.
    void setContents(std::shared_ptr<const TimelineChartContents> contents,
                     std::shared_ptr<const TimelineChartMeasured> measured = nullptr);
    const TimelineChartContents *contents() const { return m_contents.get(); }
    bool hasMeasured() const { return m_measured != nullptr; }

    // What hovering over timeline position `position` shows (the allocation before it, the bytes
    // allocated and reserved there, the measurement drawn there).
    QString describePosition(std::size_t position) const;
    // Graph points drawn for the estimate's allocated total (after decimation), for tests.
    int drawnPoints() const { return m_drawnPoints; }
    // The part of the step shown: the whole step, or a stretch the user zoomed into (mouse wheel
    // over the plot, drag to pan, double-click for the whole step again). Drawn at full detail for
    // that stretch: the decimation follows the visible range.
    bool zoomed() const { return m_zoom.size() > 0; }
    void showWholeStep();

Q_SIGNALS:
    void hovered(const QString &text);

protected:
    void resizeEvent(QResizeEvent *event) override;
    void mouseMoveEvent(QMouseEvent *event) override;
    void changeEvent(QEvent *event) override;
    void mouseDoubleClickEvent(QMouseEvent *event) override;

private:
    void rebuild();
    void drawStages(double top);
    void drawComponents(const std::vector<std::size_t> &kept);
    void drawReserved(double x0, double x1);
    void drawMeasured(double x0, double x1);
    void onXRangeChanged(const QCPRange &range);
    void drawCapacities();
    void drawPeak();
    double value(Bytes bytes) const;
    int columns() const;

    StackedStepAreas *m_areas = nullptr; // owned by the plot
    std::shared_ptr<const TimelineChartContents> m_contents;
    std::shared_ptr<const TimelineChartMeasured> m_measured;
    ByteUnit m_unit = ByteUnit::GiB;
    int m_drawnPoints = 0;
    int m_builtWidth = -1;
    QCPRange m_zoom{0, 0};        // the zoomed stretch; empty: the whole step
    bool m_rebuilding = false;    // rebuild() sets the axis range itself
    bool m_rebuildQueued = false; // one rebuild per event-loop pass while the wheel turns
};

} // namespace membudget
