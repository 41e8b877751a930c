// SPDX-License-Identifier: GPL-3.0-or-later
// The controls panel (issue #16): the mouse wheel scrolls the panel unless a control has the focus
// (item 5); beyond the model's context length the panel, the verdict and the sweep say so and stop
// there (item 7); inference hides what only training has and the KV cache is a component of its own
// in legend, hover text, Markdown and breakdown (item 8); the GPU list shows capacities in the unit
// in use, rounded down (item 10); a Hugging Face id typed into the preset search gets a hint
// instead of silently going back (item 14).
#include "charts/budget_chart.h"
#include "charts/sweep_chart.h"
#include "document/scenario_document.h"
#include "main_window.h"
#include "panels/breakdown_view.h"
#include "panels/controls_panel.h"
#include "panels/verdict_panel.h"
#include "widgets/collapsible_section.h"
#include "widgets/log_slider.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>
#include <QWheelEvent>
#include <QtTest/qtestspontaneevent.h>

#include <functional>

using namespace membudget;

namespace {

// A wheel notch over `w`, delivered as the platform delivers it: spontaneous, so that it goes on to
// the parents when the widget does not accept it.
void wheel(QWidget *w, int delta)
{
    const QPointF local(w->width() / 2.0, w->height() / 2.0);
    QWheelEvent event(local,
                      w->mapToGlobal(local),
                      QPoint(),
                      QPoint(0, delta),
                      Qt::NoButton,
                      Qt::NoModifier,
                      Qt::NoScrollPhase,
                      false);
    QSpontaneKeyEvent::setSpontaneous(&event);
    QApplication::sendEvent(w, &event);
}

bool rowShown(QWidget *field)
{
    return field->isVisibleTo(field->window());
}

// One component of the current estimate at a phase's peak, as a function to call after each edit.
std::function<Bytes()> partOf(const ScenarioDocument *doc, Phase phase, Component component)
{
    return [doc, phase, component] { return doc->estimate().phase(phase)[component]; };
}

} // namespace

class TestControlsPanel : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void init();
    void cleanup();
    void wheelScrollsThePanelUnlessTheControlHasFocus();
    void contextLengthIsWarnedAndCapped();
    void inferenceHidesTrainingAndNamesTheKvCache();
    void gpuListFollowsTheUnitRoundedDown();
    void aHuggingFaceIdGetsAHint();
    void torchReleasePickerFollowsTheScenario();
    void sequenceParallelFollowsTheStackUntilSet();
    void pipelineLayersSetByHand();
    void checkpointEveryShowsWithFullCheckpointing();
    void shardGroupStepsThroughDivisors();
    void optimizerInBackwardFreesTheGradients();
    void activationOffloadingNeedsFullCheckpointing();
    void useCacheFollowsTheStackUntilSet();
    void deepSpeedLocksTheAdapterDtype();
    void deepSpeedTrains16BitAsMixedPrecision();

private:
    QTemporaryDir *m_dir = nullptr;
    MainWindow *m_window = nullptr;
};

void TestControlsPanel::init()
{
    m_dir = new QTemporaryDir;
    m_window = new MainWindow(PresetCatalog::bundled(),
                              std::make_unique<AppSettings>(m_dir->filePath("settings.ini")));
    m_window->resize(1366, 768);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window));
}

void TestControlsPanel::cleanup()
{
    delete m_window;
    delete m_dir;
}

void TestControlsPanel::wheelScrollsThePanelUnlessTheControlHasFocus()
{
    auto *scroll = qobject_cast<QScrollArea *>(m_window->controls()->parentWidget()->parentWidget());
    QVERIFY(scroll);
    QVERIFY(scroll->verticalScrollBar()->maximum() > 0);
    auto *mode = m_window->findChild<QComboBox *>(QStringLiteral("mode"));
    auto *rank = m_window->findChild<QSpinBox *>(QStringLiteral("loraRank"));
    const int modeBefore = mode->currentIndex();
    const int rankBefore = rank->value();
    const Scenario before = m_window->document()->scenario();
    QVERIFY(!mode->hasFocus());
    // Scrolling down past the combo box and the spin box changes neither: the panel scrolls.
    wheel(mode, -120);
    QVERIFY(scroll->verticalScrollBar()->value() > 0);
    const int scrolled = scroll->verticalScrollBar()->value();
    wheel(rank, -120);
    QVERIFY(scroll->verticalScrollBar()->value() > scrolled);
    QCOMPARE(mode->currentIndex(), modeBefore);
    QCOMPARE(rank->value(), rankBefore);
    QVERIFY(m_window->document()->scenario() == before);
    // Once the user clicked into it, the wheel is the control's.
    rank->setFocus();
    QVERIFY(rank->hasFocus());
    wheel(rank, 120);
    QCOMPARE(rank->value(), rankBefore + 1);
}

