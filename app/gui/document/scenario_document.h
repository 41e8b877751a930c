// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The open scenario: the Scenario value, its file, its undo history, and the core's estimate of
// it (recomputed on every change). Widgets read from here and write through edit(), which pushes an
// undo command; the modified flag follows the undo stack's clean state.

#include "hub/hub_model_ref.h"
#include "io/load_error.h"
#include "io/preset_catalog.h"
#include "model/memory_estimator.h"
#include "model/pipeline_parallel.h"
#include "model/scenario.h"
#include "model/step_model.h"

#include <QFutureWatcher>
#include <QObject>
#include <QString>
#include <QTimer>
#include <QUndoStack>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

namespace membudget {

class ScenarioDocument : public QObject
{
    Q_OBJECT
public:
    explicit ScenarioDocument(PresetCatalog catalog, QObject *parent = nullptr);
    ~ScenarioDocument() override;

    // The bundled presets plus the user's folder ($MEMBUDGET_PRESETS, else
    // ~/.local/share/membudget/presets); problems with user files are returned, not fatal.
    static PresetCatalog loadCatalog(std::vector<LoadError> *problems = nullptr);
    static QString userPresetFolder();

    const PresetCatalog &catalog() const { return m_catalog; }
    const Scenario &scenario() const { return m_scenario; }
    QUndoStack *undoStack() { return &m_undoStack; }

    // The core's view of the scenario: valid() is false when the scenario cannot be estimated
    // (unknown preset, impossible combination); error() then says why.
    bool valid() const { return m_input.has_value(); }
    QString error() const { return m_error; }
    const EstimateInput &input() const; // only when valid()
    const MemoryEstimate &estimate() const { return m_estimate; }
    // The step model the estimate came from (its reference replay already done), for views and
    // workers that need more of it: estimates at other shapes, fast limits, the timeline, replays.
    // Shared, so a worker thread can keep it after the next change; only when valid().
    const StepModel &stepModel() const { return *m_model; }
    std::shared_ptr<const StepModel> sharedStepModel() const { return m_model; }

    // Every pipeline stage's allocated peak, each stage built alone (pipelineStagePeaks), for the
    // settled estimate; empty without a pipeline and while the estimate is provisional. The
    // estimate models the worst of them, found here rather than once more in the step model.
    const std::vector<PipelineStagePeak> &stagePeaks() const { return m_stagePeaks; }

    // The GPUs the scenario compares against, resolved through the catalog (unknown ids skipped).
    std::vector<GpuSpec> selectedGpus() const;

    QString filePath() const { return m_filePath; }
    // The file's path as the system spells it (bytes; see file_writer.h); empty for a new one.
    const std::string &nativeFilePath() const { return m_nativePath; }
    // The file name, or the scenario's name for one not saved yet.
    QString displayName() const;

    // The scenario's name wherever it is shown (window title, export title, Markdown header, the
    // file name Save As suggests): the name it was given, else one made from its settings
    // (derivedScenarioName). The name a bundled scenario or the default comes with stands only
    // while its settings are unchanged; a name from a file or from rename() always stands.
    QString scenarioName() const;
    bool hasOwnName() const;
    // Names the scenario (undoable); an empty name goes back to the derived one.
    void rename(const QString &name);
    // What Save writes: the scenario without a bundled name and description it outgrew.
    Scenario scenarioToSave() const;
    bool isModified() const { return !m_undoStack.isClean(); }

    // An undoable change. Consecutive edits with the same non-zero mergeToken fold into one undo
    // step (a slider drag); take a token with newMergeToken() when the drag starts.
    void edit(const QString &text,
              const std::function<void(Scenario &)> &change,
              int mergeToken = 0);
    void setScenario(const Scenario &scenario, const QString &text, int mergeToken = 0);
    int newMergeToken() { return ++m_lastMergeToken; }

    // Replaces the whole document (New, Open, a bundled scenario): clears the undo history. Without
    // a file, `scenario` is a template (a bundled scenario, the default) whose name and description
    // go when its settings change.
    void reset(const Scenario &scenario, const QString &filePath = QString());

    // Reads a scenario file; on failure the document is unchanged and `error` says where and why.
    bool open(const QString &path, LoadError &error);
    bool openNative(const std::string &path, LoadError &error);
    // Writes the scenario atomically (writeFileSafely). On success the document becomes clean and takes
    // the path.
    bool saveAs(const QString &path, QString &error);
    bool saveAsNative(const std::string &path, QString &error);

    // Replaces the model section with a Hugging Face config.json (undoable).
    bool importModelConfig(const QString &path, LoadError &error);
    // Replaces the model section with one fetched from the Hugging Face Hub (undoable); the model
    // remembers its id (model.source).
    void useHubModel(const HubModelRef &ref, const ModelSpec &spec);

    // While a slider is dragged the estimate is provisional: each value's step model takes the
    // reserved-to-allocated ratio of the last settled estimate instead of replaying the step on
    // this thread (the first step and the steady one: 10-30 ms for a large model, twice a frame).
    // It settles when the drag ends or pauses for kSettleMs: the replayed model is built on a
    // worker thread and taken when it is done, unless the scenario changed meanwhile; changed()
    // says so.
    void setDragging(bool dragging);
    bool isProvisional() const { return m_provisional; }
    static constexpr int kSettleMs = 150;

Q_SIGNALS:
    // The scenario (and so the estimate) changed, by an edit, undo/redo, or a reset; or a
    // provisional estimate settled.
    void changed();
    void filePathChanged(const QString &path);
    void modifiedChanged(bool modified);

private:
    friend class ScenarioEditCommand;
    void apply(const Scenario &scenario);
    void recompute();
    void settle();
    void takeSettled();

    // What settling builds: the replayed step model and, with a pipeline, every stage's peak.
    struct Settled
    {
        std::shared_ptr<const StepModel> model;
        std::vector<PipelineStagePeak> stagePeaks;
    };
    static Settled buildModel(EstimateInput input, bool provisional, double settledRatio);

    PresetCatalog m_catalog;
    Scenario m_scenario;
    std::optional<EstimateInput> m_input;
    std::shared_ptr<const StepModel> m_model; // of m_input
    std::vector<PipelineStagePeak> m_stagePeaks;
    MemoryEstimate m_estimate;
    QString m_error;
    QString m_filePath;
    std::string m_nativePath;
    std::optional<Scenario> m_template; // the bundled (or default) scenario it started from
    QUndoStack m_undoStack;
    int m_lastMergeToken = 0;
    bool m_dragging = false;
    bool m_provisional = false;
    double m_settledRatio = 0; // the last settled estimate's reserve ratio; 0: none yet
    QTimer *m_settleTimer = nullptr;
    std::uint64_t m_generation = 0; // counts recomputes: a settled model of an older one is late
    std::uint64_t m_settlingGeneration = 0; // the generation being settled on the worker, or 0
    QFutureWatcher<Settled> m_settling;
};

} // namespace membudget
