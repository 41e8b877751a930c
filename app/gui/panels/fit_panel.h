// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// "Make it fit": the core's suggestions (fit_advisor.h) for a GPU the scenario does not fit,
// fastest first by the modelled time per token on that GPU, each applied with one click.

#include "advice/fit_advisor.h"
#include "advice/gpu_verdict.h"
#include "base/byte_format.h"

#include <QWidget>

#include <atomic>
#include <memory>
#include <vector>

class QComboBox;
class QLabel;
class QTimer;
class QTreeWidget;

namespace membudget {

class ScenarioDocument;

class FitPanel : public QWidget
{
    Q_OBJECT
public:
    explicit FitPanel(ScenarioDocument *document, QWidget *parent = nullptr);

    void setUnit(ByteUnit unit);
    // Recomputes now, waiting for the search (normally debounced after each change and run on a
    // worker thread: recomputeInBackground).
    void recompute();
    void recomputeInBackground();
    // True while a recompute is scheduled or a search runs (tests, screenshots).
    bool busy() const;

    const std::vector<FitSuggestion> &suggestions() const { return m_suggestions; }
    QTreeWidget *list() const { return m_list; }
    // Applies suggestion `index` (of suggestions(), not a row: the list has a heading row before
    // those that change what is trained) to the document (one undo step).
    void apply(int index);

protected:
    void changeEvent(QEvent *event) override;
    bool eventFilter(QObject *watched, QEvent *event) override;

private:
    void scheduleRecompute();
    void updateGpuCombo();
    // Everything before the search: the GPU, the verdict, the message when no search is needed
    // (returns false then). Drops any answer still on its way.
    bool prepare();
    void dropSearch(); // the running search's answer is no longer wanted: stop it
    void showSuggestions(std::vector<FitSuggestion> suggestions);

    ScenarioDocument *m_doc;
    ByteUnit m_unit = ByteUnit::GiB;
    QComboBox *m_gpuCombo;
    QLabel *m_message;
    QTreeWidget *m_list;
    QTimer *m_timer;
    std::vector<FitSuggestion> m_suggestions;
    GpuSpec m_pendingGpu;                        // what the search runs for
    GpuVerdict m_pendingVerdict;                 // the scenario as it is on that GPU
    quint64 m_generation = 0;                    // of the newest search; older answers are dropped
    std::shared_ptr<std::atomic<bool>> m_cancel; // the newest search's stop flag, while it runs
};

} // namespace membudget
