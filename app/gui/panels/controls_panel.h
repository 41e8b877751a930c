// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The left-hand controls: model, training method and precision, batch and sequence, memory
// techniques, GPUs and parallelism, overheads. Every control writes through the document (one undo
// command per edit; a slider drag folds into one) and is refreshed from it.

#include "base/byte_format.h"

#include <QStringList>
#include <QWidget>

#include <cstdint>
#include <functional>
#include <vector>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLayout;
class QGroupBox;
class QLabel;
class QLineEdit;
class QListWidget;
class QPushButton;
class QSpinBox;

namespace membudget {

class CollapsibleSection;
class LogSliderSpin;
class SteppedSpinBox;
class ScenarioDocument;
struct Scenario;

class ControlsPanel : public QWidget
{
    Q_OBJECT
public:
    explicit ControlsPanel(ScenarioDocument *document, QWidget *parent = nullptr);

    // Shows the document's scenario (signals blocked).
    void syncFromDocument();

    LogSliderSpin *modelSizeSlider() const { return m_modelSize; }
    LogSliderSpin *microBatchSlider() const { return m_microBatch; }
    LogSliderSpin *sequenceSlider() const { return m_sequence; }

    // The snap values of the sequence-length slider: powers of two and common lengths.
    static std::vector<double> sequenceSnapValues();

    // Capacities in the GPU list in this unit.
    void setUnit(ByteUnit unit);

    // The sections (Model, Training, ...), each of which folds away; by object name.
    const QList<CollapsibleSection *> &sections() const { return m_sections; }
    QStringList collapsedSections() const;
    void setCollapsedSections(const QStringList &objectNames);

protected:
    bool eventFilter(QObject *watched, QEvent *event) override;
    void changeEvent(QEvent *event) override;

Q_SIGNALS:
    // A slider is held (true) or released (false): the chart keeps its axis meanwhile.
    void dragStateChanged(bool dragging);
    void importConfigRequested();
    // A Hugging Face id or address was typed in the model search and Enter pressed.
    void hubModelRequested(const QString &text);
    void collapsedSectionsChanged(const QStringList &objectNames);

private:
    QWidget *buildModelGroup();
    QWidget *buildTrainingGroup();
    QWidget *buildLoraGroup();
    QWidget *buildBatchGroup();
    QWidget *buildTechniquesGroup();
    QWidget *buildParallelGroup();
    void addPipelineRow(QFormLayout *form);
    void addPipelineLayersRow(QFormLayout *form);
    static QString pipelineLayersText(const std::vector<std::int64_t> &layers);
    QWidget *buildOverheadGroup();
    void connectSlider(LogSliderSpin *slider,
                       const QString &text,
                       void (*apply)(Scenario &, double));
    void edit(const QString &text,
              const std::function<void(Scenario &)> &change,
              bool fromSlider = false);
    // A check box that sets one flag of the scenario through `apply`, as one undoable edit.
    QCheckBox *flagBox(const char *objectName,
                       const QString &text,
                       const QString &tip,
                       const QString &undoText,
                       void (*apply)(Scenario &, bool));
    void editArchitecture();
    void fillGpuList();
    void filterGpus(const QString &text);
    void updateModelInfo();
    void modelTextEntered();
    void showModelHint(const QString &text);
    CollapsibleSection *addSection(const QString &title, const char *objectName);

    ScenarioDocument *m_doc;
    int m_dragToken = 0;
    bool m_syncing = false;
    ByteUnit m_unit = ByteUnit::GiB;
    QList<CollapsibleSection *> m_sections;
    QFormLayout *m_trainingForm = nullptr;
    QFormLayout *m_batchForm = nullptr;
    QFormLayout *m_techniquesForm = nullptr;

    QComboBox *m_model = nullptr;
    LogSliderSpin *m_modelSize = nullptr;
    QLabel *m_modelInfo = nullptr;
    QLabel *m_modelHint = nullptr;
    QPushButton *m_architecture = nullptr;
    QPushButton *m_importConfig = nullptr;

    QComboBox *m_mode = nullptr;
    QComboBox *m_method = nullptr;
    CollapsibleSection *m_loraGroup = nullptr;
    QSpinBox *m_loraRank = nullptr;
    QDoubleSpinBox *m_loraAlpha = nullptr;
    QDoubleSpinBox *m_loraDropout = nullptr;
    QList<QCheckBox *> m_loraTargets;
    QComboBox *m_adapterPrecision = nullptr;
    QComboBox *m_stack = nullptr;
    QComboBox *m_torch = nullptr;
    QCheckBox *m_dora = nullptr;
    QCheckBox *m_optimizerInBackward = nullptr;
    QCheckBox *m_float8 = nullptr;
    QCheckBox *m_activationOffloading = nullptr;
    QCheckBox *m_useCache = nullptr;
    QCheckBox *m_trainerMixedPrecision = nullptr;
    QComboBox *m_precision = nullptr;
    QComboBox *m_quantization = nullptr;
    QComboBox *m_optimizer = nullptr;

    LogSliderSpin *m_microBatch = nullptr;
    LogSliderSpin *m_sequence = nullptr;
    QSpinBox *m_accumulation = nullptr;
    QLabel *m_effectiveBatch = nullptr;
    QLabel *m_contextWarning = nullptr;
    QSpinBox *m_generated = nullptr;
    QComboBox *m_kvCache = nullptr;
    QComboBox *m_kvDtype = nullptr;

    QComboBox *m_checkpointing = nullptr;
    QSpinBox *m_checkpointEvery = nullptr;
    QLayout *m_checkpointingRow = nullptr;
    QComboBox *m_attention = nullptr;
    QComboBox *m_batchPadding = nullptr;
    QComboBox *m_loss = nullptr;
    QCheckBox *m_offloadOptimizer = nullptr;
    QCheckBox *m_offloadParameters = nullptr;
    QLayout *m_offloadRow = nullptr;

    QSpinBox *m_gpuCount = nullptr;
    QComboBox *m_sharding = nullptr;
    SteppedSpinBox *m_tensorParallel = nullptr;
    SteppedSpinBox *m_contextParallel = nullptr;
    SteppedSpinBox *m_pipelineParallel = nullptr;
    QComboBox *m_pipelineSchedule = nullptr;
    QSpinBox *m_pipelineChunks = nullptr;
    QLineEdit *m_pipelineLayers = nullptr;
    QCheckBox *m_sequenceParallel = nullptr;
    QCheckBox *m_lossParallel = nullptr;
    SteppedSpinBox *m_shardGroup = nullptr;
    QLineEdit *m_gpuFilter = nullptr;
    QListWidget *m_gpuList = nullptr;

    QDoubleSpinBox *m_cudaContext = nullptr;
    QDoubleSpinBox *m_nccl = nullptr;
    QDoubleSpinBox *m_reserve = nullptr;
};

} // namespace membudget
