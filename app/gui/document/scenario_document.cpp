// SPDX-License-Identifier: GPL-3.0-or-later
#include "document/scenario_document.h"

#include "document/file_writer.h"
#include "user_presets.h"

#include "document/scenario_name.h"

#include "io/hf_config_import.h"
#include "io/scenario_yaml.h"
#include "user_presets.h"

#include <QDir>
#include <QFileInfo>
#include <QStandardPaths>
#include <QUndoCommand>
#include <QtConcurrent/QtConcurrentRun>

#include <filesystem>

namespace membudget {

// One edit of the scenario: the whole value before and after (a Scenario is a few hundred bytes).
class ScenarioEditCommand : public QUndoCommand
{
public:
    ScenarioEditCommand(
        ScenarioDocument *doc, Scenario before, Scenario after, const QString &text, int mergeToken)
        : QUndoCommand(text)
        , m_doc(doc)
        , m_before(std::move(before))
        , m_after(std::move(after))
        , m_mergeToken(mergeToken)
    {}

    void undo() override { m_doc->apply(m_before); }
    void redo() override { m_doc->apply(m_after); }
    int id() const override { return m_mergeToken != 0 ? 1 : -1; }

    bool mergeWith(const QUndoCommand *other) override
    {
        const auto *o = static_cast<const ScenarioEditCommand *>(other);
        if (o->m_mergeToken != m_mergeToken)
            return false;
        m_after = o->m_after;
        setObsolete(m_after == m_before);
        return true;
    }

private:
    ScenarioDocument *m_doc;
    Scenario m_before;
    Scenario m_after;
    int m_mergeToken;
};

ScenarioDocument::ScenarioDocument(PresetCatalog catalog, QObject *parent)
    : QObject(parent)
    , m_catalog(std::move(catalog))
    , m_scenario(defaultScenario())
{
    connect(&m_undoStack, &QUndoStack::cleanChanged, this, [this](bool clean) {
        Q_EMIT modifiedChanged(!clean);
    });
    m_settleTimer = new QTimer(this);
    m_settleTimer->setSingleShot(true);
    m_settleTimer->setInterval(kSettleMs);
    connect(m_settleTimer, &QTimer::timeout, this, &ScenarioDocument::settle);
    connect(&m_settling, &QFutureWatcher<Settled>::finished, this, &ScenarioDocument::takeSettled);
    recompute();
}

ScenarioDocument::~ScenarioDocument()
{
    // The stack announces "clean" while it is destroyed; nobody should hear that.
    m_undoStack.blockSignals(true);
    blockSignals(true);
}

QString ScenarioDocument::userPresetFolder()
{
    return QString::fromStdString(membudget::userPresetFolder());
}

PresetCatalog ScenarioDocument::loadCatalog(std::vector<LoadError> *problems)
{
    std::vector<LoadError> errors;
    PresetCatalog catalog = membudget::loadCatalog(errors);
    if (problems)
        *problems = std::move(errors);
    return catalog;
}

const EstimateInput &ScenarioDocument::input() const
{
    static const EstimateInput empty{};
    return m_input ? *m_input : empty;
}

std::vector<GpuSpec> ScenarioDocument::selectedGpus() const
{
    std::vector<GpuSpec> out;
    for (const std::string &id : m_scenario.gpus)
        if (const GpuSpec *gpu = m_catalog.findGpu(id))
            out.push_back(*gpu);
    return out;
}

QString ScenarioDocument::displayName() const
{
    return m_filePath.isEmpty() ? scenarioName() : QFileInfo(m_filePath).fileName();
}

bool ScenarioDocument::hasOwnName() const
{
    if (m_scenario.name.empty())
        return false;
    // A template's own name describes the template's settings only.
    return !(m_template && m_scenario.name == m_template->name
             && !sameSettings(m_scenario, *m_template));
}

QString ScenarioDocument::scenarioName() const
{
    return hasOwnName() ? QString::fromStdString(m_scenario.name)
                        : derivedScenarioName(m_scenario, m_catalog);
}

void ScenarioDocument::rename(const QString &name)
{
    const std::string text = name.simplified().toStdString();
    edit(text.empty() ? tr("Forget the scenario's name") : tr("Rename to %1").arg(name.simplified()),
         [&text](Scenario &s) { s.name = text; });
}

Scenario ScenarioDocument::scenarioToSave() const
{
    Scenario s = m_scenario;
    if (!hasOwnName())
        s.name.clear();
    if (m_template && !sameSettings(s, *m_template)) {
        if (s.description == m_template->description)
            s.description.clear();
        if (s.expected_fits == m_template->expected_fits
            && s.expected_tight == m_template->expected_tight
            && s.expected_not_fits == m_template->expected_not_fits) {
            s.expected_fits.clear();
            s.expected_tight.clear();
            s.expected_not_fits.clear();
        }
    }
    return s;
}

void ScenarioDocument::edit(const QString &text,
                            const std::function<void(Scenario &)> &change,
                            int mergeToken)
{
    Scenario next = m_scenario;
    change(next);
    setScenario(next, text, mergeToken);
}

void ScenarioDocument::setScenario(const Scenario &scenario, const QString &text, int mergeToken)
{
    if (scenario == m_scenario)
        return;
    m_undoStack.push(new ScenarioEditCommand(this, m_scenario, scenario, text, mergeToken));
}

void ScenarioDocument::reset(const Scenario &scenario, const QString &filePath)
{
    m_undoStack.clear();
    m_nativePath = nativePath(filePath);
    m_scenario = scenario;
    m_template = filePath.isEmpty() ? std::optional<Scenario>(scenario) : std::nullopt;
    recompute();
    if (filePath != m_filePath) {
        m_filePath = filePath;
        Q_EMIT filePathChanged(m_filePath);
    }
    m_undoStack.setClean();
    Q_EMIT modifiedChanged(false);
    Q_EMIT changed();
}

bool ScenarioDocument::open(const QString &path, LoadError &error)
{
    return openNative(nativePath(path), error);
}

bool ScenarioDocument::openNative(const std::string &path, LoadError &error)
{
    auto scenario = loadScenarioFile(path, error, &m_catalog);
    if (!scenario)
        return false;
    std::error_code ec;
    const std::string absolute = std::filesystem::absolute(path, ec).lexically_normal().string();
    reset(*scenario, displayPath(ec ? path : absolute));
    m_nativePath = ec ? path : absolute;
    return true;
}

bool ScenarioDocument::saveAs(const QString &path, QString &error)
{
    return saveAsNative(nativePath(path), error);
}

bool ScenarioDocument::saveAsNative(const std::string &path, QString &error)
{
    // The file says what the scenario is now: a bundled name or description it outgrew is left out
    // (and so leaves the document too, without an undo step: nothing about the settings changed).
    const Scenario saved = scenarioToSave();
    const std::string text = scenarioToYaml(saved);
    if (!writeFileSafely(path, QByteArray::fromStdString(text), error))
        return false;
    const bool renamed = !(saved == m_scenario);
    m_scenario = saved;
    std::error_code ec;
    const std::string absolute = std::filesystem::absolute(path, ec).lexically_normal().string();
    m_nativePath = ec ? path : absolute;
    const QString shown = displayPath(m_nativePath);
    if (shown != m_filePath) {
        m_filePath = shown;
        Q_EMIT filePathChanged(m_filePath);
    }
    m_undoStack.setClean();
    if (renamed)
        Q_EMIT changed();
    return true;
}

bool ScenarioDocument::importModelConfig(const QString &path, LoadError &error)
{
    auto spec = importHfConfigFile(nativePath(path), error);
    if (!spec)
        return false;
    edit(tr("Import %1").arg(QFileInfo(path).fileName()), [&](Scenario &s) { s.model = *spec; });
    return true;
}

void ScenarioDocument::useHubModel(const HubModelRef &ref, const ModelSpec &spec)
{
    const std::string id = ref.toString();
    edit(tr("Use %1").arg(QString::fromStdString(id)), [&](Scenario &s) {
        s.model = spec;
        s.model.source = id;
    });
}

void ScenarioDocument::apply(const Scenario &scenario)
{
    m_scenario = scenario;
    recompute();
    Q_EMIT changed();
}

void ScenarioDocument::setDragging(bool dragging)
{
    m_dragging = dragging;
    if (!dragging)
        settle();
}

// The replayed model of the provisional one's scenario, on a worker thread (StepModel and the
// stage peaks are pure functions of their input); takeSettled() takes it on this one.
void ScenarioDocument::settle()
{
    m_settleTimer->stop();
    if (!m_provisional || !m_input || m_settlingGeneration == m_generation)
        return;
    m_settlingGeneration = m_generation;
    m_settling.setFuture(
        QtConcurrent::run([input = *m_input] { return buildModel(input, false, 0); }));
}

void ScenarioDocument::takeSettled()
{
    const bool current = m_settlingGeneration == m_generation && m_provisional;
    m_settlingGeneration = 0;
    if (!current) { // the scenario changed while it was built
        if (m_provisional && !m_dragging)
            settle();
        return;
    }
    Settled settled = m_settling.result();
    m_model = std::move(settled.model);
    m_stagePeaks = std::move(settled.stagePeaks);
    m_estimate = m_model->estimate();
    m_provisional = false;
    m_settledRatio = m_model->reserveRatio();
    Q_EMIT changed();
}

ScenarioDocument::Settled ScenarioDocument::buildModel(EstimateInput input,
                                                       bool provisional,
                                                       double settledRatio)
{
    Settled out;
    if (!provisional && input.parallelism.pipeline_parallel > 1) {
        out.stagePeaks = pipelineStagePeaks(input);
        if (input.pipeline_stage < 0)
            input.pipeline_stage = static_cast<std::int32_t>(worstStage(out.stagePeaks));
    }
    out.model = provisional ? std::make_shared<const StepModel>(input, settledRatio)
                            : std::make_shared<const StepModel>(input);
    return out;
}

void ScenarioDocument::recompute()
{
    std::string error;
    ++m_generation;
    m_input = resolveScenario(m_scenario, m_catalog, error);
    if (m_input) {
        // estimateMemory(), kept; during a drag without the replay (setDragging).
        m_provisional = m_dragging && m_settledRatio > 0;
        Settled built = buildModel(*m_input, m_provisional, m_settledRatio);
        m_model = std::move(built.model);
        m_stagePeaks = std::move(built.stagePeaks);
        m_estimate = m_model->estimate();
        if (m_provisional) {
            m_settleTimer->start();
        } else {
            m_settledRatio = m_model->reserveRatio();
            m_settleTimer->stop();
        }
        m_error.clear();
    } else {
        m_provisional = false;
        m_settleTimer->stop();
        m_model.reset();
        m_stagePeaks.clear();
        m_estimate = MemoryEstimate{};
        m_error = QString::fromStdString(error);
    }
}

} // namespace membudget