void TestControlsPanel::contextLengthIsWarnedAndCapped()
{
    ScenarioDocument *doc = m_window->document();
    auto *warning = m_window->findChild<QLabel *>(QStringLiteral("contextWarning"));
    QVERIFY(warning);
    QVERIFY(!warning->isVisible());
    // 500,000 tokens on Llama 3.1 8B (131,072): said under the sequence and in the verdict.
    auto *sequence = m_window->controls()->sequenceSlider();
    static_cast<QSpinBox *>(sequence->spinBox())->setValue(500000);
    QCOMPARE(doc->scenario().training.sequence_length, std::int64_t(500000));
    QVERIFY(warning->isVisible());
    QVERIFY2(warning->text().contains(QStringLiteral("131,072")), qPrintable(warning->text()));
    QVERIFY(m_window->verdictPanel()->summaryText().contains(QStringLiteral("context length")));
    // Max seq. never above the model's context; where the context is the limit, it says so.
    doc->edit(QStringLiteral("gpus"), [](Scenario &s) {
        s.gpus = {"h200"};
        s.training.micro_batch_size = 1;
        s.model.preset = "mistral-7b-v0.1";
    });
    QTreeWidget *table = m_window->verdictPanel()->table();
    m_window->verdictPanel()->limitsWorker()->waitForNewest(); // the exact value
    QCOMPARE(table->topLevelItem(0)->text(table->columnCount() - 1), QStringLiteral("32,768*"));
    // The sweep stops at the context too.
    m_window->views()->setCurrentIndex(MainWindow::SweepViewIndex);
    SweepChart *sweep = m_window->sweepView()->chart();
    QVERIFY(!sweep->samples().empty());
    for (const SweepChart::Sample &s : sweep->samples())
        QVERIFY2(s.x <= 32768, qPrintable(QString::number(s.x)));
    QVERIFY(sweep->maxFits().front() <= 32768);
    // With RoPE scaling declared, the longer context is fine.
    doc->edit(QStringLiteral("rope"), [](Scenario &s) { s.model.rope_scaling_factor = 16.0; });
    QVERIFY(!warning->isVisible());
    QVERIFY(!m_window->verdictPanel()->summaryText().contains(QStringLiteral("context length")));
}

