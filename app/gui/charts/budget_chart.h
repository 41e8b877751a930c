// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The stacked-bar chart: one bar per scenario (or per ladder step), one colour per component,
// labelled capacity lines for the selected GPUs. A view of the core's results: it only divides
// bytes by the display unit.

#include "advice/gpu_verdict.h"
#include "base/byte_format.h"
#include "charts/label_layout.h"
#include "io/preset_catalog.h"
#include "model/gpu_spec.h"
#include "model/memory_estimator.h"
#include "model/scenario.h"
#include "workers/fit_limits_worker.h"

#include <qcustomplot.h>

#include <array>
#include <map>
#include <memory>
#include <vector>

namespace membudget {

// A bar's verdicts on GPUs whose capacity falls inside its band (each a replay of the step), by
// capacity; shared by a bar's copies, so that a pinned bar works each out once.
struct BarVerdicts
{
    std::map<Bytes, FitVerdict> byCapacity;
};

struct ChartBar
{
    QString label;   // "Current", "A", "+ bf16"
    QString detail;  // scenario summary or what the step saved (second line of the axis label)
    QString tooltip; // what the bar is, shown when hovering its label
    bool valid = true;
    QString error; // why there is no estimate when !valid
    EstimateInput input;
    MemoryEstimate estimate;
    std::shared_ptr<BarVerdicts> verdicts = std::make_shared<BarVerdicts>();
};

// A bar for a scenario: resolved through the catalog and estimated, or invalid with the reason.
ChartBar chartBarFor(const QString &label,
                     const QString &detail,
                     const Scenario &scenario,
                     const PresetCatalog &catalog);

class BudgetChart : public QCustomPlot
{
    Q_OBJECT
public:
    explicit BudgetChart(QWidget *parent = nullptr);

    void setBars(std::vector<ChartBar> bars);
    void setGpus(std::vector<GpuSpec> gpus);
    // Both at once (one refresh).
    void setContents(std::vector<ChartBar> bars, std::vector<GpuSpec> gpus);
    void setUnit(ByteUnit unit);
    ByteUnit unit() const { return m_unit; }

    // While frozen (a slider is held), the value axis only grows; unfreezing lets it settle.
    void setAxisFrozen(bool frozen);
    // Forgets the current range (a different scenario was opened).
    void resetAxis();
    // A logarithmic memory axis: small components stay visible beside large ones.
    void setLogScale(bool on);
    bool logScale() const { return m_log; }

    // Rebuilds everything from the current bars (also called after a palette change).
    void refresh();

    const std::vector<ChartBar> &bars() const { return m_bars; }
    const std::vector<GpuSpec> &gpus() const { return m_gpus; }
    // The plotted height of a component's segment in bar `index`, in the display unit.
    double segmentValue(int index, Component component) const;
    QCPBars *componentBars(Component component) const
    {
        return m_components[static_cast<int>(component)];
    }
    // The hover text of a segment (bytes, share, formula).
    QString segmentToolTip(int index, Component component) const;
    // The words under a bar's total: "exceeds RTX 4090 (24 GB)" or empty when it fits or is
    // tight on every GPU.
    QString overCapacityText(int index) const;
    // Bar `index`'s verdict on `gpu` (gpu_verdict.h): from the band where the capacity is outside
    // it, else from a replay on a worker thread (kept with the bar; what the band suggests until
    // it arrives).
    FitVerdict verdictOn(int index, const GpuSpec &gpu) const;
    FitLimitsWorker *verdictWorker() const { return m_verdictWorker; }
    // Number of capacity lines drawn.
    int capacityLineCount() const { return static_cast<int>(m_capacityLines.size()); }
    QCPRange valueRange() const { return yAxis->range(); }
    // Bar `index`'s band (low, expected, high on the device; zero for an invalid bar), drawn as a
    // whisker on the bar, and the error bars that draw the whiskers.
    MemoryBand band(int index) const;
    QCPErrorBars *bandBars() const { return m_band; }

    // The segment under a widget position; false when there is none.
    bool segmentAt(const QPointF &pos, int &index, Component &component) const;

