// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The Timeline tab: the open scenario's step over time (TimelineChart), and, with a PyTorch memory
// snapshot open, the measured curves over it, the estimate held against the measurement phase by
// phase (estimate_comparison.h) and Calibrate, which takes from the snapshot what the estimate
// cannot know into the scenario's overheads as one undoable edit (snapshot_calibration.h).

#include "base/byte_format.h"
#include "snapshot/memory_snapshot.h"
#include "snapshot/snapshot_analysis.h"
#include "snapshot/snapshot_calibration.h"
#include "snapshot/trace_phases.h"

#include <QWidget>

#include <memory>
#include <optional>

class QLabel;
class QPushButton;

namespace membudget {

class ScenarioDocument;
class TimelineChart;

class TimelineView : public QWidget
{
    Q_OBJECT
public:
    explicit TimelineView(ScenarioDocument *document, QWidget *parent = nullptr);
    ~TimelineView() override;

    // Recomputes the step of the document's scenario (and its comparison with the snapshot).
    void update(ByteUnit unit);

    // Reads a snapshot (native path bytes) and overlays it; false with `error` (one line) when
    // the file is not one or holds nothing to measure. The previous snapshot stays then.
    bool openSnapshot(const std::string &nativePath, QString &error);
    void closeSnapshot();
    bool hasSnapshot() const { return m_snapshot != nullptr; }

    // What Calibrate would take, for the document as it is (nothing without a snapshot).
    std::optional<snapshot::SnapshotCalibration> calibration() const;
    // Applies it to the document as one undoable edit; false when nothing changes.
    bool calibrate();

    TimelineChart *chart() const { return m_chart; }
    QString comparisonText() const;

Q_SIGNALS:
    void openSnapshotRequested();

private:
    struct Loaded;
    void updateComparison();

    ScenarioDocument *m_doc;
    TimelineChart *m_chart;
    QLabel *m_summary;
    QLabel *m_comparison;
    QPushButton *m_open;
    QPushButton *m_calibrate;
    QPushButton *m_close;
    std::unique_ptr<Loaded> m_snapshot;
    ByteUnit m_unit = ByteUnit::GiB;
};

} // namespace membudget