void TestControlsPanel::inferenceHidesTrainingAndNamesTheKvCache()
{
    ScenarioDocument *doc = m_window->document();
    doc->edit(QStringLiteral("mixed"),
              [](Scenario &s) { s.training.precision = Precision::MixedBf16; });
    auto *mode = m_window->findChild<QComboBox *>(QStringLiteral("mode"));
    const int inference = mode->findData(QStringLiteral("inference"));
    mode->setCurrentIndex(inference);
    Q_EMIT mode->activated(inference);
    QCOMPARE(doc->scenario().training.mode, Mode::Inference);
    // No master copy in inference: the mixed precision became its 16-bit weights.
    QCOMPARE(doc->scenario().training.precision, Precision::Bf16);
    for (const char *name :
         {"method", "optimizer", "gradientAccumulation", "checkpointing", "loss", "offloadOptimizer"})
        QVERIFY2(!rowShown(m_window->findChild<QWidget *>(QLatin1String(name))), name);
    QVERIFY(!m_window->findChild<CollapsibleSection *>(QStringLiteral("loraGroup"))
                 ->isVisibleTo(m_window));
    for (const char *name :
         {"precision", "quantization", "microBatch", "sequenceLength", "attention"})
        QVERIFY2(rowShown(m_window->findChild<QWidget *>(QLatin1String(name))), name);
    auto *precision = m_window->findChild<QComboBox *>(QStringLiteral("precision"));
    auto *items = qobject_cast<QStandardItemModel *>(precision->model());
    QVERIFY(!items->item(precision->findData(QStringLiteral("mixed-bf16")))->isEnabled());
    QVERIFY(items->item(precision->findData(QStringLiteral("bf16")))->isEnabled());

    // The chart's legend and hover text say KV cache; no gradient or optimizer rows anywhere.
    BudgetChart *chart = m_window->chart();
    QStringList legend;
    for (int i = 0; i < chart->legend->itemCount(); ++i)
        if (auto *item = qobject_cast<QCPPlottableLegendItem *>(chart->legend->item(i)))
            legend << item->plottable()->name();
    QVERIFY2(legend.contains(QStringLiteral("KV cache")), qPrintable(legend.join(", ")));
    QCOMPARE(chart->segmentValue(0, Component::KvCache),
             static_cast<double>(doc->estimate().components[Component::KvCache])
                 / static_cast<double>(kGiB));
    QVERIFY(chart->segmentToolTip(0, Component::KvCache).contains(QStringLiteral("KV cache")));
    m_window->action(QStringLiteral("actionCopyMarkdown"))->trigger();
    const QString markdown = QApplication::clipboard()->text();
    for (const char *row : {"| Gradients", "| Master weights", "| Optimizer states"})
        QVERIFY2(!markdown.contains(QLatin1String(row)), row);
    QVERIFY(markdown.contains(QStringLiteral("| KV cache")));
    m_window->views()->setCurrentIndex(MainWindow::BreakdownViewIndex);
    QTreeWidget *breakdown = m_window->breakdownView()->table();
    QStringList rows;
    for (int r = 0; r < breakdown->topLevelItemCount(); ++r)
        rows << breakdown->topLevelItem(r)->text(0);
    QVERIFY2(rows.contains(QStringLiteral("KV cache"))
                 && !rows.contains(QStringLiteral("Gradients")),
             qPrintable(rows.join(", ")));

    // With ZeRO-3 the offload row returns for the parameters, without the optimizer's box (the
    // form shows every widget of a row it shows again; the box is hidden after it).
    doc->edit(QStringLiteral("zero3"), [](Scenario &s) {
        s.parallelism.gpus = 2;
        s.parallelism.sharding = Sharding::Zero3;
    });
    QVERIFY(rowShown(m_window->findChild<QWidget *>(QStringLiteral("offloadParameters"))));
    QVERIFY(!rowShown(m_window->findChild<QWidget *>(QStringLiteral("offloadOptimizer"))));

    // Back to training: everything returns.
    const int train = mode->findData(QStringLiteral("train"));
    mode->setCurrentIndex(train);
    Q_EMIT mode->activated(train);
    for (const char *name : {"method", "optimizer", "checkpointing", "offloadOptimizer"})
        QVERIFY2(rowShown(m_window->findChild<QWidget *>(QLatin1String(name))), name);
    QVERIFY(items->item(precision->findData(QStringLiteral("mixed-bf16")))->isEnabled());
}

