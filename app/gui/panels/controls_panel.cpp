// SPDX-License-Identifier: GPL-3.0-or-later
#include "panels/controls_panel.h"

#include "panels/dataset_box.h"

#include "widgets/stepped_spin_box.h"

#include "charts/chart_theme.h"
#include "widgets/collapsible_section.h"

#include "base/byte_format.h"
#include "dialogs/architecture_dialog.h"
#include "document/scenario_document.h"
#include "hub/hub_model_ref.h"
#include "model/stack_profile.h"
#include "model/torch_release.h"
#include "widgets/log_slider.h"
#include "widgets/steady_label.h"

#include <QCheckBox>
#include <QComboBox>
#include <QCompleter>
#include <QCoreApplication>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QLocale>
#include <QPushButton>
#include <QRegularExpression>
#include <QRegularExpressionValidator>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QVBoxLayout>

#include <cmath>
#include <memory>

namespace membudget {

namespace {

struct EnumLabel
{
    const char *name;  // the core's name (scenario files)
    const char *label; // for people
};

const EnumLabel kModeLabels[] = {{"train", QT_TRANSLATE_NOOP("Controls", "Training")},
                                 {"inference", QT_TRANSLATE_NOOP("Controls", "Inference")}};
const EnumLabel kMethodLabels[] = {{"full", QT_TRANSLATE_NOOP("Controls", "Full fine-tuning")},
                                   {"lora", QT_TRANSLATE_NOOP("Controls", "LoRA")},
                                   {"qlora",
                                    QT_TRANSLATE_NOOP("Controls", "QLoRA (quantized base)")},
                                   {"ia3", QT_TRANSLATE_NOOP("Controls", "IA3 (scaling vectors)")}};
const EnumLabel kPrecisionLabels[]
    = {{"fp32", QT_TRANSLATE_NOOP("Controls", "fp32")},
       {"amp-bf16", QT_TRANSLATE_NOOP("Controls", "AMP bf16 (fp32 weights, autocast)")},
       {"amp-fp16", QT_TRANSLATE_NOOP("Controls", "AMP fp16 (fp32 weights, autocast)")},
       {"bf16", QT_TRANSLATE_NOOP("Controls", "bf16 (pure 16-bit)")},
       {"fp16", QT_TRANSLATE_NOOP("Controls", "fp16 (pure 16-bit)")},
       {"mixed-bf16", QT_TRANSLATE_NOOP("Controls", "Mixed bf16 (fp32 master copy)")},
       {"mixed-fp16", QT_TRANSLATE_NOOP("Controls", "Mixed fp16 (fp32 master copy)")}};
const EnumLabel kQuantizationLabels[]
    = {{"none", QT_TRANSLATE_NOOP("Controls", "None")},
       {"int8", QT_TRANSLATE_NOOP("Controls", "int8 (LLM.int8)")},
       {"nf4", QT_TRANSLATE_NOOP("Controls", "NF4 (4-bit)")},
       {"nf4-double", QT_TRANSLATE_NOOP("Controls", "NF4 + double quantization")},
       {"fp4", QT_TRANSLATE_NOOP("Controls", "FP4 (bitsandbytes)")},
       {"fp4-double", QT_TRANSLATE_NOOP("Controls", "FP4 + double quantization")},
       {"gptq", QT_TRANSLATE_NOOP("Controls", "GPTQ 4-bit, group 128")},
       {"awq", QT_TRANSLATE_NOOP("Controls", "AWQ 4-bit, group 128")},
       {"fp8", QT_TRANSLATE_NOOP("Controls", "FP8 (e4m3, per-channel scales)")},
       {"hqq", QT_TRANSLATE_NOOP("Controls", "HQQ 4-bit, group 64")},
       {"torchao-int4", QT_TRANSLATE_NOOP("Controls", "torchao int4 weight-only")},
       {"torchao-int8", QT_TRANSLATE_NOOP("Controls", "torchao int8 weight-only")},
       {"q4_k", QT_TRANSLATE_NOOP("Controls", "llama.cpp Q4_K (inference)")},
       {"q5_k", QT_TRANSLATE_NOOP("Controls", "llama.cpp Q5_K (inference)")},
       {"q6_k", QT_TRANSLATE_NOOP("Controls", "llama.cpp Q6_K (inference)")},
       {"q8_0", QT_TRANSLATE_NOOP("Controls", "llama.cpp Q8_0 (inference)")}};
const EnumLabel kKvCacheLabels[]
    = {{"dynamic", QT_TRANSLATE_NOOP("Controls", "Dynamic (grows with torch.cat)")},
       {"static", QT_TRANSLATE_NOOP("Controls", "Static (prompt + generated, allocated once)")},
       {"quantized", QT_TRANSLATE_NOOP("Controls", "Quantized 4-bit (quanto)")},
       {"legacy", QT_TRANSLATE_NOOP("Controls", "Legacy tuples (old and new held per step)")}};
const EnumLabel kKvDtypeLabels[] = {{"model", QT_TRANSLATE_NOOP("Controls", "Model dtype")},
                                    {"fp8", QT_TRANSLATE_NOOP("Controls", "fp8")}};
const EnumLabel kOptimizerLabels[]
    = {{"adamw", QT_TRANSLATE_NOOP("Controls", "AdamW")},
       {"adamw-8bit", QT_TRANSLATE_NOOP("Controls", "AdamW 8-bit")},
       {"paged-adamw", QT_TRANSLATE_NOOP("Controls", "Paged AdamW")},
       {"paged-adamw-8bit", QT_TRANSLATE_NOOP("Controls", "Paged AdamW 8-bit")},
       {"sgd", QT_TRANSLATE_NOOP("Controls", "SGD")},
       {"sgd-momentum", QT_TRANSLATE_NOOP("Controls", "SGD with momentum")},
       {"adafactor", QT_TRANSLATE_NOOP("Controls", "Adafactor")},
       {"lion", QT_TRANSLATE_NOOP("Controls", "Lion")},
       {"adamw-fused", QT_TRANSLATE_NOOP("Controls", "AdamW (fused)")}};
const EnumLabel kLossLabels[]
    = {{"hf", QT_TRANSLATE_NOOP("Controls", "Transformers (fp32 upcast)")},
       {"hf-legacy", QT_TRANSLATE_NOOP("Controls", "Transformers < 4.46 (keeps fp32 logits)")},
       {"chunked", QT_TRANSLATE_NOOP("Controls", "Chunked cross-entropy")},
       {"hf-4.46", QT_TRANSLATE_NOOP("Controls", "Transformers 4.46-4.48 (shifted fp32 copy)")},
       {"liger-fused", QT_TRANSLATE_NOOP("Controls", "Liger fused linear cross-entropy")},
       {"torchtune-chunked", QT_TRANSLATE_NOOP("Controls", "torchtune chunked (keeps fp32 chunks)")},
       {"no-upcast", QT_TRANSLATE_NOOP("Controls", "Model's own, no fp32 upcast (Qwen v1)")},
       {"fp32-output",
        QT_TRANSLATE_NOOP("Controls", "fp32 model output, dropped (torchtitan, 2024)")},
       {"fp32-output-kept",
        QT_TRANSLATE_NOOP("Controls", "fp32 model output, kept (torchtitan, early 2024)")},
       {"trl-chunked-nll",
        QT_TRANSLATE_NOOP("Controls", "TRL chunked NLL (256-token chunks, recomputed)")}};
const EnumLabel kStackLabels[]
    = {{"plain-torch", QT_TRANSLATE_NOOP("Controls", "Plain PyTorch")},
       {"hf-trainer", QT_TRANSLATE_NOOP("Controls", "Hugging Face Trainer")},
       {"trl-sft", QT_TRANSLATE_NOOP("Controls", "TRL SFTTrainer")},
       {"accelerate-fsdp", QT_TRANSLATE_NOOP("Controls", "Accelerate + FSDP")},
       {"deepspeed", QT_TRANSLATE_NOOP("Controls", "DeepSpeed")},
       {"torchtune", QT_TRANSLATE_NOOP("Controls", "torchtune")},
       {"torchtitan", QT_TRANSLATE_NOOP("Controls", "torchtitan")}};
const EnumLabel kCheckpointingLabels[]
    = {{"none", QT_TRANSLATE_NOOP("Controls", "Off")},
       {"full", QT_TRANSLATE_NOOP("Controls", "Full (whole layers)")},
       {"selective", QT_TRANSLATE_NOOP("Controls", "Selective (attention)")},
       {"op-selective", QT_TRANSLATE_NOOP("Controls", "Op-level (keeps matmul outputs)")}};
const EnumLabel kAttentionLabels[] = {{"eager",
                                       QT_TRANSLATE_NOOP("Controls", "Eager (stores scores)")},
                                      {"sdpa", QT_TRANSLATE_NOOP("Controls", "SDPA (PyTorch)")},
                                      {"flash", QT_TRANSLATE_NOOP("Controls", "FlashAttention")}};
const EnumLabel kBatchPaddingLabels[]
    = {{"none", QT_TRANSLATE_NOOP("Controls", "Equal lengths (no mask)")},
       {"padded", QT_TRANSLATE_NOOP("Controls", "Padded to the longest")},
       {"packed", QT_TRANSLATE_NOOP("Controls", "Packed (padding-free)")}};
const EnumLabel kShardingLabels[]
    = {{"none", QT_TRANSLATE_NOOP("Controls", "None (DDP replicas)")},
       {"zero1", QT_TRANSLATE_NOOP("Controls", "ZeRO-1 (optimizer states)")},
       {"zero2", QT_TRANSLATE_NOOP("Controls", "ZeRO-2 (+ gradients)")},
       {"zero3", QT_TRANSLATE_NOOP("Controls", "ZeRO-3 (+ parameters)")},
       {"fsdp-full", QT_TRANSLATE_NOOP("Controls", "FSDP full shard")},
       {"fsdp-grad-op", QT_TRANSLATE_NOOP("Controls", "FSDP shard grad op")}};
const EnumLabel kPipelineScheduleLabels[] = {{"1f1b", QT_TRANSLATE_NOOP("Controls", "1F1B")},
                                             {"gpipe", QT_TRANSLATE_NOOP("Controls", "GPipe")},
                                             {"interleaved-1f1b",
                                              QT_TRANSLATE_NOOP("Controls", "Interleaved 1F1B")}};
const EnumLabel kAdapterLabels[] = {{"fp32", QT_TRANSLATE_NOOP("Controls", "fp32 (PEFT default)")},
                                    {"base", QT_TRANSLATE_NOOP("Controls", "Training precision")}};

QString precisionTip()
{
    return QCoreApplication::translate("Controls",
                                       "Bytes per weight, gradient and optimizer state, and the "
                                       "dtype activations are saved in. Mixed precision adds a "
                                       "4-byte master copy per trainable parameter.");
}

QString precisionUnderDeepSpeedTip()
{
    return QCoreApplication::translate("Controls",
                                       "DeepSpeed's ZeRO optimizer keeps a master copy of what "
                                       "trains: fp32 with mixed precision; bf16 with its bf16 "
                                       "master weights and optimizer states (DeepSpeed 0.18.3); "
                                       "pure fp16 has no DeepSpeed setting and trains as mixed "
                                       "fp16; under the Trainer its bf16/fp16 flag only turns "
                                       "DeepSpeed's bf16/fp16 on, so AMP and pure 16-bit weights "
                                       "train as mixed precision (bf16 masters where the "
                                       "scenario's DeepSpeed settings ask). The scenario keeps "
                                       "its choice for other sharding");
}

QString adapterPrecisionTip()
{
    return QCoreApplication::translate("Controls",
                                       "PEFT keeps adapters in fp32 on a 16-bit base; torchtune "
                                       "keeps them in the training precision");
}

template<std::size_t N>
QComboBox *enumCombo(const char *objectName, const EnumLabel (&labels)[N], const QString &tip)
{
    auto *combo = new QComboBox;
    combo->setObjectName(QLatin1String(objectName));
    for (const EnumLabel &l : labels)
        combo->addItem(QCoreApplication::translate("Controls", l.label),
                       QString::fromLatin1(l.name));
    combo->setToolTip(tip);
    return combo;
}

void selectName(QComboBox *combo, const char *name)
{
    const QSignalBlocker block(combo);
    combo->setCurrentIndex(combo->findData(QString::fromLatin1(name)));
}

std::string comboName(const QComboBox *combo)
{
    return combo->currentData().toString().toStdString();
}

QSpinBox *intSpin(const char *objectName, int min, int max, const QString &tip)
{
    auto *spin = new QSpinBox;
    spin->setObjectName(QLatin1String(objectName));
    spin->setRange(min, max);
    spin->setGroupSeparatorShown(true);
    spin->setKeyboardTracking(false);
    spin->setAccelerated(true);
    spin->setToolTip(tip);
    return spin;
}

QDoubleSpinBox *doubleSpin(
    const char *objectName, double min, double max, int decimals, double step, const QString &tip)
{
    auto *spin = new QDoubleSpinBox;
    spin->setObjectName(QLatin1String(objectName));
    spin->setRange(min, max);
    spin->setDecimals(decimals);
    spin->setSingleStep(step);
    spin->setKeyboardTracking(false);
    spin->setToolTip(tip);
    return spin;
}

QFormLayout *formLayout(QWidget *parent)
{
    auto *form = new QFormLayout(parent);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form->setLabelAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    form->setRowWrapPolicy(QFormLayout::DontWrapRows);
    return form;
}

// Shows or hides a form's row only when that changes: QFormLayout::setRowVisible shows every
// widget of a row's layout again, even a shown row's, which undid a widget hidden inside it (hidden
// again just after) and laid the panel out again at every slider value.
template<typename Item>
void setRowShown(QFormLayout *form, Item *item, bool shown)
{
    if (form->isRowVisible(item) != shown)
        form->setRowVisible(item, shown);
}

QLabel *noteLabel()
{
    auto *label = new QLabel;
    label->setWordWrap(true);
    QFont f = label->font();
    f.setPointSizeF(f.pointSizeF() * 0.9);
    label->setFont(f);
    return label;
}

// A label's text colour, kept when the application's palette changes (set again on each change).
void setTextColor(QLabel *label, const QColor &color)
{
    QPalette p = label->palette();
    if (p.color(QPalette::WindowText) == color)
        return;
    p.setColor(QPalette::WindowText, color);
    label->setPalette(p);
}

const LoraTarget kTargets[] = {TargetQ, TargetK, TargetV, TargetO, TargetGate, TargetUp, TargetDown};

} // namespace

ControlsPanel::ControlsPanel(ScenarioDocument *document, QWidget *parent)
    : QWidget(parent)
    , m_doc(document)
{
    setObjectName(QStringLiteral("controlsPanel"));
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(8, 8, 8, 8);
    layout->setSpacing(10);
    // The controls people change most first (model, method, precision, micro-batch, sequence): on a
    // 1366 x 768 screen they are in view without scrolling. Every section folds away.
    layout->addWidget(buildModelGroup());
    layout->addWidget(buildTrainingGroup());
    layout->addWidget(buildBatchGroup());
    layout->addWidget(buildLoraGroup());
    layout->addWidget(buildTechniquesGroup());
    layout->addWidget(buildParallelGroup());
    layout->addWidget(new DatasetBox(m_doc)); // syncs itself from the document
    layout->addWidget(buildOverheadGroup());
    layout->addStretch(1);
    // The mouse wheel scrolls the panel; a control takes it only once it has the focus (a click or
    // Tab), so that scrolling past a combo box does not change it.
    for (QWidget *w : findChildren<QWidget *>()) {
        if (qobject_cast<QComboBox *>(w) || qobject_cast<QAbstractSpinBox *>(w)
            || qobject_cast<QAbstractSlider *>(w)) {
            w->setFocusPolicy(Qt::StrongFocus);
            w->installEventFilter(this);
        }
    }
    connect(m_doc, &ScenarioDocument::changed, this, &ControlsPanel::syncFromDocument);
    syncFromDocument();
}

bool ControlsPanel::eventFilter(QObject *watched, QEvent *event)
{
    if (event->type() == QEvent::Wheel) {
        auto *w = qobject_cast<QWidget *>(watched);
        if (w && !w->hasFocus()) {
            // Not for the control: for the scroll area around the panel, which scrolls.
            for (QWidget *p = parentWidget(); p; p = p->parentWidget()) {
                if (auto *area = qobject_cast<QAbstractScrollArea *>(p)) {
                    QCoreApplication::sendEvent(area->viewport(), event);
                    return true;
                }
            }
            event->ignore();
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

CollapsibleSection *ControlsPanel::addSection(const QString &title, const char *objectName)
{
    auto *section = new CollapsibleSection(title);
    section->setObjectName(QLatin1String(objectName));
    connect(section, &CollapsibleSection::expandedChanged, this, [this](bool) {
        Q_EMIT collapsedSectionsChanged(collapsedSections());
    });
    m_sections << section;
    return section;
}

QStringList ControlsPanel::collapsedSections() const
{
    QStringList names;
    for (const CollapsibleSection *section : m_sections)
        if (!section->isExpanded())
            names << section->objectName();
    return names;
}

void ControlsPanel::setCollapsedSections(const QStringList &names)
{
    for (CollapsibleSection *section : m_sections) {
        const QSignalBlocker block(section);
        section->setExpanded(!names.contains(section->objectName()));
    }
}

void ControlsPanel::setUnit(ByteUnit unit)
{
    if (unit == m_unit)
        return;
    m_unit = unit;
    fillGpuList();
    syncFromDocument();
}

std::vector<double> ControlsPanel::sequenceSnapValues()
{
    std::vector<double> v;
    for (double p = 128; p <= 1048576; p *= 2)
        v.push_back(p);
    // Common context lengths between the powers of two.
    for (double c :
         {1000.0, 1536.0, 3072.0, 6144.0, 12288.0, 24576.0, 100000.0, 200000.0, 1000000.0})
        v.push_back(c);
    std::sort(v.begin(), v.end());
    return v;
}

QCheckBox *ControlsPanel::flagBox(const char *objectName,
                                  const QString &text,
                                  const QString &tip,
                                  const QString &undoText,
                                  void (*apply)(Scenario &, bool))
{
    auto *box = new QCheckBox(text);
    box->setObjectName(QLatin1String(objectName));
    box->setToolTip(tip);
    connect(box, &QCheckBox::toggled, this, [this, undoText, apply](bool on) {
        edit(undoText, [apply, on](Scenario &s) { apply(s, on); });
    });
    return box;
}

void ControlsPanel::edit(const QString &text,
                         const std::function<void(Scenario &)> &change,
                         bool fromSlider)
{
    if (m_syncing)
        return;
    // An adapter dtype the stack chose follows the stack for the edited settings (TRL's sharded
    // QLoRA keeps adapters in the model dtype).
    const auto followed = [change](Scenario &s) {
        const TrainingConfig before = s.training;
        const ParallelismConfig parallelBefore = s.parallelism;
        change(s);
        followStackAdapterPrecision(before, parallelBefore, s.training, s.parallelism);
    };
    m_doc->edit(text, followed, fromSlider ? m_dragToken : 0);
}

// Pipeline parallelism: stages, the schedule, and chunks per GPU for interleaved 1F1B.
void ControlsPanel::addPipelineRow(QFormLayout *form)
{
    m_pipelineParallel = new SteppedSpinBox;
    m_pipelineParallel->setObjectName(QStringLiteral("pipelineParallel"));
    m_pipelineParallel->setRange(1, 1024);
    m_pipelineParallel->setKeyboardTracking(false);
    m_pipelineParallel->setSuffix(tr(" stages"));
    m_pipelineParallel->setSpecialValueText(tr("1 stage"));
    m_pipelineParallel->setToolTip(
        tr("Pipeline parallelism: the layers are split into this many stages, each on its own "
           "GPUs; the first also holds the embedding, the last lm_head and the loss. The step's "
           "micro-batches (gradient accumulation) flow through them, and the figures are those "
           "of the stage that allocates the most."));
    connect(m_pipelineParallel, &QSpinBox::valueChanged, this, [this](int v) {
        edit(tr("Change pipeline parallelism"), [v](Scenario &s) {
            s.parallelism.pipeline_parallel = v;
            s.parallelism.pipeline_layers.clear(); // a split by hand is for its own stage count
        });
    });
    m_pipelineSchedule = enumCombo(
        "pipelineSchedule",
        kPipelineScheduleLabels,
        tr("The order of forwards and backwards. GPipe runs every micro-batch forward before "
           "any backward, so each stage holds all of their activations; 1F1B alternates once "
           "the pipeline is full (the first stage holds as many micro-batches as there are "
           "stages); interleaved 1F1B gives each GPU several chunks of layers for a smaller "
           "bubble at a little more memory."));
    connect(m_pipelineSchedule, &QComboBox::activated, this, [this] {
        const std::string name = comboName(m_pipelineSchedule);
        edit(tr("Change pipeline schedule"),
             [name](Scenario &s) { parsePipelineSchedule(name, s.parallelism.pipeline_schedule); });
    });
    m_pipelineChunks = intSpin("pipelineChunks",
                               2,
                               64,
                               tr("Interleaved 1F1B: chunks of layers (virtual stages) per GPU."));
    m_pipelineChunks->setSuffix(tr(" chunks"));
    connect(m_pipelineChunks, &QSpinBox::valueChanged, this, [this](int v) {
        edit(tr("Change pipeline chunks"),
             [v](Scenario &s) { s.parallelism.pipeline_virtual_stages = v; });
    });
    auto *row = new QHBoxLayout;
    row->addWidget(m_pipelineParallel, 1);
    row->addWidget(m_pipelineSchedule, 2);
    row->addWidget(m_pipelineChunks, 1);
    auto *label = new QLabel(tr("&Pipeline:"));
    label->setBuddy(m_pipelineParallel);
    form->addRow(label, row);
    addPipelineLayersRow(form);
}

// Decoder layers per stage set by hand ("7, 9, 9, 7"); empty for the even split.
void ControlsPanel::addPipelineLayersRow(QFormLayout *form)
{
    m_pipelineLayers = new QLineEdit;
    m_pipelineLayers->setObjectName(QStringLiteral("pipelineLayers"));
    m_pipelineLayers->setPlaceholderText(tr("even split"));
    m_pipelineLayers->setClearButtonEnabled(true);
    // Counts of up to six digits, split by commas or spaces: every word the field takes parses.
    m_pipelineLayers->setValidator(
        new QRegularExpressionValidator(QRegularExpression(
                                            QStringLiteral("([0-9]{1,6}([ ,]+[0-9]{1,6})*[ ,]*)?")),
                                        m_pipelineLayers));
    m_pipelineLayers->setToolTip(
        tr("Decoder layers of each stage, first to last, where the split is not even, e.g. "
           "Megatron-LM's first and last stages with fewer layers: 7, 9, 9, 7. One count per "
           "stage, adding up to the model's layers. Empty: an even split."));
    connect(m_pipelineLayers, &QLineEdit::editingFinished, this, [this] {
        // Every count as typed, zeros too: the core says what is wrong with the split (a stage
        // without layers, a sum that is not the model's) where the verdict shows problems.
        std::vector<std::int64_t> layers;
        static const QRegularExpression separators(QStringLiteral("[ ,]+"));
        for (const QString &part : m_pipelineLayers->text().split(separators, Qt::SkipEmptyParts))
            layers.push_back(part.toLongLong());
        if (layers == m_doc->scenario().parallelism.pipeline_layers)
            return;
        edit(tr("Change layers per pipeline stage"),
             [layers](Scenario &s) { s.parallelism.pipeline_layers = layers; });
    });
    auto *label = new QLabel(tr("Stage &layers:"));
    label->setBuddy(m_pipelineLayers);
    form->addRow(label, m_pipelineLayers);
}

QString ControlsPanel::pipelineLayersText(const std::vector<std::int64_t> &layers)
{
    QStringList parts;
    for (const std::int64_t n : layers)
        parts << QString::number(n);
    return parts.join(QStringLiteral(", "));
}

void ControlsPanel::connectSlider(LogSliderSpin *slider,
                                  const QString &text,
                                  void (*apply)(Scenario &, double))
{
    connect(slider, &LogSliderSpin::dragStarted, this, [this] {
        m_dragToken = m_doc->newMergeToken();
        Q_EMIT dragStateChanged(true);
    });
    connect(slider, &LogSliderSpin::dragFinished, this, [this] {
        m_dragToken = 0;
        Q_EMIT dragStateChanged(false);
    });
    connect(slider, &LogSliderSpin::valueEdited, this, [this, slider, text, apply](double v) {
        edit(
            text, [apply, v](Scenario &s) { apply(s, v); }, slider->isSliderDown());
    });
}

QWidget *ControlsPanel::buildModelGroup()
{
    CollapsibleSection *group = addSection(tr("Model"), "sectionModel");
    auto *form = formLayout(group->content());

    m_model = new QComboBox;
    m_model->setObjectName(QStringLiteral("modelPreset"));
    m_model->setEditable(true);
    m_model->setInsertPolicy(QComboBox::NoInsert);
    m_model->setMaxVisibleItems(20);
    m_model->setToolTip(
        tr("The model whose weights, gradients, optimizer states and activations are estimated. "
           "Type to search the presets, or type a Hugging Face id (owner/name) or paste a model "
           "page's address and press Enter to fetch its config.json."));
    m_model->addItem(tr("Custom model"), QString());
    for (const ModelPreset &preset : m_doc->catalog().models())
        m_model->addItem(QString::fromStdString(preset.name), QString::fromStdString(preset.id));
    auto *completer = new QCompleter(m_model->model(), m_model);
    completer->setFilterMode(Qt::MatchContains);
    completer->setCaseSensitivity(Qt::CaseInsensitive);
    completer->setCompletionMode(QCompleter::PopupCompletion);
    m_model->setCompleter(completer);
    connect(m_model, &QComboBox::activated, this, [this](int index) {
        const QString id = m_model->itemData(index).toString();
        if (id.isEmpty()) {
            // "Custom model": quick mode at the current size.
            const double params = m_doc->valid() ? static_cast<double>(m_doc->estimate().parameters)
                                                 : 7e9;
            edit(tr("Custom model"), [params](Scenario &s) {
                s.model = ModelSpec{};
                s.model.parameters = params;
            });
            return;
        }
        edit(tr("Choose model %1").arg(m_model->itemText(index)), [id](Scenario &s) {
            s.model = ModelSpec{};
            s.model.preset = id.toStdString();
        });
    });
    connect(m_model->lineEdit(), &QLineEdit::returnPressed, this, [this] {
        // A Hugging Face id or address that is not the model in use: fetch it.
        const QString text = m_model->currentText().trimmed();
        if (m_model->findText(text) >= 0
            || text == QString::fromStdString(m_doc->scenario().model.source)
            || !looksLikeHubReference(text.toStdString()))
            return;
        syncFromDocument();
        Q_EMIT hubModelRequested(text);
    });
    connect(m_model->lineEdit(),
            &QLineEdit::editingFinished,
            this,
            &ControlsPanel::modelTextEntered);
    form->addRow(tr("&Preset:"), m_model);
    m_modelHint = noteLabel();
    m_modelHint->setObjectName(QStringLiteral("modelHint"));
    m_modelHint->setTextFormat(Qt::PlainText);
    m_modelHint->setVisible(false);
    form->addRow(m_modelHint);

    m_modelSize = new LogSliderSpin(0.1, 1000.0, 2, 2);
    m_modelSize->setObjectName(QStringLiteral("modelSize"));
    m_modelSize->setSuffix(tr(" B"));
    m_modelSize->setToolTip(
        tr("Quick mode: a Llama-shaped model with this many billion parameters. Weights, gradients "
           "and optimizer states grow linearly with it."));
    m_modelSize->slider()->setToolTip(m_modelSize->toolTip());
    m_modelSize->spinBox()->setToolTip(m_modelSize->toolTip());
    connectSlider(m_modelSize, tr("Change model size"), [](Scenario &s, double v) {
        s.model = ModelSpec{};
        s.model.parameters = v * 1e9;
    });
    form->addRow(tr("Si&ze:"), m_modelSize);

    m_modelInfo = noteLabel();
    m_modelInfo->setObjectName(QStringLiteral("modelInfo"));
    form->addRow(m_modelInfo);

    m_architecture = new QPushButton(tr("&Architecture…"));
    m_architecture->setObjectName(QStringLiteral("editArchitecture"));
    m_architecture->setToolTip(
        tr("Edit every field of the architecture (layers, widths, heads, vocabulary, experts…)"));
    connect(m_architecture, &QPushButton::clicked, this, &ControlsPanel::editArchitecture);
    m_importConfig = new QPushButton(tr("Import config.json…"));
    m_importConfig->setObjectName(QStringLiteral("importConfig"));
    m_importConfig->setToolTip(tr("Read the architecture from a Hugging Face config.json"));
    connect(m_importConfig, &QPushButton::clicked, this, &ControlsPanel::importConfigRequested);
    auto *buttons = new QHBoxLayout;
    buttons->addWidget(m_architecture);
    buttons->addWidget(m_importConfig);
    form->addRow(buttons);
    return group;
}

QWidget *ControlsPanel::buildTrainingGroup()
{
    CollapsibleSection *group = addSection(tr("Training"), "sectionTraining");
    auto *form = formLayout(group->content());
    m_trainingForm = form;

    m_mode = enumCombo("mode",
                       kModeLabels,
                       tr("Training keeps gradients, optimizer states and activations for "
                          "backward; inference needs the "
                          "weights and the KV cache."));
    connect(m_mode, &QComboBox::activated, this, [this] {
        const std::string name = comboName(m_mode);
        edit(tr("Change mode"), [name](Scenario &s) {
            parseMode(name, s.training.mode);
            // A quantized base in training is QLoRA only.
            if (s.training.mode == Mode::Train && s.training.method != Method::Qlora)
                s.training.quantization = Quantization::None;
            // Inference keeps no fp32 master copy: mixed precision serves as its 16-bit weights.
            if (s.training.mode == Mode::Inference && isMixedMaster(s.training.precision))
                s.training.precision = s.training.precision == Precision::MixedBf16
                                           ? Precision::Bf16
                                           : Precision::Fp16;
        });
    });
    form->addRow(tr("&Mode:"), m_mode);

    m_method = enumCombo(
        "method",
        kMethodLabels,
        tr("Full fine-tuning trains every weight (gradients and optimizer states for all of them); "
           "LoRA "
           "trains small adapters on a frozen base; QLoRA also stores the frozen base in 4 bits."));
    connect(m_method, &QComboBox::activated, this, [this] {
        const std::string name = comboName(m_method);
        edit(tr("Change method"), [name](Scenario &s) {
            parseMethod(name, s.training.method);
            if (s.training.method == Method::Qlora && s.training.quantization == Quantization::None)
                s.training.quantization = Quantization::Nf4;
            if (s.training.method != Method::Qlora && s.training.method != Method::Ia3
                && s.training.mode == Mode::Train)
                s.training.quantization = Quantization::None;
        });
    });
    form->addRow(tr("Me&thod:"), m_method);

    m_stack = enumCombo("stack",
                        kStackLabels,
                        tr("The library that runs the step: picking one sets the optimizer, loss, "
                           "checkpointing and sharding the way it does (newest known version); "
                           "each control below still overrides"));
    connect(m_stack, &QComboBox::activated, this, [this] {
        const std::string name = comboName(m_stack);
        edit(tr("Change stack"), [name](Scenario &s) {
            Stack stack{};
            parseStack(name, stack);
            switchStack(s.training, s.parallelism, stack);
        });
    });
    form->addRow(tr("Stack:"), m_stack);

    m_torch = new QComboBox;
    m_torch->setObjectName(QStringLiteral("torch"));
    // One item per range of releases that differ in bytes (model/torch_release.h).
    for (const char *label : {QT_TRANSLATE_NOOP("Controls", "2.11 or later"),
                              QT_TRANSLATE_NOOP("Controls", "2.10"),
                              QT_TRANSLATE_NOOP("Controls", "2.8 to 2.9"),
                              QT_TRANSLATE_NOOP("Controls", "2.5 to 2.7"),
                              QT_TRANSLATE_NOOP("Controls", "2.1 to 2.4"),
                              QT_TRANSLATE_NOOP("Controls", "2.0"),
                              QT_TRANSLATE_NOOP("Controls", "1.13 or older")})
        m_torch->addItem(QCoreApplication::translate("Controls", label));
    m_torch->setToolTip(
        tr("The PyTorch release: torch.optim.AdamW keeps one parameter-sized temporary list from "
           "2.1, two in 2.0, and loops tensor by tensor before 2.0; the Trainer defaults to fused "
           "AdamW only with 2.8 or later; torch.distributed.pipelining (torchtitan) keeps the last "
           "stage's logits until the next step before 2.10, and every stage's outputs before 2.8; "
           "FSDP2 (torchtitan, torchtune) makes its reduce-scatter input on a stream of its own "
           "before 2.5, memory the compute stream cannot reuse; from 2.11 SDPA runs cuDNN's "
           "attention on Hopper, B200, B300 and GB200 GPUs, 1.6 times as fast as its flash backend "
           "(time only)"));
    connect(m_torch, &QComboBox::activated, this, [this](int index) {
        const std::string version = kTorchRangeVersions[index];
        edit(tr("Change PyTorch release"),
             [version](Scenario &s) { setTorchRelease(s.training, s.parallelism, version); });
    });
    form->addRow(tr("PyTorch:"), m_torch);

    m_precision = enumCombo("precision", kPrecisionLabels, precisionTip());
    connect(m_precision, &QComboBox::activated, this, [this] {
        const std::string name = comboName(m_precision);
        edit(tr("Change precision"), [name](Scenario &s) {
            parsePrecision(name, s.training.precision);
            if (!isPure16(s.training.precision))
                s.training.trainer_mixed_precision.reset(); // said of 16-bit weights only
        });
    });
    form->addRow(tr("Prec&ision:"), m_precision);
    m_trainerMixedPrecision = flagBox(
        "trainerMixedPrecision",
        tr("Trainer bf16=True / fp16=True (autocast)"),
        tr("The Trainer's bf16 or fp16 flag (accelerate's mixed_precision) wraps the forward in "
           "autocast, 16-bit weights included: PEFT's fp32 LoRA adapters then keep their input's "
           "16-bit copy instead of its fp32 cast, and TRL's chunked loss casts back to 16-bit. "
           "Recipes set it, and TRL's SFTConfig does from 0.19; TrainingArguments' own default "
           "is off. Under DeepSpeed the flag sets DeepSpeed's precision instead."),
        tr("Change the Trainer's mixed-precision flag"),
        [](Scenario &s, bool on) { s.training.trainer_mixed_precision = on; });
    form->addRow(QString(), m_trainerMixedPrecision);
    m_float8 = flagBox("float8",
                       tr("Float8 linears (torchao)"),
                       tr("torchao float8 training (torchtitan's float8 converter): the decoder "
                          "layers' matmuls run on FP8 tensor cores, each casting its input and "
                          "weight to fp8 as it runs; what is kept for backward stays bf16. Full "
                          "fine-tuning in a bf16 precision, on a GPU with FP8 tensor cores."),
                       tr("Change float8 training"),
                       [](Scenario &s, bool on) { s.training.float8 = on; });
    form->addRow(QString(), m_float8);

    m_quantization = enumCombo(
        "quantization",
        kQuantizationLabels,
        tr("Storage of the frozen base weights: int8 takes 1 byte, NF4 about half a byte per "
           "parameter (QLoRA and quantized inference)"));
    connect(m_quantization, &QComboBox::activated, this, [this] {
        const std::string name = comboName(m_quantization);
        edit(tr("Change quantization"),
             [name](Scenario &s) { parseQuantization(name, s.training.quantization); });
    });
    form->addRow(tr("&Quantization:"), m_quantization);

    m_optimizer = enumCombo(
        "optimizer",
        kOptimizerLabels,
        tr("AdamW keeps two states per trainable parameter (8 bytes in fp32), 8-bit AdamW 2 bytes, "
           "SGD none, Lion one, Adafactor factored rows and columns; fused AdamW needs no "
           "per-tensor temporaries in the step"));
    connect(m_optimizer, &QComboBox::activated, this, [this] {
        const std::string name = comboName(m_optimizer);
        edit(tr("Change optimizer"),
             [name](Scenario &s) { parseOptimizer(name, s.training.optimizer); });
    });
    form->addRow(tr("&Optimizer:"), m_optimizer);
    m_optimizerInBackward
        = flagBox("optimizerInBackward",
                  tr("Step in backward (frees each gradient)"),
                  tr("torchtune optimizer_in_bwd: each parameter is stepped as soon as its "
                     "gradient exists, which is then freed, so the gradients are never all "
                     "held. One GPU, no gradient accumulation, no fp16 GradScaler."),
                  tr("Change optimizer step in backward"),
                  [](Scenario &s, bool on) { s.training.optimizer_in_backward = on; });
    form->addRow(QString(), m_optimizerInBackward);
    return group;
}

QWidget *ControlsPanel::buildLoraGroup()
{
    m_loraGroup = addSection(tr("LoRA adapters"), "loraGroup");
    auto *lora = formLayout(m_loraGroup->content());
    m_loraRank = intSpin("loraRank",
                         1,
                         4096,
                         tr("Adapter rank: trainable parameters, their gradients and optimizer "
                            "states grow linearly with it"));
    connect(m_loraRank, &QSpinBox::valueChanged, this, [this](int v) {
        edit(tr("Change LoRA rank"), [v](Scenario &s) { s.training.lora.rank = v; });
    });
    lora->addRow(tr("&Rank:"), m_loraRank);
    m_loraAlpha = doubleSpin("loraAlpha",
                             0.1,
                             100000,
                             1,
                             1,
                             tr("Scales the adapter output; no effect on memory"));
    connect(m_loraAlpha, &QDoubleSpinBox::valueChanged, this, [this](double v) {
        edit(tr("Change LoRA alpha"), [v](Scenario &s) { s.training.lora.alpha = v; });
    });
    lora->addRow(tr("Alpha:"), m_loraAlpha);
    m_loraDropout = doubleSpin(
        "loraDropout",
        0,
        0.9,
        2,
        0.05,
        tr("Above zero, each adapter keeps a dropout mask and a dropped copy of its input"));
    connect(m_loraDropout, &QDoubleSpinBox::valueChanged, this, [this](double v) {
        edit(tr("Change LoRA dropout"), [v](Scenario &s) { s.training.lora.dropout = v; });
    });
    lora->addRow(tr("Dropout:"), m_loraDropout);
    auto *targets = new QGridLayout;
    targets->setHorizontalSpacing(6);
    targets->setVerticalSpacing(2);
    for (std::size_t i = 0; i < std::size(kTargets); ++i) {
        const LoraTarget t = kTargets[i];
        auto *box = new QCheckBox(
            QString::fromLatin1(loraTargetName(t)).remove(QStringLiteral("_proj")));
        box->setObjectName(
            QStringLiteral("loraTarget_%1").arg(QString::fromLatin1(loraTargetName(t))));
        box->setToolTip(
            tr("Put an adapter on %1: more targets, more trainable parameters and saved inputs")
                .arg(QString::fromLatin1(loraTargetName(t))));
        connect(box, &QCheckBox::toggled, this, [this, t](bool on) {
            edit(tr("Change LoRA targets"), [t, on](Scenario &s) {
                unsigned &bits = s.training.lora.targets;
                bits = on ? (bits | t) : (bits & ~static_cast<unsigned>(t));
                if (bits == 0)
                    bits = t; // at least one target
            });
        });
        targets->addWidget(box, static_cast<int>(i / 4), static_cast<int>(i % 4));
        m_loraTargets << box;
    }
    auto *targetsLabel = new QLabel(tr("Targets:"));
    targetsLabel->setBuddy(m_loraTargets.front());
    lora->addRow(targetsLabel, targets);
    m_adapterPrecision = enumCombo("adapterPrecision", kAdapterLabels, adapterPrecisionTip());
    connect(m_adapterPrecision, &QComboBox::activated, this, [this] {
        const std::string name = comboName(m_adapterPrecision);
        edit(tr("Change adapter precision"), [name](Scenario &s) {
            parseAdapterPrecision(name, s.training.lora.adapter_precision);
        });
    });
    lora->addRow(tr("Adapter dtype:"), m_adapterPrecision);
    m_dora = flagBox("useDora",
                     tr("DoRA (weight-decomposed)"),
                     tr("PEFT use_dora: a magnitude per output row, and every forward the "
                        "weight-sized W + BA and its norm (more temporaries and activations)"),
                     tr("Change DoRA"),
                     [](Scenario &s, bool on) { s.training.lora.use_dora = on; });
    lora->addRow(QString(), m_dora);
    return m_loraGroup;
}

QWidget *ControlsPanel::buildBatchGroup()
{
    CollapsibleSection *group = addSection(tr("Batch and sequence"), "sectionBatch");
    auto *form = formLayout(group->content());
    m_batchForm = form;

    m_microBatch = new LogSliderSpin(qint64(1), qint64(1024));
    m_microBatch->setObjectName(QStringLiteral("microBatch"));
    m_microBatch->setSpinRange(1, 1'000'000);
    m_microBatch->setToolTip(
        tr("Sequences per forward and backward pass: activations and logits grow linearly "
           "with it"));
    m_microBatch->slider()->setToolTip(m_microBatch->toolTip());
    m_microBatch->spinBox()->setToolTip(m_microBatch->toolTip());
    connectSlider(m_microBatch, tr("Change micro-batch size"), [](Scenario &s, double v) {
        s.training.micro_batch_size = std::llround(v);
    });
    form->addRow(tr("Micro-&batch:"), m_microBatch);

    m_sequence = new LogSliderSpin(qint64(128), qint64(1 << 20));
    m_sequence->setObjectName(QStringLiteral("sequenceLength"));
    m_sequence->setSnapValues(sequenceSnapValues());
    m_sequence->setSpinRange(1, 100'000'000);
    m_sequence->setToolTip(
        tr("Tokens per sequence: activations grow linearly with it, eager attention scores with "
           "its square. The slider snaps to powers of two and common context lengths."));
    m_sequence->slider()->setToolTip(m_sequence->toolTip());
    m_sequence->spinBox()->setToolTip(m_sequence->toolTip());
    connectSlider(m_sequence, tr("Change sequence length"), [](Scenario &s, double v) {
        s.training.sequence_length = std::llround(v);
    });
    form->addRow(tr("Seq&uence:"), m_sequence);
    m_contextWarning = noteLabel();
    m_contextWarning->setObjectName(QStringLiteral("contextWarning"));
    m_contextWarning->setTextFormat(Qt::PlainText);
    m_contextWarning->setVisible(false);
    form->addRow(m_contextWarning);

    m_accumulation = intSpin(
        "gradientAccumulation",
        1,
        1'000'000,
        tr("Micro-batches per optimizer step: a larger effective batch without more activations; "
           "gradients stay allocated between micro-batches"));
    connect(m_accumulation, &QSpinBox::valueChanged, this, [this](int v) {
        edit(tr("Change gradient accumulation"),
             [v](Scenario &s) { s.training.gradient_accumulation_steps = v; });
    });
    form->addRow(tr("Accumulation:"), m_accumulation);
    m_generated = intSpin("generatedTokens",
                          0,
                          100'000'000,
                          tr("Inference: tokens generated per sequence after the prompt; the KV "
                             "cache grows to micro-batch × (sequence + generated) positions"));
    connect(m_generated, &QSpinBox::valueChanged, this, [this](int v) {
        edit(tr("Change generated tokens"),
             [v](Scenario &s) { s.training.inference.generated_tokens = v; });
    });
    form->addRow(tr("&Generated:"), m_generated);
    m_kvCache = enumCombo("kvCache",
                          kKvCacheLabels,
                          tr("Which cache generate() keeps (transformers cache_utils.py)"));
    connect(m_kvCache, &QComboBox::activated, this, [this] {
        const std::string name = comboName(m_kvCache);
        edit(tr("Change KV cache"), [name](Scenario &s) {
            parseKvCacheKind(name, s.training.inference.kv_cache);
            if (s.training.inference.kv_cache == KvCacheKind::Quantized)
                s.training.inference.kv_cache_dtype = KvCacheDtype::Model;
        });
    });
    form->addRow(tr("KV cache:"), m_kvCache);
    m_kvDtype = enumCombo("kvCacheDtype",
                          kKvDtypeLabels,
                          tr("Element type of a dynamic or static cache (vLLM / TGI fp8)"));
    connect(m_kvDtype, &QComboBox::activated, this, [this] {
        const std::string name = comboName(m_kvDtype);
        edit(tr("Change KV cache dtype"),
             [name](Scenario &s) { parseKvCacheDtype(name, s.training.inference.kv_cache_dtype); });
    });
    form->addRow(tr("KV dtype:"), m_kvDtype);
    m_effectiveBatch = noteLabel();
    m_effectiveBatch->setObjectName(QStringLiteral("effectiveBatch"));
    form->addRow(new SteadyLabel(m_effectiveBatch)); // its text changes with every value
    return group;
}

QWidget *ControlsPanel::buildTechniquesGroup()
{
    CollapsibleSection *group = addSection(tr("Memory techniques"), "sectionTechniques");
    auto *form = formLayout(group->content());
    m_techniquesForm = form;
    m_checkpointing = enumCombo(
        "checkpointing",
        kCheckpointingLabels,
        tr("Recompute activations in backward instead of keeping them: full keeps only each "
           "wrapped layer's input (≈20–30% slower with every layer wrapped), selective drops the "
           "attention internals (≈5%), op-level keeps every second matmul's output and the "
           "attention output and recomputes the rest (torchtitan's selective_ac_option \"op\")"));
    connect(m_checkpointing, &QComboBox::activated, this, [this] {
        const std::string name = comboName(m_checkpointing);
        edit(tr("Change gradient checkpointing"),
             [name](Scenario &s) { parseCheckpointing(name, s.training.checkpointing); });
    });
    m_checkpointEvery = intSpin(
        "checkpointEvery",
        1,
        1'000'000,
        tr("With full checkpointing, wrap only one layer in N (torchtitan's selective_ac_option): "
           "the other layers keep their activations, and only the wrapped ones are recomputed"));
    m_checkpointEvery->setSpecialValueText(tr("every layer"));
    m_checkpointEvery->setPrefix(tr("1 in "));
    m_checkpointEvery->setSuffix(tr(" layers"));
    connect(m_checkpointEvery, &QSpinBox::valueChanged, this, [this](int v) {
        edit(tr("Change checkpointed layers"),
             [v](Scenario &s) { s.training.checkpoint_every = v; });
    });
    auto *checkpointRow = new QHBoxLayout;
    m_checkpointingRow = checkpointRow;
    checkpointRow->addWidget(m_checkpointing, 1);
    checkpointRow->addWidget(m_checkpointEvery);
    auto *checkpointLabel = new QLabel(tr("Chec&kpointing:"));
    checkpointLabel->setBuddy(m_checkpointing);
    form->addRow(checkpointLabel, checkpointRow);
    m_activationOffloading
        = flagBox("activationOffloading",
                  tr("Offload layer inputs to CPU RAM"),
                  tr("torchtune enable_activation_offloading: each checkpointed layer's input is "
                     "copied to pinned CPU RAM in forward (five stay on the GPU while their copies "
                     "run) and back when backward needs it. Needs full checkpointing on every "
                     "layer; the copies overlap compute on a side stream (their time is not "
                     "modelled)."),
                  tr("Change activation offloading"),
                  [](Scenario &s, bool on) { s.training.activation_offloading = on; });
    form->addRow(QString(), m_activationOffloading);
    m_useCache = flagBox(
        "useCache",
        tr("KV cache in the training forward (use_cache)"),
        tr("Without gradient checkpointing, a Transformers model with use_cache on (its config's "
           "default) builds a KV cache in every training forward: each layer's keys and values "
           "stay in the model output until the loss is taken. It costs memory wherever the "
           "attention saves other tensors for backward: keys and values repeated to every head "
           "(eager, or SDPA where it repeats them), the 16-bit copies of AMP's fp32 keys, flash "
           "attention's unpadded copies. The Trainer turns it off from Transformers 5.0, TRL's "
           "SFTTrainer from 0.22; Transformers' gradient checkpointing (full) turns it off."),
        tr("Change use_cache"),
        [](Scenario &s, bool on) { s.training.use_cache = on; });
    form->addRow(QString(), m_useCache);

    m_attention = enumCombo(
        "attention",
        kAttentionLabels,
        tr("Eager attention stores the heads × sequence² score matrix for backward; SDPA and "
           "FlashAttention keep only a per-token statistic"));
    connect(m_attention, &QComboBox::activated, this, [this] {
        const std::string name = comboName(m_attention);
        edit(tr("Change attention"),
             [name](Scenario &s) { parseAttention(name, s.training.attention); });
    });
    form->addRow(tr("Atte&ntion:"), m_attention);

    m_batchPadding = enumCombo(
        "batchPadding",
        kBatchPaddingLabels,
        tr("How a batch's sequences are laid out. Padded or packed batches give SDPA a "
           "(batch, 1, sequence, sequence) mask, which it turns into a 16-bit copy kept by every "
           "layer for the backward; FlashAttention needs no mask, but with padding each layer "
           "keeps unpadded copies of q, k, v and a padded copy of its output"));
    connect(m_batchPadding, &QComboBox::activated, this, [this] {
        const std::string name = comboName(m_batchPadding);
        edit(tr("Change batch layout"),
             [name](Scenario &s) { parseBatchPadding(name, s.training.batch_padding); });
    });
    form->addRow(tr("Batch layout:"), m_batchPadding);

    m_loss = enumCombo("loss",
                       kLossLabels,
                       tr("How the loss is computed decides the logits spike: Transformers upcasts "
                          "the logits to fp32 "
                          "inside the loss, older versions also keep an fp32 copy, chunked "
                          "cross-entropy (torchtune, "
                          "Liger, TRL's default from 1.7) never holds the whole fp32 logits; "
                          "TRL's chunks copy a 16-bit lm_head to fp32 and run again in backward"));
    connect(m_loss, &QComboBox::activated, this, [this] {
        const std::string name = comboName(m_loss);
        edit(tr("Change loss implementation"),
             [name](Scenario &s) { parseLoss(name, s.training.loss); });
    });
    form->addRow(tr("&Loss:"), m_loss);

    m_offloadOptimizer
        = flagBox("offloadOptimizer",
                  tr("Optimizer states"),
                  tr("Optimizer states and fp32 master weights live in CPU RAM: less GPU memory, "
                     "steps 2–5× slower"),
                  tr("Change optimizer offload"),
                  [](Scenario &s, bool on) { s.training.offload.optimizer = on; });
    m_offloadParameters = flagBox("offloadParameters",
                                  tr("Parameters"),
                                  tr("Sharded parameters live in CPU RAM and are fetched layer by "
                                     "layer (needs ZeRO-3 or FSDP full shard)"),
                                  tr("Change parameter offload"),
                                  [](Scenario &s, bool on) { s.training.offload.parameters = on; });
    auto *offload = new QHBoxLayout;
    m_offloadRow = offload;
    offload->addWidget(m_offloadOptimizer);
    offload->addWidget(m_offloadParameters);
    offload->addStretch(1);
    auto *offloadLabel = new QLabel(tr("CPU offloa&d:"));
    offloadLabel->setBuddy(m_offloadOptimizer);
    form->addRow(offloadLabel, offload);
    return group;
}

QWidget *ControlsPanel::buildParallelGroup()
{
    CollapsibleSection *group = addSection(tr("GPUs and parallelism"), "sectionGpus");
    auto *form = formLayout(group->content());

    m_gpuCount = intSpin("gpuCount",
                         1,
                         100'000,
                         tr("GPUs in the job; with sharding, states are divided among them. "
                            "More than one adds NCCL buffers."));
    connect(m_gpuCount, &QSpinBox::valueChanged, this, [this](int v) {
        edit(tr("Change GPU count"), [v](Scenario &s) { s.parallelism.gpus = v; });
    });
    m_tensorParallel = new SteppedSpinBox;
    m_tensorParallel->setObjectName(QStringLiteral("tensorParallel"));
    m_tensorParallel->setRange(1, 1024);
    m_tensorParallel->setKeyboardTracking(false);
    m_tensorParallel->setToolTip(
        tr("Splits each layer's weights and most activations across this many GPUs. It must "
           "divide the GPU count and the attention heads; the arrows step through the "
           "degrees that do."));
    connect(m_tensorParallel, &QSpinBox::valueChanged, this, [this](int v) {
        edit(tr("Change tensor parallelism"),
             [v](Scenario &s) { s.parallelism.tensor_parallel = v; });
    });
    m_contextParallel = new SteppedSpinBox;
    m_contextParallel->setObjectName(QStringLiteral("contextParallel"));
    m_contextParallel->setRange(1, 1024);
    m_contextParallel->setKeyboardTracking(false);
    m_contextParallel->setToolTip(
        tr("Context parallelism (torchtitan's context_parallel_degree): this many GPUs share each "
           "sequence, each holding 1/CP of its activations and logits, with ring attention over "
           "SDPA. Needs SDPA attention, unpadded batches and a sequence length in multiples of "
           "2 × CP."));
    connect(m_contextParallel, &QSpinBox::valueChanged, this, [this](int v) {
        edit(tr("Change context parallelism"),
             [v](Scenario &s) { s.parallelism.context_parallel = v; });
    });
    auto *counts = new QHBoxLayout;
    counts->addWidget(m_gpuCount, 1);
    auto *tpLabel = new QLabel(tr("TP:"));
    tpLabel->setBuddy(m_tensorParallel);
    counts->addWidget(tpLabel);
    counts->addWidget(m_tensorParallel, 1);
    auto *cpLabel = new QLabel(tr("CP:"));
    cpLabel->setBuddy(m_contextParallel);
    counts->addWidget(cpLabel);
    counts->addWidget(m_contextParallel, 1);
    auto *gpusLabel = new QLabel(tr("&GPUs:"));
    gpusLabel->setBuddy(m_gpuCount);
    form->addRow(gpusLabel, counts);

    m_sequenceParallel = flagBox(
        "sequenceParallel",
        tr("Sequence parallel"),
        tr("With tensor parallelism, each GPU keeps only its share of the sequence between the "
           "attention and MLP blocks: norms, residual adds and the layer inputs shrink by the TP "
           "degree, with the same communication volume. torchtitan does this; Hugging Face's "
           "tp_plan does not."),
        tr("Change sequence parallelism"),
        [](Scenario &s, bool on) { s.parallelism.sequence_parallel = on; });
    m_lossParallel = flagBox(
        "lossParallel",
        tr("Vocabulary-parallel loss"),
        tr("With tensor parallelism, compute the loss on each GPU's share of the vocabulary "
           "(Megatron, torchtitan's loss_parallel). Off, every GPU gathers the whole logits "
           "first, as Hugging Face's tp_plan does (lm_head \"colwise_rep\")."),
        tr("Change vocabulary-parallel loss"),
        [](Scenario &s, bool on) { s.parallelism.loss_parallel = on; });
    auto *tpOptions = new QHBoxLayout;
    tpOptions->addWidget(m_sequenceParallel);
    tpOptions->addWidget(m_lossParallel);
    tpOptions->addStretch(1);
    form->addRow(QString(), tpOptions);
    addPipelineRow(form);

    m_sharding = enumCombo(
        "sharding",
        kShardingLabels,
        tr("Divide optimizer states (ZeRO-1), gradients (ZeRO-2) and parameters (ZeRO-3, FSDP) "
           "across the data-parallel GPUs"));
    connect(m_sharding, &QComboBox::activated, this, [this] {
        const std::string name = comboName(m_sharding);
        edit(tr("Change sharding"),
             [name](Scenario &s) { parseSharding(name, s.parallelism.sharding); });
    });
    form->addRow(tr("Sharding:"), m_sharding);

    m_shardGroup = new SteppedSpinBox;
    m_shardGroup->setObjectName(QStringLiteral("shardGroup"));
    m_shardGroup->setRange(0, 1'000'000);
    m_shardGroup->setKeyboardTracking(false);
    m_shardGroup->setSpecialValueText(tr("all data-parallel GPUs"));
    m_shardGroup->setSuffix(tr(" GPUs"));
    m_shardGroup->setToolTip(
        tr("Hybrid sharding (FSDP HYBRID_SHARD, FSDP2 HSDP, DeepSpeed MiCS): shard over groups of "
           "this many GPUs, typically one node, and replicate across the groups. Each GPU then "
           "holds more of the states, and the gathers stay on the node's fast links."));
    connect(m_shardGroup, &QSpinBox::valueChanged, this, [this](int v) {
        edit(tr("Change shard group"), [v](Scenario &s) { s.parallelism.shard_group = v; });
    });
    form->addRow(tr("Shard over:"), m_shardGroup);

    m_gpuFilter = new QLineEdit;
    m_gpuFilter->setObjectName(QStringLiteral("gpuFilter"));
    m_gpuFilter->setPlaceholderText(tr("Filter GPUs…"));
    m_gpuFilter->setClearButtonEnabled(true);
    m_gpuFilter->setToolTip(tr("Type part of a name or a size (\"80\", \"rtx\")"));
    connect(m_gpuFilter, &QLineEdit::textChanged, this, &ControlsPanel::filterGpus);
    m_gpuList = new QListWidget;
    m_gpuList->setObjectName(QStringLiteral("gpuList"));
    m_gpuList->setToolTip(
        tr("GPUs to compare against: each draws a capacity line on the chart and gets a verdict"));
    m_gpuList->setMinimumHeight(110);
    m_gpuList->setUniformItemSizes(true);
    fillGpuList();
    connect(m_gpuList, &QListWidget::itemChanged, this, [this](QListWidgetItem *item) {
        const std::string id = item->data(Qt::UserRole).toString().toStdString();
        const bool on = item->checkState() == Qt::Checked;
        edit(on ? tr("Compare with %1").arg(item->text())
                : tr("Stop comparing with %1").arg(item->text()),
             [id, on](Scenario &s) {
                 auto it = std::find(s.gpus.begin(), s.gpus.end(), id);
                 if (on && it == s.gpus.end())
                     s.gpus.push_back(id);
                 else if (!on && it != s.gpus.end())
                     s.gpus.erase(it);
             });
    });
    form->addRow(tr("Compare &with:"), m_gpuFilter);
    form->addRow(m_gpuList);
    return group;
}

QWidget *ControlsPanel::buildOverheadGroup()
{
    CollapsibleSection *group = addSection(tr("Overheads"), "sectionOverheads");
    auto *form = formLayout(group->content());
    m_cudaContext = doubleSpin(
        "cudaContext",
        0,
        65536,
        0,
        64,
        tr("CUDA context and kernels outside PyTorch's allocator (about 300–900 MiB)"));
    m_cudaContext->setSuffix(tr(" MiB"));
    connect(m_cudaContext, &QDoubleSpinBox::valueChanged, this, [this](double v) {
        edit(tr("Change CUDA context"),
             [v](Scenario &s) { s.overheads.cuda_context_bytes = std::llround(v * kMiB); });
    });
    form->addRow(tr("CUDA context:"), m_cudaContext);
    m_nccl = doubleSpin("ncclBuffers",
                        0,
                        65536,
                        0,
                        128,
                        tr("NCCL communicator buffers per GPU, only with more than one GPU"));
    m_nccl->setSuffix(tr(" MiB"));
    connect(m_nccl, &QDoubleSpinBox::valueChanged, this, [this](double v) {
        edit(tr("Change NCCL buffers"),
             [v](Scenario &s) { s.overheads.nccl_bytes = std::llround(v * kMiB); });
    });
    form->addRow(tr("NCCL buffers:"), m_nccl);
    // Below 0: "modelled", the caching-allocator model replays the step; 0-100: a fixed fraction.
    m_reserve = doubleSpin(
        "allocatorReserve",
        -1,
        100,
        0,
        1,
        tr("Memory the caching allocator reserves beyond the allocated peak (fragmentation): "
           "modelled by replaying the step through PyTorch's allocator, or a fixed share you "
           "measured"));
    m_reserve->setSuffix(tr(" %"));
    m_reserve->setSpecialValueText(tr("modelled"));
    connect(m_reserve, &QDoubleSpinBox::valueChanged, this, [this](double v) {
        edit(tr("Change allocator reserve"), [v](Scenario &s) {
            s.overheads.allocator_reserve_fraction = v < 0 ? std::nullopt
                                                           : std::optional<double>(v / 100.0);
        });
    });
    form->addRow(tr("Allocator reserve:"), m_reserve);
    return group;
}

void ControlsPanel::fillGpuList()
{
    const QSignalBlocker block(m_gpuList);
    const int scrolled = m_gpuList->verticalScrollBar()->value();
    m_gpuList->clear();
    for (const GpuSpec &gpu : m_doc->catalog().gpus()) {
        // What a process can use, rounded down: an "RTX 4090 24GB" gives CUDA 23.6 GiB, not 24.
        auto *item = new QListWidgetItem(
            QStringLiteral("%1 — %2").arg(QString::fromStdString(gpu.name),
                                          QString::fromStdString(
                                              formatCapacity(gpu.memory_bytes, m_unit))));
        item->setData(Qt::UserRole, QString::fromStdString(gpu.id));
        item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsUserCheckable | Qt::ItemIsSelectable);
        item->setCheckState(Qt::Unchecked);
        // The generation and compute capability decide which kernels the time model assumes.
        QString kind = QString::fromLatin1(gpuArchitectureName(gpu.performance.architecture));
        if (gpu.performance.compute_capability.known())
            kind += tr(", compute capability %1")
                        .arg(QString::fromStdString(
                            computeCapabilityName(gpu.performance.compute_capability)));
        item->setToolTip(QStringLiteral("%1 · %2 · %3 · %4\n%5")
                             .arg(QString::fromStdString(gpu.id),
                                  QString::fromStdString(gpu.vendor),
                                  QString::fromStdString(gpu.segment),
                                  kind,
                                  QString::fromStdString(capacityNote(gpu, m_unit))));
        m_gpuList->addItem(item);
    }
    m_gpuList->verticalScrollBar()->setValue(scrolled);
}

void ControlsPanel::filterGpus(const QString &text)
{
    for (int i = 0; i < m_gpuList->count(); ++i) {
        QListWidgetItem *item = m_gpuList->item(i);
        const bool match
            = text.isEmpty() || item->text().contains(text, Qt::CaseInsensitive)
              || item->data(Qt::UserRole).toString().contains(text, Qt::CaseInsensitive);
        // Selected GPUs always stay visible.
        item->setHidden(!match && item->checkState() != Qt::Checked);
    }
}

void ControlsPanel::editArchitecture()
{
    if (!m_doc->valid() && m_doc->scenario().model.preset.empty() == false
        && !m_doc->catalog().findModel(m_doc->scenario().model.preset))
        return;
    std::string error;
    const auto resolved = m_doc->catalog().resolveModel(m_doc->scenario().model, error);
    if (!resolved)
        return;
    ArchitectureDialog dialog(*resolved, m_model->currentText(), this);
    if (dialog.exec() != QDialog::Accepted)
        return;
    const ModelSpec spec = ArchitectureDialog::specFromEdit(m_doc->scenario().model,
                                                            *resolved,
                                                            dialog.architecture());
    edit(tr("Edit architecture"), [&spec](Scenario &s) { s.model = spec; });
}

void ControlsPanel::modelTextEntered()
{
    const QString text = m_model->currentText().trimmed();
    if (text.isEmpty() || m_model->findText(text) >= 0) {
        showModelHint(QString());
        return;
    }
    // A Hugging Face id or hub address is not a preset: say where it can be used instead of quietly
    // going back to the model in use. The text stays until the user moves on.
    static const QRegularExpression hubId(
        QStringLiteral("^(https?://)?(huggingface\\.co/)?[A-Za-z0-9][\\w.-]*/[\\w.-]+/?$"));
    if (hubId.match(text).hasMatch()) {
        QString id = text;
        id.remove(QRegularExpression(QStringLiteral("^(https?://)?huggingface\\.co/")));
        id.remove(QRegularExpression(QStringLiteral("/$")));
        showModelHint(tr("\"%1\" is a Hugging Face model id, not a bundled preset; the model in "
                         "use is unchanged. Press Enter to fetch its config.json from the Hub.")
                          .arg(id));
        return;
    }
    showModelHint(tr("No preset matches \"%1\"; the model in use is unchanged. Type part of a "
                     "name (\"llama\", \"7b\") and pick from the list.")
                      .arg(text));
}

void ControlsPanel::showModelHint(const QString &text)
{
    m_modelHint->setText(text);
    m_modelHint->setVisible(!text.isEmpty());
    if (!text.isEmpty())
        setTextColor(m_modelHint, chartColors(palette()).warning);
}

void ControlsPanel::changeEvent(QEvent *event)
{
    QWidget::changeEvent(event);
    // A theme switch: the notes' colours follow (their contrast is worked out per palette).
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::ApplicationPaletteChange)
        syncFromDocument();
}

void ControlsPanel::updateModelInfo()
{
    const ChartColors colors = chartColors(palette());
    setTextColor(m_modelInfo, colors.mutedText);
    setTextColor(m_effectiveBatch, colors.mutedText);
    if (m_modelHint->isVisible())
        setTextColor(m_modelHint, colors.warning);
    if (!m_doc->valid()) {
        m_modelInfo->setText(QStringLiteral("<span style='color:%1'>%2</span>")
                                 .arg(colors.danger.name(), m_doc->error().toHtmlEscaped()));
        m_contextWarning->setVisible(false);
        return;
    }
    const EstimateInput &in = m_doc->input();
    const MemoryEstimate &est = m_doc->estimate();
    const ModelArchitecture &a = in.arch;
    QString text = tr("%1B parameters · %2 layers · hidden %3 · %4/%5 heads · vocabulary %6")
                       .arg(static_cast<double>(est.parameters) / 1e9,
                            0,
                            'f',
                            est.parameters < 10'000'000'000 ? 2 : 1)
                       .arg(a.layers)
                       .arg(QLocale().toString(static_cast<qlonglong>(a.hidden_size)))
                       .arg(a.attention_heads)
                       .arg(a.kv_heads)
                       .arg(QLocale().toString(static_cast<qlonglong>(a.vocab_size)));
    if (a.isMoe())
        text += tr(" · %1 experts, %2 per token").arg(a.experts).arg(a.experts_per_token);
    if (a.context_length > 0)
        text += tr(" · context %1").arg(QLocale().toString(static_cast<qlonglong>(a.context_length)));
    if (est.trainable_parameters > 0 && est.trainable_parameters < est.parameters)
        text += tr(" · %1M trainable")
                    .arg(static_cast<double>(est.trainable_parameters) / 1e6, 0, 'f', 1);
    m_modelInfo->setText(text);

    // Beyond the model's context length: said under the sequence, where it is set.
    const std::int64_t sequence = in.training.sequence_length;
    const bool beyond = a.context_length > 0 && sequence > a.context_length;
    m_contextWarning->setVisible(beyond);
    if (beyond) {
        m_contextWarning->setText(
            tr("⚠ Beyond the model's context of %1 tokens (max_position_embeddings). With RoPE "
               "scaling, set model.rope_scaling_factor in the scenario file.")
                .arg(QLocale().toString(static_cast<qlonglong>(a.context_length))));
        setTextColor(m_contextWarning, colors.danger);
    }
}

void ControlsPanel::syncFromDocument()
{
    m_syncing = true;
    const Scenario &s = m_doc->scenario();
    const TrainingConfig &t = s.training;
    std::vector<std::unique_ptr<QSignalBlocker>> blockers;
    for (QWidget *w : findChildren<QWidget *>())
        if (!qobject_cast<LogSliderSpin *>(w))
            blockers.push_back(std::make_unique<QSignalBlocker>(w));

    // Model
    const int presetIndex = m_model->findData(QString::fromStdString(s.model.preset));
    if (s.model.preset.empty() && !s.model.source.empty()) { // fetched from the Hugging Face Hub
        m_model->setCurrentIndex(-1);
        m_model->setEditText(QString::fromStdString(s.model.source));
    } else if (presetIndex >= 0) {
        m_model->setCurrentIndex(presetIndex);
    } else if (!s.model.preset.empty()) {
        m_model->setCurrentIndex(-1);
        m_model->setEditText(QString::fromStdString(s.model.preset));
    } else {
        m_model->setCurrentIndex(0);
    }
    ModelSpec plainPreset;
    plainPreset.preset = s.model.preset;
    const bool presetWithOverrides = !s.model.preset.empty() && !(s.model == plainPreset);
    if (presetWithOverrides)
        m_model->setEditText(m_model->currentText() + tr(" (modified)"));
    if (m_doc->valid())
        m_modelSize->setValue(static_cast<double>(m_doc->estimate().parameters) / 1e9);
    else if (s.model.parameters)
        m_modelSize->setValue(*s.model.parameters / 1e9);
    updateModelInfo();

    // Training; in inference, what only training has is hidden (method, adapters, optimizer,
    // accumulation, checkpointing, loss, optimizer offload) and mixed precision is not offered.
    const bool train = t.mode == Mode::Train;
    selectName(m_mode, modeName(t.mode));
    selectName(m_method, methodName(t.method));
    setRowShown(m_trainingForm, m_method, train);
    setRowShown(m_trainingForm, m_optimizer, train);
    setRowShown(m_batchForm, m_accumulation, train);
    for (QWidget *w : {static_cast<QWidget *>(m_generated),
                       static_cast<QWidget *>(m_kvCache),
                       static_cast<QWidget *>(m_kvDtype)})
        setRowShown(m_batchForm, w, !train);
    setRowShown(m_techniquesForm, m_checkpointingRow, train);
    setRowShown(m_techniquesForm, m_loss, train);
    // A choice DeepSpeed over several GPUs replaces (pure fp16, and bf16 before DeepSpeed 0.18.3,
    // train as mixed precision) is disabled, and the current one shown as what DeepSpeed trains.
    if (auto *items = qobject_cast<QStandardItemModel *>(m_precision->model()))
        for (int i = 0; i < items->rowCount(); ++i) {
            TrainingConfig probe = t;
            parsePrecision(items->item(i)->data(Qt::UserRole).toString().toStdString(),
                           probe.precision);
            const bool replaced = deepSpeedPrecision(probe, s.parallelism) != probe.precision;
            items->item(i)->setEnabled((train || !isMixedMaster(probe.precision)) && !replaced);
        }
    const Precision trained = deepSpeedPrecision(t, s.parallelism);
    m_precision->setToolTip(train && deepSpeedKeepsPrecision(s.parallelism)
                                ? precisionUnderDeepSpeedTip()
                                : precisionTip());
    m_loraGroup->setVisible(train && t.method != Method::Full);
    m_loraRank->setValue(static_cast<int>(t.lora.rank));
    m_loraAlpha->setValue(t.lora.alpha);
    m_loraDropout->setValue(t.lora.dropout);
    for (int i = 0; i < m_loraTargets.size(); ++i)
        m_loraTargets[i]->setChecked((t.lora.targets & kTargets[i]) != 0);
    // DeepSpeed over several GPUs casts the whole model to its 16-bit dtype (adapters included).
    const bool castByDeepSpeed = deepSpeedCastsModule(t, s.parallelism);
    selectName(m_adapterPrecision,
               adapterPrecisionName(castByDeepSpeed ? AdapterPrecision::Base
                                                    : t.lora.adapter_precision));
    m_adapterPrecision->setEnabled(!castByDeepSpeed);
    m_adapterPrecision->setToolTip(
        castByDeepSpeed
            ? tr("DeepSpeed casts the whole model to its 16-bit dtype when it wraps it: "
                 "the adapters train in 16-bit, their master copy lives in DeepSpeed's "
                 "optimizer")
            : adapterPrecisionTip());
    selectName(m_stack, stackName(t.stack.name));
    {
        const QSignalBlocker block(m_torch);
        m_torch->setCurrentIndex(torchReleaseRange(t.stack));
    }
    m_dora->setChecked(t.lora.use_dora);
    m_dora->setEnabled(t.method == Method::Lora || t.method == Method::Qlora);
    selectName(m_precision, precisionName(trained));
    // 16-bit weights under a Trainer-run stack (AMP is the flag itself); shown while set so that
    // it can be unset after a stack or precision change (it is refused there).
    m_trainerMixedPrecision->setChecked(
        t.trainer_mixed_precision.value_or(trainerMixedPrecision(t)));
    setRowShown(m_trainingForm,
                m_trainerMixedPrecision,
                train
                    && (trainerFlagIsAChoice(t, s.parallelism)
                        || t.trainer_mixed_precision.has_value()));
    m_float8->setChecked(t.float8);
    m_float8->setEnabled((t.method == Method::Full) || t.float8);
    setRowShown(m_trainingForm, m_float8, train);
    selectName(m_quantization, quantizationName(t.quantization));
    m_quantization->setEnabled(t.method == Method::Qlora || t.method == Method::Ia3 || !train
                               || t.quantization != Quantization::None);
    selectName(m_optimizer, optimizerName(t.optimizer));
    m_optimizer->setEnabled(train);
    m_optimizerInBackward->setChecked(t.optimizer_in_backward);
    setRowShown(m_trainingForm, m_optimizerInBackward, train);

    // Batch and sequence
    m_microBatch->setValue(static_cast<double>(t.micro_batch_size));
    m_sequence->setValue(static_cast<double>(t.sequence_length));
    m_accumulation->setValue(
        static_cast<int>(std::min<std::int64_t>(t.gradient_accumulation_steps, 1'000'000)));
    m_accumulation->setEnabled(train);
    m_generated->setValue(
        static_cast<int>(std::min<std::int64_t>(t.inference.generated_tokens, 100'000'000)));
    selectName(m_kvCache, kvCacheKindName(t.inference.kv_cache));
    selectName(m_kvDtype, kvCacheDtypeName(t.inference.kv_cache_dtype));
    m_kvDtype->setEnabled(t.inference.kv_cache != KvCacheKind::Quantized);
    // Sequences side by side: context-parallel GPUs share theirs.
    const std::int64_t replicas = s.parallelism.batchReplicas();
    // In doubles: a million-sequence micro-batch x a million steps x many GPUs x a long sequence
    // passes 2^63 (found by tst_monkey_input under UBSan).
    const double sequences = static_cast<double>(t.micro_batch_size)
                             * static_cast<double>(t.gradient_accumulation_steps)
                             * static_cast<double>(std::max<std::int64_t>(replicas, 1));
    const auto count = [](double v) {
        return v < 1e15 ? QLocale().toString(static_cast<qlonglong>(v))
                        : QLocale().toString(v, 'g', 3);
    };
    m_effectiveBatch->setText(
        train
            ? (sequences == 1 ? tr("Effective batch: 1 sequence, %1 tokens per optimizer step")
                                    .arg(count(static_cast<double>(t.sequence_length)))
                              : tr("Effective batch: %1 sequences, %2 tokens per optimizer step")
                                    .arg(count(sequences),
                                         count(sequences * static_cast<double>(t.sequence_length))))
            : tr("Inference: micro-batch sequences of a sequence-long prompt, then the generated "
                 "tokens"));

    // Techniques
    selectName(m_checkpointing, checkpointingName(t.checkpointing));
    m_checkpointing->setEnabled(train);
    m_checkpointEvery->setValue(
        static_cast<int>(std::clamp<std::int64_t>(t.checkpoint_every, 1, 1'000'000)));
    m_checkpointEvery->setVisible(t.checkpointing == Checkpointing::Full);
    m_activationOffloading->setChecked(t.activation_offloading);
    setRowShown(m_techniquesForm, m_activationOffloading, train);
    // Offered with full checkpointing on every layer; left enabled while set, so it can be unset.
    m_activationOffloading->setEnabled(
        t.activation_offloading
        || (t.checkpointing == Checkpointing::Full && t.checkpoint_every == 1));
    // The stack's choice until set; full checkpointing turns the cache off, as Transformers does.
    m_useCache->setChecked(trainingKvCache(t));
    m_useCache->setEnabled(t.checkpointing != Checkpointing::Full);
    // Shown while set on another stack's model too, so that it can be unset (it is refused there).
    setRowShown(m_techniquesForm,
                m_useCache,
                train && (buildsTransformersCache(t.stack.name) || t.use_cache.value_or(false)));
    selectName(m_attention, attentionName(t.attention));
    selectName(m_batchPadding, batchPaddingName(t.batch_padding));
    selectName(m_loss, lossName(t.loss));
    m_loss->setEnabled(train);
    m_offloadOptimizer->setChecked(t.offload.optimizer);
    m_offloadOptimizer->setEnabled(train || t.offload.optimizer);
    m_offloadParameters->setChecked(t.offload.parameters);
    const bool paramShard = s.parallelism.sharding == Sharding::Zero3
                            || s.parallelism.sharding == Sharding::FsdpFull;
    m_offloadParameters->setEnabled(paramShard || t.offload.parameters);
    // Parameter offload needs ZeRO-3 or FSDP: in inference without them the row offers nothing.
    setRowShown(m_techniquesForm, m_offloadRow, train || paramShard || t.offload.parameters);
    m_offloadOptimizer->setVisible(train); // after the row, which shows all of it when it returns

    // Parallelism and GPUs
    m_gpuCount->setValue(static_cast<int>(s.parallelism.gpus));
    m_tensorParallel->setValue(static_cast<int>(s.parallelism.tensor_parallel));
    const TensorParallelPlan plan = tensorParallelPlan(s.parallelism, t.stack);
    m_sequenceParallel->setChecked(plan.sequence_parallel);
    m_sequenceParallel->setEnabled(s.parallelism.tensor_parallel > 1);
    m_lossParallel->setChecked(plan.loss_parallel);
    m_lossParallel->setEnabled(s.parallelism.tensor_parallel > 1);
    // Arrows offer only what the core accepts: GPU counts in multiples of the tensor-parallel degree,
    // degrees that divide both the GPU count and the attention heads.
    const ParallelismConfig &par = s.parallelism;
    const std::int64_t split = par.tensor_parallel * par.context_parallel * par.pipeline_parallel;
    m_gpuCount->setSingleStep(static_cast<int>(std::clamp<std::int64_t>(split, 1, 1024)));
    m_pipelineParallel->setValue(static_cast<int>(par.pipeline_parallel));
    m_pipelineParallel->setEnabled(train || par.pipeline_parallel > 1);
    {
        std::vector<int> degrees; // those the GPUs left by TP and CP divide into
        const std::int64_t rest = std::max<std::int64_t>(1,
                                                         par.tensor_parallel * par.context_parallel);
        for (int d = 1; d <= 1024; ++d)
            if (par.gpus % (rest * d) == 0)
                degrees.push_back(d);
        m_pipelineParallel->setSteps(std::move(degrees));
    }
    selectName(m_pipelineSchedule, pipelineScheduleName(par.pipeline_schedule));
    m_pipelineSchedule->setEnabled(par.pipeline_parallel > 1);
    m_pipelineChunks->setValue(
        static_cast<int>(std::clamp<std::int64_t>(par.pipeline_virtual_stages, 2, 64)));
    m_pipelineChunks->setEnabled(par.pipeline_parallel > 1
                                 && par.pipeline_schedule == PipelineSchedule::Interleaved1F1B);
    if (!m_pipelineLayers->hasFocus())
        m_pipelineLayers->setText(pipelineLayersText(par.pipeline_layers));
    m_pipelineLayers->setEnabled(par.pipeline_parallel > 1);
    m_contextParallel->setValue(static_cast<int>(s.parallelism.context_parallel));
    m_contextParallel->setEnabled(train || s.parallelism.context_parallel > 1);
    {
        std::vector<int> degrees; // those dividing the data-parallel GPUs
        for (int d = 1; d <= 1024; ++d)
            if (s.parallelism.dataParallel() % d == 0)
                degrees.push_back(d);
        m_contextParallel->setSteps(std::move(degrees));
    }
    {
        std::string unused;
        const auto arch = m_doc->catalog().resolveModel(s.model, unused);
        std::vector<int> degrees;
        for (int d = 1; d <= 1024; ++d)
            if (s.parallelism.gpus % d == 0 && (!arch || arch->attention_heads % d == 0))
                degrees.push_back(d);
        m_tensorParallel->setSteps(std::move(degrees));
    }
    selectName(m_sharding, shardingName(s.parallelism.sharding));
    m_shardGroup->setValue(
        static_cast<int>(std::clamp<std::int64_t>(s.parallelism.shard_group, 0, 1'000'000)));
    {
        // The arrows offer the divisors of the data-parallel GPUs (0: all of them).
        // Pairs up to the square root: a few hundred steps even for a million GPUs.
        std::vector<int> groups{0};
        const std::int64_t dp = std::min<std::int64_t>(s.parallelism.dataParallel(), 1'000'000);
        for (std::int64_t g = 1; g * g <= dp; ++g)
            if (dp % g == 0)
                for (std::int64_t d : {g, dp / g})
                    if (d < dp)
                        groups.push_back(static_cast<int>(d));
        std::sort(groups.begin(), groups.end());
        groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
        m_shardGroup->setSteps(std::move(groups));
    }
    m_shardGroup->setEnabled(s.parallelism.sharding != Sharding::None
                             && (s.parallelism.dataParallel() > 1 || s.parallelism.shard_group > 0));
    for (int i = 0; i < m_gpuList->count(); ++i) {
        QListWidgetItem *item = m_gpuList->item(i);
        const std::string id = item->data(Qt::UserRole).toString().toStdString();
        const bool on = std::find(s.gpus.begin(), s.gpus.end(), id) != s.gpus.end();
        item->setCheckState(on ? Qt::Checked : Qt::Unchecked);
    }
    filterGpus(m_gpuFilter->text());

    // Overheads
    m_cudaContext->setValue(static_cast<double>(s.overheads.cuda_context_bytes)
                            / static_cast<double>(kMiB));
    m_nccl->setValue(static_cast<double>(s.overheads.nccl_bytes) / static_cast<double>(kMiB));
    m_reserve->setValue(s.overheads.allocator_reserve_fraction
                            ? *s.overheads.allocator_reserve_fraction * 100.0
                            : -1.0);
    blockers.clear();
    m_syncing = false;
}

} // namespace membudget