    // Every label as last laid out (capacity labels, totals, segment values, bar names), in the
    // pixels of the last surface painted: the screen, or an export while it is drawn.
    const std::vector<PlacedLabel> &placedLabels() const { return m_placed; }

Q_SIGNALS:
    void barContextMenuRequested(int index, const QPoint &globalPos);

protected:
    void mouseMoveEvent(QMouseEvent *event) override;
    void leaveEvent(QEvent *event) override;
    void contextMenuEvent(QContextMenuEvent *event) override;
    void changeEvent(QEvent *event) override;
    void showEvent(QShowEvent *event) override;
    // After QCustomPlot's layout pass (on screen and for every export): bar names wrapped to the
    // width of a bar's slot, then every label placed so that none overlaps another.
    void updateLayout() override;

private:
    void requestReplot();
    double toUnit(Bytes bytes) const;
    void updateData();
    bool updateBands(); // true when some bar has a band to draw
    void askForVerdicts();
    void onVerdicts(quint64 generation, const std::vector<GpuVerdict> &verdicts);
    double bandTop(std::size_t index) const; // the whisker's top or the bar's total, in the unit
    void updateCapacityLines();
    void updateLabels();
    void updateRange();
    void applyTheme();
    QCPItemText *labelAt(std::vector<QCPItemText *> &pool, std::size_t i);
    bool wrapBarNames(double axisWidth);
    void setCompact(bool compact);
    void layoutLabels();
    void placeCapacityLabels(QRectF &occupied);
    void placeTotals();
    void placeSegmentLabels();
    double slotWidth() const;
    int widestLine(const QFont &font, const QString &text); // measured once per text

    std::vector<ChartBar> m_bars;
    std::vector<GpuSpec> m_gpus;
    ByteUnit m_unit = ByteUnit::GiB;
    std::array<QCPBars *, kComponentCount> m_components{};
    std::array<bool, kComponentCount> m_inLegend{}; // the components the legend lists
    QCPGraph *m_bandAnchor = nullptr;               // invisible, through the bars' totals
    QCPErrorBars *m_band = nullptr;
    std::vector<MemoryBand> m_bands;
    bool m_bandInLegend = false;
    FitLimitsWorker *m_verdictWorker = nullptr;
    std::shared_ptr<BarVerdicts> m_verdictTarget; // the bar asked about, and at which capacities
    std::vector<Bytes> m_verdictCapacities;
    quint64 m_verdictGeneration = 0;
    std::vector<QCPItemStraightLine *> m_capacityLines;
    std::vector<QCPItemText *> m_capacityLabels;  // one per GPU, in its line's colour
    std::vector<QCPItemLine *> m_capacityLeaders; // from a line to its label when moved apart
    std::vector<QString> m_capacityToolTips;      // name, capacity in bytes
    std::vector<QCPItemText *> m_totalLabels;
    std::vector<std::vector<QString>> m_totalVariants; // per bar: its total, longest text first
    std::vector<QString> m_barNames;                   // label and detail, before wrapping
    std::vector<QString> m_wrappedBarNames;
    double m_wrappedFor = -1; // the axis width the bar names were wrapped for
    std::vector<PlacedLabel> m_placed;
    QHash<QString, QString> m_wrapCache; // bar names wrapped, by font, width and name
    QHash<QString, int> m_widthCache;    // widest line of a text, by font and text
    QHash<QString, QSize> m_sizeCache;   // a bar name's box, by font and text
    std::vector<QCPItemText *> m_segmentLabels;
    std::vector<QCPItemRect *> m_overFrames;
    QCPLayoutGrid *m_body = nullptr;
    QCPLayoutGrid *m_side = nullptr; // beside the plot: the legend, unless compact
    bool m_compact = false;          // narrow: legend under the plot, GPU names only
    double m_upper = 0;
    double m_lower = 0; // above 0 only on a logarithmic axis
    bool m_log = false;
    bool m_frozen = false;
    bool m_replotWhenShown = false; // changed while hidden
    bool m_dark = false;
};

} // namespace membudget