void TestControlsPanel::gpuListFollowsTheUnitRoundedDown()
{
    auto *list = m_window->findChild<QListWidget *>(QStringLiteral("gpuList"));
    auto textOf = [list](const char *id) {
        for (int i = 0; i < list->count(); ++i)
            if (list->item(i)->data(Qt::UserRole).toString() == QLatin1String(id))
                return list->item(i)->text();
        return QString();
    };
    // GiB by default: the MI210's 65,520 MiB is 63.98 GiB, shown as 63.9 (never 64 GiB it does
    // not have).
    QVERIFY2(textOf("mi210").endsWith(QStringLiteral("— 63.9 GiB")), qPrintable(textOf("mi210")));
    QVERIFY2(textOf("gaudi3").endsWith(QStringLiteral("— 128 GiB")), qPrintable(textOf("gaudi3")));
    QVERIFY2(textOf("v100-16gb").endsWith(QStringLiteral("— 15.7 GiB")),
             qPrintable(textOf("v100-16gb")));
    // Where CUDA's lower total is known, that is what a process gets and what is shown: the RTX
    // 4090's 24,212 of the driver's 24,564 MiB; the tooltip says which figure it is.
    QVERIFY2(textOf("rtx-4090").endsWith(QStringLiteral("— 23.6 GiB")),
             qPrintable(textOf("rtx-4090")));
    const QString tip
        = list->findItems(QStringLiteral("RTX 4090"), Qt::MatchContains).front()->toolTip();
    QVERIFY2(tip.contains(QStringLiteral("23.64 GiB usable, the total CUDA reports; the driver "
                                         "reports 23.98 GiB")),
             qPrintable(tip));
    const auto tipOf = [list](const char *name) {
        return list->findItems(QLatin1String(name), Qt::MatchContains).front()->toolTip();
    };
    QVERIFY2(tipOf("Intel Gaudi 3").contains(QStringLiteral("CUDA's usable total is not known")),
             qPrintable(tipOf("Intel Gaudi 3")));
    // ROCm reports the driver's total as CUDA's; NVIDIA GPUs name their compute capability.
    QVERIFY2(tipOf("AMD Instinct MI210").contains(QStringLiteral("which is the driver's total")),
             qPrintable(tipOf("AMD Instinct MI210")));
    QVERIFY2(tipOf("NVIDIA B300").contains(QStringLiteral("blackwell, compute capability 10.3")),
             qPrintable(tipOf("NVIDIA B300")));
    QVERIFY2(tipOf("AMD Instinct MI210").contains(QStringLiteral("· cdna\n")),
             qPrintable(tipOf("AMD Instinct MI210")));
    const bool checked
        = list->findItems(QStringLiteral("RTX 4090"), Qt::MatchContains).front()->checkState()
          == Qt::Checked;
    m_window->setUnit(ByteUnit::GB);
    QVERIFY2(textOf("rtx-4090").endsWith(QStringLiteral("— 25.3 GB")),
             qPrintable(textOf("rtx-4090")));
    // Switching units keeps the ticks.
    QCOMPARE(list->findItems(QStringLiteral("RTX 4090"), Qt::MatchContains).front()->checkState()
                 == Qt::Checked,
             checked);
}

void TestControlsPanel::aHuggingFaceIdGetsAHint()
{
    auto *model = m_window->findChild<QComboBox *>(QStringLiteral("modelPreset"));
    auto *hint = m_window->findChild<QLabel *>(QStringLiteral("modelHint"));
    const Scenario before = m_window->document()->scenario();
    model->lineEdit()->setText(QStringLiteral("https://huggingface.co/meta-llama/Llama-3.1-70B"));
    Q_EMIT model->lineEdit()->editingFinished();
    QVERIFY(hint->isVisible());
    QVERIFY2(hint->text().contains(QStringLiteral("meta-llama/Llama-3.1-70B"))
                 && hint->text().contains(QStringLiteral("Hugging Face")),
             qPrintable(hint->text()));
    QVERIFY(hint->text().contains(QStringLiteral("Press Enter")));
    // The typed text stays (no silent revert), the model in use is unchanged.
    QCOMPARE(model->currentText(),
             QStringLiteral("https://huggingface.co/meta-llama/Llama-3.1-70B"));
    QVERIFY(m_window->document()->scenario() == before);
    // Something that is neither a preset nor an id gets a hint of its own.
    model->lineEdit()->setText(QStringLiteral("no such model"));
    Q_EMIT model->lineEdit()->editingFinished();
    QVERIFY(hint->text().contains(QStringLiteral("No preset matches")));
    // Choosing a preset clears it.
    const int mistral = model->findData(QStringLiteral("mistral-7b-v0.1"));
    model->setCurrentIndex(mistral);
    Q_EMIT model->activated(mistral);
    Q_EMIT model->lineEdit()->editingFinished();
    QVERIFY(!hint->isVisible());
}

// The PyTorch picker (issue #11's swift-mistral run): 2.0's AdamW keeps two parameter-sized lists,
// the newest one; the release survives a change of stack and shows on the picker.
void TestControlsPanel::torchReleasePickerFollowsTheScenario()
{
    ScenarioDocument *doc = m_window->document();
    doc->edit(QStringLiteral("full bf16"), [](Scenario &s) {
        s.training.method = Method::Full;
        s.training.precision = Precision::Bf16;
        s.training.optimizer = Optimizer::AdamW;
    });
    const auto temporaries = partOf(doc, Phase::OptimizerStep, Component::Temporaries);
    const auto newest = temporaries();
    auto *torch = m_window->findChild<QComboBox *>(QStringLiteral("torch"));
    QVERIFY(torch);
    QCOMPARE(torch->currentIndex(), 0);
    torch->setCurrentIndex(5);
    Q_EMIT torch->activated(5);
    QCOMPARE(doc->scenario().training.stack.version, std::string("2.0"));
    QCOMPARE(temporaries(), 2 * newest);

    auto *stack = m_window->findChild<QComboBox *>(QStringLiteral("stack"));
    const int trainer = stack->findData(QStringLiteral("hf-trainer"));
    stack->setCurrentIndex(trainer);
    Q_EMIT stack->activated(trainer);
    QCOMPARE(doc->scenario().training.stack.torch, std::string("2.0"));
    QCOMPARE(doc->scenario().training.optimizer, Optimizer::AdamW); // fused needs torch 2.8
    QCOMPARE(torch->currentIndex(), 5);

    doc->undoStack()->undo();
    doc->undoStack()->undo();
    QCOMPARE(torch->currentIndex(), 0);
    QCOMPARE(temporaries(), newest);
}

void TestControlsPanel::sequenceParallelFollowsTheStackUntilSet()
{
    ScenarioDocument *doc = m_window->document();
    auto *sp = m_window->findChild<QCheckBox *>(QStringLiteral("sequenceParallel"));
    QVERIFY(sp);
    QVERIFY(!sp->isEnabled()); // one GPU: nothing to shard
    doc->edit(QStringLiteral("TP 2"), [](Scenario &s) {
        s.training.stack = StackConfig{Stack::Torchtitan, "", ""};
        s.parallelism.gpus = 2;
        s.parallelism.tensor_parallel = 2;
    });
    QVERIFY(sp->isEnabled());
    QVERIFY(sp->isChecked()); // torchtitan's default, not yet written in the scenario
    QVERIFY(!doc->scenario().parallelism.sequence_parallel.has_value());
    const auto activations = partOf(doc, Phase::Forward, Component::Activations);
    const auto sharded = activations();
    sp->click();
    QCOMPARE(doc->scenario().parallelism.sequence_parallel, std::optional<bool>(false));
    QVERIFY(activations() > sharded);
    doc->undoStack()->undo();
    QVERIFY(sp->isChecked());
    QCOMPARE(activations(), sharded);

    auto *lossParallel = m_window->findChild<QCheckBox *>(QStringLiteral("lossParallel"));
    QVERIFY(lossParallel && lossParallel->isEnabled());
    QVERIFY(lossParallel->isChecked()); // torchtitan's loss_parallel
    const auto logits = partOf(doc, Phase::Backward, Component::Logits);
    const auto split = logits();
    lossParallel->click();
    QCOMPARE(doc->scenario().parallelism.loss_parallel, std::optional<bool>(false));
    QVERIFY(logits() > split);
}

// Stage layers: typed as a list, undone in one step, cleared when the stage count changes.
void TestControlsPanel::pipelineLayersSetByHand()
{
    ScenarioDocument *doc = m_window->document();
    auto *layers = m_window->findChild<QLineEdit *>(QStringLiteral("pipelineLayers"));
    auto *stages = m_window->findChild<QSpinBox *>(QStringLiteral("pipelineParallel"));
    QVERIFY(layers && stages);
    QVERIFY(!layers->isEnabled()); // one stage
    doc->edit(QStringLiteral("PP 4"), [](Scenario &s) {
        s.training.method = Method::Full;
        s.training.gradient_accumulation_steps = 8;
        s.parallelism.gpus = 4;
        s.parallelism.pipeline_parallel = 4;
    });
    QVERIFY(layers->isEnabled());
    QVERIFY(layers->text().isEmpty());
    const Bytes even = doc->estimate().peak_allocated;
    const int edits = doc->undoStack()->count();
    layers->setFocus();
    QTest::keyClicks(layers, QStringLiteral("7, 9, 9, 7"));
    QTest::keyClick(layers, Qt::Key_Return);
    QCOMPARE(doc->scenario().parallelism.pipeline_layers, (std::vector<std::int64_t>{7, 9, 9, 7}));
    QCOMPARE(doc->undoStack()->count(), edits + 1);
    QCOMPARE(doc->estimate().derivation.stage_layers, std::int64_t(7)); // the first stage, lighter
    QVERIFY(doc->estimate().peak_allocated < even);
    QTest::keyClick(layers, Qt::Key_Return); // the same list again: no edit
    QCOMPARE(doc->undoStack()->count(), edits + 1);

    // Words and counts too long to be layers are not taken.
    layers->selectAll();
    QTest::keyClicks(layers, QStringLiteral("7, nine, 12345678"));
    QCOMPARE(layers->text(), QStringLiteral("7, , 123456"));
    // A stage without layers is kept as typed, not dropped into a split of three stages, and the
    // core says what is wrong; spaces separate counts as commas do.
    layers->selectAll();
    QTest::keyClicks(layers, QStringLiteral("16 0 9 7"));
    QTest::keyClick(layers, Qt::Key_Return);
    QCOMPARE(doc->scenario().parallelism.pipeline_layers, (std::vector<std::int64_t>{16, 0, 9, 7}));
    QVERIFY(!doc->valid());
    QVERIFY2(doc->error().contains(QStringLiteral("stage 2 has 0 layers")),
             qPrintable(doc->error()));
    stages->setFocus(); // leaving the field again is no second edit
    QCOMPARE(doc->undoStack()->count(), edits + 2);
    doc->undoStack()->undo();
    QCOMPARE(layers->text(), QStringLiteral("7, 9, 9, 7"));

    stages->setValue(2);
    QVERIFY(doc->scenario().parallelism.pipeline_layers.empty());
    QVERIFY(layers->text().isEmpty());
    doc->undoStack()->undo();
    QCOMPARE(doc->scenario().parallelism.pipeline_parallel, std::int64_t(4));
    QCOMPARE(layers->text(), QStringLiteral("7, 9, 9, 7"));
}

void TestControlsPanel::checkpointEveryShowsWithFullCheckpointing()
{
    ScenarioDocument *doc = m_window->document();
    auto *every = m_window->findChild<QSpinBox *>(QStringLiteral("checkpointEvery"));
    QVERIFY(every);
    doc->edit(QStringLiteral("full bf16, no checkpointing"), [](Scenario &s) {
        s.training.method = Method::Full;
        s.training.checkpointing = Checkpointing::None;
    });
    QVERIFY(!every->isVisibleTo(m_window));
    auto *stack = m_window->findChild<QComboBox *>(QStringLiteral("stack"));
    const int titan = stack->findData(QStringLiteral("torchtitan"));
    stack->setCurrentIndex(titan);
    Q_EMIT stack->activated(titan);
    QCOMPARE(doc->scenario().training.checkpointing, Checkpointing::Full);
    QVERIFY(every->isVisibleTo(m_window));
    QCOMPARE(every->value(), 2);
    QCOMPARE(every->text(), QStringLiteral("1 in 2 layers"));
    const auto activations = partOf(doc, Phase::Forward, Component::Activations);
    const auto half = activations();
    every->setValue(1);
    QCOMPARE(doc->scenario().training.checkpoint_every, std::int64_t(1));
    QCOMPARE(every->text(), QStringLiteral("every layer"));
    QVERIFY(activations() < half);
    doc->undoStack()->undo();
    QCOMPARE(every->value(), 2);
    QCOMPARE(activations(), half);
}

void TestControlsPanel::shardGroupStepsThroughDivisors()
{
    ScenarioDocument *doc = m_window->document();
    auto *group = m_window->findChild<QSpinBox *>(QStringLiteral("shardGroup"));
    QVERIFY(group);
    QVERIFY(!group->isEnabled()); // one GPU, no sharding
    doc->edit(QStringLiteral("FSDP on 16"), [](Scenario &s) {
        s.training.method = Method::Full;
        s.parallelism.gpus = 16;
        s.parallelism.sharding = Sharding::FsdpFull;
    });
    QVERIFY(group->isEnabled());
    QCOMPARE(group->text(), QStringLiteral("all data-parallel GPUs"));
    const auto weights = partOf(doc, Phase::OptimizerStep, Component::Weights);
    const auto all = weights();
    group->stepUp(); // 1
    group->stepUp(); // 2
    group->stepUp(); // 4
    group->stepUp(); // 8
    QCOMPARE(doc->scenario().parallelism.shard_group, std::int64_t(8));
    QCOMPARE(group->text(), QStringLiteral("8 GPUs"));
    QVERIFY(weights() > all); // each GPU holds 1/8 of the weights instead of 1/16
    doc->undoStack()->undo();
    QCOMPARE(doc->scenario().parallelism.shard_group, std::int64_t(4));
}

// The optimizer step in backward: one click takes the gradients out of the optimizer step's peak,
// undo puts them back; the box hides in inference.
void TestControlsPanel::optimizerInBackwardFreesTheGradients()
{
    ScenarioDocument *doc = m_window->document();
    auto *box = m_window->findChild<QCheckBox *>(QStringLiteral("optimizerInBackward"));
    QVERIFY(box);
    doc->edit(QStringLiteral("full bf16 on one GPU"), [](Scenario &s) {
        s.training.mode = Mode::Train;
        s.training.method = Method::Full;
        s.training.precision = Precision::Bf16;
        s.training.gradient_accumulation_steps = 1;
        s.parallelism.gpus = 1;
        s.parallelism.sharding = Sharding::None;
    });
    QVERIFY(rowShown(box));
    QVERIFY(!box->isChecked());
    const auto gradients = partOf(doc, Phase::OptimizerStep, Component::Gradients);
    const Bytes all = gradients();
    QVERIFY(all > 0);
    box->click();
    QVERIFY(doc->scenario().training.optimizer_in_backward);
    QCOMPARE(gradients(), Bytes(0));
    doc->undoStack()->undo();
    QVERIFY(!box->isChecked());
    QCOMPARE(gradients(), all);
    doc->edit(QStringLiteral("inference"), [](Scenario &s) { s.training.mode = Mode::Inference; });
    QVERIFY(!rowShown(box));
}

// Activation offloading is offered with full checkpointing on every layer; ticking it moves the
// layer inputs off the GPU (the forward's activations drop) and puts them in CPU RAM.
void TestControlsPanel::activationOffloadingNeedsFullCheckpointing()
{
    ScenarioDocument *doc = m_window->document();
    auto *box = m_window->findChild<QCheckBox *>(QStringLiteral("activationOffloading"));
    QVERIFY(box);
    doc->edit(QStringLiteral("full bf16, no checkpointing"), [](Scenario &s) {
        s.training.mode = Mode::Train;
        s.training.method = Method::Full;
        s.training.checkpointing = Checkpointing::None;
        s.training.checkpoint_every = 1;
    });
    QVERIFY(rowShown(box));
    QVERIFY(!box->isEnabled());
    doc->edit(QStringLiteral("full checkpointing"),
              [](Scenario &s) { s.training.checkpointing = Checkpointing::Full; });
    QVERIFY(box->isEnabled());
    const auto activations = partOf(doc, Phase::Forward, Component::Activations);
    const Bytes kept = activations();
    QCOMPARE(doc->estimate().cpu_offload_bytes, Bytes(0));
    box->click();
    QVERIFY(doc->scenario().training.activation_offloading);
    QVERIFY(activations() < kept);
    QVERIFY(doc->estimate().cpu_offload_bytes > 0);
    doc->undoStack()->undo();
    QCOMPARE(activations(), kept);
}

// transformers' KV cache in a training forward: the Trainer's before 5.0, off under
// checkpointing, no row for torchtune's and torchtitan's models.
void TestControlsPanel::useCacheFollowsTheStackUntilSet()
{
    ScenarioDocument *doc = m_window->document();
    auto *box = m_window->findChild<QCheckBox *>(QStringLiteral("useCache"));
    QVERIFY(box);
    doc->edit(QStringLiteral("Trainer, eager, no checkpointing"), [](Scenario &s) {
        s.training.mode = Mode::Train;
        s.model.preset = "mistral-7b-v0.1"; // grouped-query: eager saves repeated keys
        s.training.stack = StackConfig{Stack::HfTrainer, "4.57", ""};
        s.training.attention = Attention::Eager;
        s.training.checkpointing = Checkpointing::None;
    });
    QVERIFY(rowShown(box) && box->isEnabled());
    QVERIFY(box->isChecked()); // the Trainer's default before 5.0, not written in the scenario
    QVERIFY(!doc->scenario().training.use_cache.has_value());
    const auto forward = [doc] { return doc->estimate().phase(Phase::Forward).allocated(); };
    const Bytes cached = forward();
    box->click();
    QCOMPARE(doc->scenario().training.use_cache, std::optional<bool>(false));
    QVERIFY(forward() < cached);
    doc->undoStack()->undo();
    QVERIFY(box->isChecked());
    QCOMPARE(forward(), cached);
    doc->edit(QStringLiteral("checkpointing"),
              [](Scenario &s) { s.training.checkpointing = Checkpointing::Full; });
    QVERIFY(!box->isEnabled() && !box->isChecked());
    doc->edit(QStringLiteral("torchtitan"), [](Scenario &s) {
        s.training.stack = StackConfig{Stack::Torchtitan, "", ""};
    });
    QVERIFY(!rowShown(box));
}

// DeepSpeed over several GPUs casts the model to bf16: the adapter dtype shows the training
// precision and cannot be picked; with one GPU the scenario's fp32 is back.
void TestControlsPanel::deepSpeedLocksTheAdapterDtype()
{
    ScenarioDocument *doc = m_window->document();
    auto *combo = m_window->findChild<QComboBox *>(QStringLiteral("adapterPrecision"));
    QVERIFY(combo);
    doc->edit(QStringLiteral("LoRA with fp32 adapters under ZeRO-2"), [](Scenario &s) {
        s.training.mode = Mode::Train;
        s.training.method = Method::Lora;
        s.training.precision = Precision::MixedBf16;
        s.training.lora.adapter_precision = AdapterPrecision::Fp32;
        s.parallelism.gpus = 2;
        s.parallelism.sharding = Sharding::Zero2;
    });
    QVERIFY(!combo->isEnabled());
    QCOMPARE(combo->currentData().toString(), QStringLiteral("base"));
    QVERIFY(combo->toolTip().contains(QStringLiteral("DeepSpeed")));
    doc->edit(QStringLiteral("one GPU"), [](Scenario &s) {
        s.parallelism.gpus = 1;
        s.parallelism.sharding = Sharding::None;
    });
    QVERIFY(combo->isEnabled());
    QCOMPARE(combo->currentData().toString(), QStringLiteral("fp32"));
}

void TestControlsPanel::deepSpeedTrains16BitAsMixedPrecision()
{
    ScenarioDocument *doc = m_window->document();
    auto *combo = m_window->findChild<QComboBox *>(QStringLiteral("precision"));
    QVERIFY(combo);
    auto *items = qobject_cast<QStandardItemModel *>(combo->model());
    QVERIFY(items);
    const auto enabled = [&](const char *name) {
        const int row = combo->findData(QString::fromLatin1(name));
        return row >= 0 && items->item(row)->isEnabled();
    };
    doc->edit(QStringLiteral("fp16 under ZeRO-3"), [](Scenario &s) {
        s.training.mode = Mode::Train;
        s.training.method = Method::Full;
        s.training.precision = Precision::Fp16;
        s.parallelism.gpus = 4;
        s.parallelism.sharding = Sharding::Zero3;
    });
    QCOMPARE(combo->currentData().toString(), QStringLiteral("mixed-fp16"));
    QVERIFY(!enabled("fp16"));
    QVERIFY(enabled("bf16")); // DeepSpeed's bf16 master weights and optimizer states
    QVERIFY(enabled("mixed-bf16"));
    QVERIFY(combo->toolTip().contains(QStringLiteral("DeepSpeed")));
    QCOMPARE(doc->scenario().training.precision, Precision::Fp16); // the file keeps its choice
    doc->edit(QStringLiteral("FSDP"),
              [](Scenario &s) { s.parallelism.sharding = Sharding::FsdpFull; });
    QCOMPARE(combo->currentData().toString(), QStringLiteral("fp16"));
    QVERIFY(enabled("fp16"));
    QVERIFY(!combo->toolTip().contains(QStringLiteral("DeepSpeed")));
    // Under the Trainer its bf16 flag only turns DeepSpeed's bf16 on: pure bf16 and AMP train as
    // mixed bf16.
    doc->edit(QStringLiteral("bf16 under the Trainer and ZeRO-3"), [](Scenario &s) {
        s.training.precision = Precision::Bf16;
        s.training.stack = {Stack::HfTrainer, "", ""};
        s.parallelism.sharding = Sharding::Zero3;
    });
    QCOMPARE(combo->currentData().toString(), QStringLiteral("mixed-bf16"));
    QVERIFY(!enabled("bf16"));
    QVERIFY(!enabled("amp-bf16"));
    QVERIFY(enabled("mixed-bf16"));
    QVERIFY(combo->toolTip().contains(QStringLiteral("under the Trainer")));
    QCOMPARE(doc->scenario().training.precision, Precision::Bf16);
}

QTEST_MAIN(TestControlsPanel)
#include "tst_controls_panel.moc"
