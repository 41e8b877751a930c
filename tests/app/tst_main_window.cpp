// SPDX-License-Identifier: GPL-3.0-or-later
// The main window, offscreen: every control changes the chart's data exactly as the core says;
// pinning and comparing; undo/redo through the actions; slider drags fold into one undo step; the
// unsaved-changes guard; bad files show an error and keep the scenario; drag and drop; the ladder,
// sweep, verdict and make-it-fit views.
#include "advice/explanation.h"
#include "advice/fit_solver.h"
#include "advice/gpu_verdict.h"
#include "advice/technique_ladder.h"
#include "charts/budget_chart.h"
#include "charts/sweep_chart.h"
#include "document/scenario_document.h"
#include "io/scenario_yaml.h"
#include "main_window.h"
#include "model/step_model.h"
#include "number_format.h"
#include "panels/controls_panel.h"
#include "panels/fit_panel.h"
#include "panels/verdict_panel.h"
#include "widgets/log_slider.h"

#include "base/time_format.h"
#include "panels/dataset_box.h"
#include "throughput/throughput_model.h"

#include <QAction>
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QLabel>
#include <QListWidget>
#include <QMimeData>
#include <QRegularExpression>
#include <QSettings>
#include <QSlider>
#include <QSpinBox>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QToolButton>
#include <QTreeWidget>
#include <QUndoStack>

#include <clocale>
#include <functional>

using namespace membudget;

using Action = std::function<void(MainWindow *)>;
using Check = std::function<bool(const Scenario &)>;
Q_DECLARE_METATYPE(Action)
Q_DECLARE_METATYPE(Check)

namespace {

// Answers the window's questions without dialogs and records what it was told.
class FakePrompts : public UserPrompts
{
public:
    SaveChoice answer = SaveChoice::Cancel;
    QString saveAnswer;
    QString openAnswer;
    int asked = 0;
    QStringList errors;

    SaveChoice askSaveChanges(QWidget *, const QString &) override
    {
        ++asked;
        return answer;
    }
    void showError(QWidget *, const QString &title, const QString &text) override
    {
        errors << title + QLatin1Char('\n') + text;
    }
    QString openFileName(QWidget *, const QString &, const QString &, const QString &) override
    {
        return openAnswer;
    }
    QString saveFileName(QWidget *, const QString &, const QString &, const QString &) override
    {
        return saveAnswer;
    }
};

template<typename T>
T *child(MainWindow *w, const char *name)
{
    T *widget = w->findChild<T *>(QLatin1String(name));
    if (!widget)
        qFatal("no widget named %s", name);
    return widget;
}

// Picks the combo entry whose data is `name` as a user would: keyboard until it is reached.
void chooseByKeyboard(QComboBox *combo, const QString &name)
{
    const int target = combo->findData(name);
    QVERIFY2(target >= 0, qPrintable(name));
    combo->setFocus();
    while (combo->currentIndex() != target) {
        const int before = combo->currentIndex();
        QTest::keyClick(combo, combo->currentIndex() < target ? Qt::Key_Down : Qt::Key_Up);
        QVERIFY2(combo->currentIndex() != before, "keyboard does not move the combo box");
    }
}

void setSpin(QSpinBox *spin, int value)
{
    spin->setValue(value);
}

void setDoubleSpin(QDoubleSpinBox *spin, double value)
{
    spin->setValue(value);
}

// The expected estimate of the document's scenario, straight from the core.
std::optional<MemoryEstimate> coreEstimate(const ScenarioDocument *doc)
{
    std::string error;
    const auto input = resolveScenario(doc->scenario(), doc->catalog(), error);
    if (!input)
        return std::nullopt;
    return estimateMemory(*input);
}

} // namespace

class TestMainWindow : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void init();
    void cleanup();

    void startsWithAUsefulScenario();
    void controlChangesChartAsTheCoreSays_data();
    void controlChangesChartAsTheCoreSays();
    void slidersAreLogarithmicAndInSync();
    void sliderDragIsOneUndoStep();
    void dragEstimateSettlesOnPauseAndRelease();
    void undoRedoThroughActions();
    void pinAndCompare();
    void unitToggle();
    void axisDoesNotJumpWhileDragging();
    void hoverTextHasBytesShareAndFormula();
    void overCapacityIsSaidInWords();
    void ladderView();
    void sweepView();
    void verdictPanel();
    void datasetBoxEditsThroughUndo();
    void makeItFitAppliesWithOneClick();
    void makeItFitSearchesOffTheGuiThread();
    void saveOpenRoundTripKeepsThePicture();
    void unsavedChangesGuard();
    void badFileShowsErrorAndKeepsScenario();
    void dropOpensScenarioAndImportsConfig();
    void titleShowsFileAndModifiedMark();
    void recentFilesAndPresetScenarios();
    void copyBreakdown();
    void parallelismArrowsOfferOnlyValidDegrees();
    void settingsHoldABoundedGpuList();
    void numbersFollowOneFormat();
    void importsAConfigWithEscapedKeys();
    void typedTextCommittedOnCloseReachesAWholeWindow();

private:
    MainWindow *m_window = nullptr;
    FakePrompts *m_prompts = nullptr;
    QTemporaryDir *m_dir = nullptr;
};

void TestMainWindow::init()
{
    m_dir = new QTemporaryDir;
    auto settings = std::make_unique<AppSettings>(m_dir->filePath(QStringLiteral("settings.ini")));
    settings->setUnit(ByteUnit::GB); // these checks divide by 10^9; GiB, the default: tst_units
    m_window = new MainWindow(PresetCatalog::bundled(), std::move(settings));
    auto prompts = std::make_unique<FakePrompts>();
    m_prompts = prompts.get();
    m_window->setPrompts(std::move(prompts));
    m_window->views()->setCurrentIndex(MainWindow::ComparisonView);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window));
}

void TestMainWindow::cleanup()
{
    if (m_window)
        m_prompts->answer = UserPrompts::SaveChoice::Discard;
    delete m_window;
    m_window = nullptr;
    delete m_dir;
}

void TestMainWindow::startsWithAUsefulScenario()
{
    ScenarioDocument *doc = m_window->document();
    QVERIFY(doc->valid());
    BudgetChart *chart = m_window->chart();
    QCOMPARE(chart->bars().size(), std::size_t(1));
    QVERIFY(chart->bars().front().valid);
    QCOMPARE(chart->capacityLineCount(), static_cast<int>(doc->scenario().gpus.size()));
    QVERIFY(chart->segmentValue(0, Component::Weights) > 1);
    // Named as the default scenario is until it changes (tst_scenario_name).
    QVERIFY(m_window->windowTitle().startsWith(QString::fromStdString(defaultScenario().name)));
}

void TestMainWindow::controlChangesChartAsTheCoreSays_data()
{
    QTest::addColumn<Action>("setup");
    QTest::addColumn<Action>("action");
    QTest::addColumn<Check>("check");
    QTest::addColumn<bool>("changesMemory");

    const Action none = [](MainWindow *) {};
    auto doc = [](MainWindow *w) { return w->document(); };
    auto edit = [doc](std::function<void(Scenario &)> f) {
        return Action([doc, f](MainWindow *w) { doc(w)->edit(QStringLiteral("setup"), f); });
    };

    QTest::newRow("model preset") << none << Action([](MainWindow *w) {
        auto *combo = child<QComboBox>(w, "modelPreset");
        const int index = combo->findData(QStringLiteral("mistral-7b-v0.1"));
        combo->setCurrentIndex(index);
        Q_EMIT combo->activated(index);
    }) << Check([](const Scenario &s) { return s.model.preset == "mistral-7b-v0.1"; })
                                  << true;
    QTest::newRow("model size slider") << none << Action([](MainWindow *w) {
        auto *size = child<LogSliderSpin>(w, "modelSize");
        size->setSliderPosition(size->sliderPosition() + 120);
    }) << Check([](const Scenario &s) {
        return s.model.preset.empty() && s.model.parameters.value_or(0) > 9e9;
    }) << true;
    QTest::newRow("model size spin box") << none << Action([](MainWindow *w) {
        static_cast<QDoubleSpinBox *>(child<LogSliderSpin>(w, "modelSize")->spinBox())->setValue(70);
    }) << Check([](const Scenario &s) { return s.model.parameters == 70e9; })
                                         << true;
    QTest::newRow("mode") << none << Action([](MainWindow *w) {
        chooseByKeyboard(child<QComboBox>(w, "mode"), QStringLiteral("inference"));
    }) << Check([](const Scenario &s) { return s.training.mode == Mode::Inference; })
                          << true;
    QTest::newRow("method") << none << Action([](MainWindow *w) {
        chooseByKeyboard(child<QComboBox>(w, "method"), QStringLiteral("full"));
    }) << Check([](const Scenario &s) { return s.training.method == Method::Full; })
                            << true;
    QTest::newRow("method qlora") << none << Action([](MainWindow *w) {
        chooseByKeyboard(child<QComboBox>(w, "method"), QStringLiteral("qlora"));
    }) << Check([](const Scenario &s) {
        return s.training.method == Method::Qlora && s.training.quantization == Quantization::Nf4;
    }) << true;
    QTest::newRow("lora rank") << none << Action([](MainWindow *w) {
        setSpin(child<QSpinBox>(w, "loraRank"), 128);
    }) << Check([](const Scenario &s) { return s.training.lora.rank == 128; })
                               << true;
    QTest::newRow("lora dropout") << edit([](Scenario &s) {
        s.training.checkpointing = Checkpointing::None;
    }) << Action([](MainWindow *w) {
        setDoubleSpin(child<QDoubleSpinBox>(w, "loraDropout"), 0.0);
    }) << Check([](const Scenario &s) { return s.training.lora.dropout == 0.0; })
                                  << true;
    QTest::newRow("lora target") << none << Action([](MainWindow *w) {
        child<QCheckBox>(w, "loraTarget_down_proj")->click();
    }) << Check([](const Scenario &s) { return (s.training.lora.targets & TargetDown) == 0; })
                                 << true;
    QTest::newRow("adapter precision") << none << Action([](MainWindow *w) {
        chooseByKeyboard(child<QComboBox>(w, "adapterPrecision"), QStringLiteral("base"));
    }) << Check([](const Scenario &s) {
        return s.training.lora.adapter_precision == AdapterPrecision::Base;
    }) << true;
    QTest::newRow("precision") << none << Action([](MainWindow *w) {
        chooseByKeyboard(child<QComboBox>(w, "precision"), QStringLiteral("fp32"));
    }) << Check([](const Scenario &s) { return s.training.precision == Precision::Fp32; })
                               << true;
    QTest::newRow("quantization") << edit([](Scenario &s) {
        s.training.method = Method::Qlora;
        s.training.quantization = Quantization::Nf4;
    }) << Action([](MainWindow *w) {
        chooseByKeyboard(child<QComboBox>(w, "quantization"), QStringLiteral("int8"));
    }) << Check([](const Scenario &s) { return s.training.quantization == Quantization::Int8; })
                                  << true;
    QTest::newRow("optimizer") << edit([](Scenario &s) {
        s.training.method = Method::Full;
    }) << Action([](MainWindow *w) {
        chooseByKeyboard(child<QComboBox>(w, "optimizer"), QStringLiteral("adamw-8bit"));
    }) << Check([](const Scenario &s) { return s.training.optimizer == Optimizer::AdamW8bit; })
                               << true;
    QTest::newRow("micro-batch slider") << none << Action([](MainWindow *w) {
        auto *slider = child<LogSliderSpin>(w, "microBatch");
        slider->setSliderPosition(slider->sliderPosition() + 200);
    }) << Check([](const Scenario &s) { return s.training.micro_batch_size > 4; })
                                        << true;
    QTest::newRow("micro-batch spin box") << none << Action([](MainWindow *w) {
        static_cast<QSpinBox *>(child<LogSliderSpin>(w, "microBatch")->spinBox())->setValue(9);
    }) << Check([](const Scenario &s) { return s.training.micro_batch_size == 9; })
                                          << true;
    QTest::newRow("sequence slider") << none << Action([](MainWindow *w) {
        auto *slider = child<LogSliderSpin>(w, "sequenceLength");
        slider->slider()->setFocus();
        QTest::keyClick(slider->slider(), Qt::Key_Right);
    }) << Check([](const Scenario &s) { return s.training.sequence_length > 4096; })
                                     << true;
    QTest::newRow("sequence spin box") << none << Action([](MainWindow *w) {
        static_cast<QSpinBox *>(child<LogSliderSpin>(w, "sequenceLength")->spinBox())->setValue(1000);
    }) << Check([](const Scenario &s) { return s.training.sequence_length == 1000; })
                                       << true;
    QTest::newRow("gradient accumulation")
        << none
        << Action([](MainWindow *w) { setSpin(child<QSpinBox>(w, "gradientAccumulation"), 8); })
        << Check([](const Scenario &s) { return s.training.gradient_accumulation_steps == 8; })
        << false;
    QTest::newRow("checkpointing") << none << Action([](MainWindow *w) {
        chooseByKeyboard(child<QComboBox>(w, "checkpointing"), QStringLiteral("none"));
    }) << Check([](const Scenario &s) { return s.training.checkpointing == Checkpointing::None; })
                                   << true;
    QTest::newRow("attention") << none << Action([](MainWindow *w) {
        chooseByKeyboard(child<QComboBox>(w, "attention"), QStringLiteral("eager"));
    }) << Check([](const Scenario &s) { return s.training.attention == Attention::Eager; })
                               << true;
    QTest::newRow("loss") << none << Action([](MainWindow *w) {
        chooseByKeyboard(child<QComboBox>(w, "loss"), QStringLiteral("chunked"));
    }) << Check([](const Scenario &s) { return s.training.loss == LossImplementation::Chunked; })
                          << true;
    QTest::newRow("offload optimizer")
        << edit([](Scenario &s) { s.training.method = Method::Full; })
        << Action([](MainWindow *w) { child<QCheckBox>(w, "offloadOptimizer")->click(); })
        << Check([](const Scenario &s) { return s.training.offload.optimizer; }) << true;
    QTest::newRow("offload parameters")
        << edit([](Scenario &s) {
               s.training.method = Method::Full;
               s.parallelism.gpus = 4;
               s.parallelism.sharding = Sharding::Zero3;
           })
        << Action([](MainWindow *w) { child<QCheckBox>(w, "offloadParameters")->click(); })
        << Check([](const Scenario &s) { return s.training.offload.parameters; }) << true;
    QTest::newRow("gpu count") << none << Action([](MainWindow *w) {
        setSpin(child<QSpinBox>(w, "gpuCount"), 8);
    }) << Check([](const Scenario &s) { return s.parallelism.gpus == 8; })
                               << true;
    QTest::newRow("sharding") << edit([](Scenario &s) {
        s.training.method = Method::Full;
        s.parallelism.gpus = 8;
    }) << Action([](MainWindow *w) {
        chooseByKeyboard(child<QComboBox>(w, "sharding"), QStringLiteral("fsdp-full"));
    }) << Check([](const Scenario &s) { return s.parallelism.sharding == Sharding::FsdpFull; })
                              << true;
    QTest::newRow("tensor parallel")
        << edit([](Scenario &s) { s.parallelism.gpus = 8; })
        << Action([](MainWindow *w) { setSpin(child<QSpinBox>(w, "tensorParallel"), 2); })
        << Check([](const Scenario &s) { return s.parallelism.tensor_parallel == 2; }) << true;
    QTest::newRow("cuda context") << none << Action([](MainWindow *w) {
        setDoubleSpin(child<QDoubleSpinBox>(w, "cudaContext"), 1024);
    }) << Check([](const Scenario &s) { return s.overheads.cuda_context_bytes == 1024 * kMiB; })
                                  << true;
    QTest::newRow("nccl buffers") << edit([](Scenario &s) {
        s.parallelism.gpus = 2;
    }) << Action([](MainWindow *w) {
        setDoubleSpin(child<QDoubleSpinBox>(w, "ncclBuffers"), 2048);
    }) << Check([](const Scenario &s) { return s.overheads.nccl_bytes == 2048 * kMiB; })
                                  << true;
    QTest::newRow("allocator reserve") << none << Action([](MainWindow *w) {
        setDoubleSpin(child<QDoubleSpinBox>(w, "allocatorReserve"), 25);
    }) << Check([](const Scenario &s) {
        return s.overheads.allocator_reserve_fraction
               && qFuzzyCompare(*s.overheads.allocator_reserve_fraction, 0.25);
    }) << true;
}

void TestMainWindow::controlChangesChartAsTheCoreSays()
{
    QFETCH(Action, setup);
    QFETCH(Action, action);
    QFETCH(Check, check);
    QFETCH(bool, changesMemory);

    ScenarioDocument *doc = m_window->document();
    setup(m_window);
    QVERIFY2(doc->valid(), qPrintable(doc->error()));
    const MemoryEstimate before = doc->estimate();
    const int steps = doc->undoStack()->count();

    action(m_window);
    QVERIFY2(check(doc->scenario()), "the control did not change the scenario as expected");
    // One undo step per user action (keyboard steps through a combo box are one each).
    QVERIFY(doc->undoStack()->count() > steps);

    const auto expected = coreEstimate(doc);
    BudgetChart *chart = m_window->chart();
    QVERIFY2(expected.has_value() == chart->bars().front().valid, qPrintable(doc->error()));
    QVERIFY2(expected, qPrintable(doc->error()));
    for (int c = 0; c < kComponentCount; ++c) {
        const Component comp = static_cast<Component>(c);
        QCOMPARE(chart->segmentValue(0, comp),
                 static_cast<double>(expected->components[comp]) / 1e9);
    }
    QCOMPARE(chart->bars().front().estimate.device_total, expected->device_total);
    if (changesMemory)
        QVERIFY2(expected->components.bytes != before.components.bytes,
                 "the estimate did not change");
}

void TestMainWindow::slidersAreLogarithmicAndInSync()
{
    auto *batch = child<LogSliderSpin>(m_window, "microBatch");
    auto *spin = static_cast<QSpinBox *>(batch->spinBox());
    batch->setSliderPosition(0);
    QCOMPARE(spin->value(), 1);
    batch->setSliderPosition(batch->slider()->maximum());
    QCOMPARE(spin->value(), 1024);
    batch->setSliderPosition(batch->slider()->maximum() / 2);
    QCOMPARE(spin->value(), 32); // the middle of 1..1024 on a log scale
    QCOMPARE(m_window->document()->scenario().training.micro_batch_size, 32);

    // Typing moves the slider.
    spin->setValue(256);
    QCOMPARE(batch->sliderPosition(), batch->slider()->maximum() * 8 / 10);

    auto *seq = child<LogSliderSpin>(m_window, "sequenceLength");
    const auto snaps = ControlsPanel::sequenceSnapValues();
    for (int pos = 0; pos <= seq->slider()->maximum(); ++pos) {
        seq->setSliderPosition(pos);
        QCOMPARE(static_cast<double>(m_window->document()->scenario().training.sequence_length),
                 snaps[static_cast<std::size_t>(pos)]);
    }
    QCOMPARE(snaps.front(), 128.0);
    QCOMPARE(snaps.back(), 1048576.0);
    // Keyboard on the sequence slider steps through the snap values.
    seq->setSliderPosition(3);
    seq->slider()->setFocus();
    QTest::keyClick(seq->slider(), Qt::Key_Right);
    QCOMPARE(static_cast<double>(m_window->document()->scenario().training.sequence_length),
             snaps[4]);
}

void TestMainWindow::sliderDragIsOneUndoStep()
{
    ScenarioDocument *doc = m_window->document();
    auto *seq = child<LogSliderSpin>(m_window, "sequenceLength");
    const std::int64_t start = doc->scenario().training.sequence_length;
    const int steps = doc->undoStack()->count();
    seq->slider()->setSliderDown(true);
    for (int pos = 2; pos <= 12; ++pos)
        seq->slider()->setSliderPosition(pos);
    seq->slider()->setSliderDown(false);
    QCOMPARE(doc->undoStack()->count(), steps + 1);
    QVERIFY(doc->scenario().training.sequence_length != start);
    m_window->action(QStringLiteral("actionUndo"))->trigger();
    QCOMPARE(doc->scenario().training.sequence_length, start);
    QCOMPARE(seq->value(), static_cast<double>(start));

    // A second drag is a second step.
    seq->slider()->setSliderDown(true);
    seq->slider()->setSliderPosition(1);
    seq->slider()->setSliderPosition(2);
    seq->slider()->setSliderDown(false);
    seq->slider()->setSliderDown(true);
    seq->slider()->setSliderPosition(5);
    seq->slider()->setSliderDown(false);
    QCOMPARE(doc->undoStack()->count(), steps + 2);
}

// While a slider is held, each value's estimate keeps the last settled reserve ratio instead of
// replaying the step on the GUI thread; a pause or letting go replays it, and the figures are then
// those of a fresh estimate.
void TestMainWindow::dragEstimateSettlesOnPauseAndRelease()
{
    ScenarioDocument *doc = m_window->document();
    auto *seq = child<LogSliderSpin>(m_window, "sequenceLength");
    auto *peak = child<QLabel>(m_window, "peakLabel");
    const auto snaps = ControlsPanel::sequenceSnapValues();
    QVERIFY(!doc->isProvisional());
    QVERIFY(!doc->stepModel().reserveAssumed());
    seq->slider()->setSliderDown(true);
    seq->slider()->setSliderPosition(3);
    QCOMPARE(static_cast<double>(doc->scenario().training.sequence_length), snaps[3]);
    QVERIFY(doc->isProvisional());
    QVERIFY(doc->stepModel().reserveAssumed());
    QVERIFY2(peak->text().startsWith(QStringLiteral("Peak ≈")), qPrintable(peak->text()));
    // What is allocated is exact at once; only the allocator's reserve waits for the replay.
    const MemoryEstimate exact = estimateMemory(doc->input());
    QCOMPARE(doc->estimate().peak_allocated, exact.peak_allocated);
    for (int c = 0; c < kAllocatedComponentCount; ++c)
        QCOMPARE(doc->estimate().components[static_cast<Component>(c)],
                 exact.components[static_cast<Component>(c)]);
    // A pause settles it, still held...
    QTRY_VERIFY_WITH_TIMEOUT(!doc->isProvisional(), 10000);
    QVERIFY(seq->slider()->isSliderDown());
    QVERIFY(!doc->stepModel().reserveAssumed());
    QCOMPARE(doc->estimate().device_total, exact.device_total);
    QCOMPARE(doc->estimate().peak_reserved, exact.peak_reserved);
    QVERIFY2(!peak->text().contains(QStringLiteral("≈")), qPrintable(peak->text()));
    // ...and so does letting go, at once, on a worker thread: the provisional figures stay until
    // the replayed model is taken, and a late one of an older value is not taken.
    seq->slider()->setSliderPosition(4);
    QVERIFY(doc->isProvisional());
    seq->slider()->setSliderDown(false);
    QVERIFY(doc->isProvisional());
    QTRY_VERIFY_WITH_TIMEOUT(!doc->isProvisional(), 10000);
    QCOMPARE(static_cast<double>(doc->scenario().training.sequence_length), snaps[4]);
    const MemoryEstimate released = estimateMemory(doc->input());
    QCOMPARE(doc->estimate().device_total, released.device_total);
    QCOMPARE(doc->estimate().peak_reserved, released.peak_reserved);
    // A value set while the settle is under way wins over the late settled model.
    seq->slider()->setSliderDown(true);
    seq->slider()->setSliderPosition(2);
    QVERIFY(doc->isProvisional());
    seq->slider()->setSliderDown(false); // settling on the worker
    seq->setSliderPosition(5);           // not a drag: replayed here, at once
    QVERIFY(!doc->isProvisional());
    QTest::qWait(500);
    QCOMPARE(static_cast<double>(doc->scenario().training.sequence_length), snaps[5]);
    const MemoryEstimate typed = estimateMemory(doc->input());
    QCOMPARE(doc->estimate().peak_reserved, typed.peak_reserved);
    QCOMPARE(doc->estimate().peak_allocated, typed.peak_allocated);
}

void TestMainWindow::undoRedoThroughActions()
{
    ScenarioDocument *doc = m_window->document();
    BudgetChart *chart = m_window->chart();
    const double activations = chart->segmentValue(0, Component::Activations);
    chooseByKeyboard(child<QComboBox>(m_window, "checkpointing"), QStringLiteral("none"));
    setSpin(child<QSpinBox>(m_window, "loraRank"), 64);
    QVERIFY(chart->segmentValue(0, Component::Activations) > activations);
    QVERIFY(doc->isModified());
    QVERIFY(m_window->isWindowModified());

    QAction *undo = m_window->action(QStringLiteral("actionUndo"));
    QAction *redo = m_window->action(QStringLiteral("actionRedo"));
    QVERIFY(undo->shortcuts().contains(QKeySequence(QKeySequence::Undo)));
    QVERIFY(redo->shortcuts().contains(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z)));
    undo->trigger();
    QCOMPARE(doc->scenario().training.lora.rank, 16);
    QCOMPARE(child<QSpinBox>(m_window, "loraRank")->value(), 16);
    undo->trigger();
    QCOMPARE(doc->scenario(), defaultScenario());
    QCOMPARE(chart->segmentValue(0, Component::Activations), activations);
    QCOMPARE(child<QComboBox>(m_window, "checkpointing")->currentData().toString(),
             QStringLiteral("full"));
    QVERIFY(!doc->isModified());
    QVERIFY(!undo->isEnabled());
    redo->trigger();
    redo->trigger();
    QCOMPARE(doc->scenario().training.lora.rank, 64);
    QCOMPARE(doc->scenario().training.checkpointing, Checkpointing::None);
}

void TestMainWindow::pinAndCompare()
{
    ScenarioDocument *doc = m_window->document();
    BudgetChart *chart = m_window->chart();
    m_window->action(QStringLiteral("actionPin"))->trigger();
    QCOMPARE(m_window->pinCount(), 1);
    QCOMPARE(chart->bars().size(), std::size_t(2));
    QCOMPARE(chart->bars()[1].label, QStringLiteral("A"));
    const Bytes pinned = chart->bars()[1].estimate.device_total;

    // Editing changes the current bar only.
    static_cast<QSpinBox *>(child<LogSliderSpin>(m_window, "sequenceLength")->spinBox())
        ->setValue(16384);
    QVERIFY(chart->bars()[0].estimate.device_total > pinned);
    QCOMPARE(chart->bars()[1].estimate.device_total, pinned);
    QCOMPARE(chart->segmentValue(1, Component::Weights),
             static_cast<double>(chart->bars()[1].estimate.components[Component::Weights]) / 1e9);

    m_window->pinCurrent();
    chooseByKeyboard(child<QComboBox>(m_window, "attention"), QStringLiteral("eager"));
    m_window->pinCurrent();
    QCOMPARE(chart->bars().size(), std::size_t(4));
    QCOMPARE(chart->bars()[2].label, QStringLiteral("B"));
    QCOMPARE(chart->bars()[3].label, QStringLiteral("C"));
    // A vs B vs C: three different configurations, each as the core says.
    for (std::size_t i = 1; i < 4; ++i) {
        const ChartBar &bar = chart->bars()[i];
        QCOMPARE(bar.estimate.device_total, estimateMemory(bar.input).device_total);
    }
    QVERIFY(chart->bars()[3].estimate.device_total > chart->bars()[2].estimate.device_total);

    m_window->removePin(0);
    QCOMPARE(chart->bars().size(), std::size_t(3));
    QCOMPARE(chart->bars()[1].label, QStringLiteral("B"));
    m_window->pinCurrent(); // the current scenario is C already: refused (tst_window_actions)
    QCOMPARE(chart->bars().size(), std::size_t(3));
    static_cast<QSpinBox *>(child<LogSliderSpin>(m_window, "sequenceLength")->spinBox())
        ->setValue(8192);
    m_window->pinCurrent(); // reuses the free letter
    QCOMPARE(chart->bars().back().label, QStringLiteral("A"));
    m_window->action(QStringLiteral("actionClearPins"))->trigger();
    QCOMPARE(chart->bars().size(), std::size_t(1));
    QCOMPARE(doc->scenario().training.attention, Attention::Eager);
}

void TestMainWindow::unitToggle()
{
    BudgetChart *chart = m_window->chart();
    const Bytes weights = chart->bars().front().estimate.components[Component::Weights];
    QCOMPARE(chart->segmentValue(0, Component::Weights), static_cast<double>(weights) / 1e9);
    m_window->action(QStringLiteral("actionUnitGiB"))->trigger();
    QCOMPARE(m_window->unit(), ByteUnit::GiB);
    QCOMPARE(chart->segmentValue(0, Component::Weights),
             static_cast<double>(weights) / static_cast<double>(kGiB));
    QVERIFY(chart->yAxis->label().contains(QStringLiteral("GiB")));
    m_window->action(QStringLiteral("actionToggleUnit"))->trigger();
    QCOMPARE(m_window->unit(), ByteUnit::GB);
}

void TestMainWindow::axisDoesNotJumpWhileDragging()
{
    BudgetChart *chart = m_window->chart();
    auto *seq = child<LogSliderSpin>(m_window, "sequenceLength");
    seq->slider()->setSliderDown(true);
    seq->slider()->setSliderPosition(seq->slider()->maximum() - 6);
    const double high = chart->valueRange().upper;
    // Dragging back down keeps the axis while the slider is held...
    seq->slider()->setSliderPosition(1);
    QCOMPARE(chart->valueRange().upper, high);
    for (const ChartBar &bar : chart->bars())
        QVERIFY(static_cast<double>(bar.estimate.device_total) / 1e9 <= high);
    // ...and lets it settle on release.
    seq->slider()->setSliderDown(false);
    QVERIFY(chart->valueRange().upper < high);
    const double settled = chart->valueRange().upper;
    // Small steps do not move it at all.
    seq->setSliderPosition(2);
    seq->setSliderPosition(1);
    QCOMPARE(chart->valueRange().upper, settled);
}

void TestMainWindow::hoverTextHasBytesShareAndFormula()
{
    BudgetChart *chart = m_window->chart();
    const QString text = chart->segmentToolTip(0, Component::Weights);
    QVERIFY2(text.contains(QStringLiteral("Weights")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("%")), qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("GB")), qPrintable(text));
    const std::string formula = explainComponent(chart->bars()[0].input,
                                                 chart->bars()[0].estimate,
                                                 chart->bars()[0].estimate.peak_phase,
                                                 Component::Weights);
    QVERIFY2(text.contains(QString::fromStdString(formula).toHtmlEscaped()), qPrintable(text));

    // The segment under the mouse is found from pixels.
    chart->replot();
    const double x = chart->xAxis->coordToPixel(0);
    const double y = chart->yAxis->coordToPixel(chart->segmentValue(0, Component::Weights) / 2);
    int index = -1;
    Component component = Component::Logits;
    QVERIFY(chart->segmentAt(QPointF(x, y), index, component));
    QCOMPARE(index, 0);
    QCOMPARE(component, Component::Weights);
    QVERIFY(!chart->segmentAt(QPointF(chart->xAxis->coordToPixel(2.5), y), index, component));
}

void TestMainWindow::overCapacityIsSaidInWords()
{
    BudgetChart *chart = m_window->chart();
    ScenarioDocument *doc = m_window->document();
    doc->edit(QStringLiteral("gpus"), [](Scenario &s) { s.gpus = {"rtx-3060-12gb", "h200"}; });
    QCOMPARE(chart->capacityLineCount(), 2);
    const QString words = chart->overCapacityText(0);
    QVERIFY2(words.contains(QStringLiteral("exceeds")) && words.contains(QStringLiteral("3060")),
             qPrintable(words));
    QVERIFY(!words.contains(QStringLiteral("H200")));
    doc->edit(QStringLiteral("gpus"), [](Scenario &s) { s.gpus = {"h200"}; });
    QVERIFY(chart->overCapacityText(0).isEmpty());

    // Selecting GPUs in the list adds capacity lines.
    auto *list = child<QListWidget>(m_window, "gpuList");
    for (int i = 0; i < list->count(); ++i) {
        if (list->item(i)->data(Qt::UserRole).toString() == QLatin1String("t4")) {
            list->item(i)->setCheckState(Qt::Checked);
            break;
        }
    }
    QCOMPARE(doc->scenario().gpus, (std::vector<std::string>{"h200", "t4"}));
    QCOMPARE(chart->capacityLineCount(), 2);
    QVERIFY(chart->overCapacityText(0).contains(QStringLiteral("T4")));
}

void TestMainWindow::ladderView()
{
    m_window->views()->setCurrentIndex(MainWindow::LadderView);
    BudgetChart *ladder = m_window->ladderChart();
    const auto steps = techniqueLadder(m_window->document()->input());
    QVERIFY(steps.size() >= 5);
    QCOMPARE(ladder->bars().size(), steps.size());
    for (std::size_t i = 0; i < steps.size(); ++i) {
        QCOMPARE(ladder->bars()[i].label, QString::fromStdString(steps[i].label));
        QCOMPARE(ladder->bars()[i].estimate.device_total,
                 estimateMemory(steps[i].input).device_total);
    }
    // The naive configuration needs the most.
    QVERIFY(ladder->bars().front().estimate.device_total
            > ladder->bars().back().estimate.device_total);
    // It follows edits while shown.
    // Beside the memory it saves, each step says what it costs or saves in time on the first
    // selected GPU, from the throughput model.
    const GpuSpec gpu = m_window->document()->selectedGpus().front();
    const double naive = estimateThroughput(steps[0].input, gpu.performance).tokens_per_second;
    const double bf16 = estimateThroughput(steps[1].input, gpu.performance).tokens_per_second;
    const long change = std::lround(std::abs(naive / bf16 - 1) * 100);
    QVERIFY2(ladder->bars()[1].detail.contains(QStringLiteral("%1% time").arg(change)),
             qPrintable(ladder->bars()[1].detail));
    QVERIFY(ladder->bars()[1].tooltip.contains(QStringLiteral("tokens/s")));
    const Bytes first = ladder->bars().front().estimate.device_total;
    static_cast<QSpinBox *>(child<LogSliderSpin>(m_window, "microBatch")->spinBox())->setValue(1);
    QVERIFY(ladder->bars().front().estimate.device_total < first);
    // A step that changes nothing says "0 B" ("−0 B" before): with one-token sequences the
    // optimizer step is the peak, which checkpointing and flash attention leave as it was.
    m_window->document()->edit(QStringLiteral("one token"), [](Scenario &s) {
        s.model = ModelSpec{};
        s.model.preset = "llama-2-7b";
        s.training.method = Method::Full;
        s.training.sequence_length = 1;
        s.training.micro_batch_size = 1;
    });
    int unchanged = 0;
    for (const ChartBar &bar : ladder->bars()) {
        QVERIFY2(!bar.detail.startsWith(QStringLiteral("−0")) && !bar.detail.startsWith('-'),
                 qPrintable(bar.detail));
        unchanged += bar.detail.section(QLatin1Char('\n'), 0, 0) == QStringLiteral("0 B") ? 1 : 0;
    }
    QVERIFY(unchanged >= 1);
}

void TestMainWindow::sweepView()
{
    m_window->views()->setCurrentIndex(MainWindow::SweepViewIndex);
    SweepChart *sweep = m_window->sweepView()->chart();
    ScenarioDocument *doc = m_window->document();
    QVERIFY(!sweep->samples().empty());
    for (const auto &sample : sweep->samples()) {
        EstimateInput in = doc->input();
        in.training.sequence_length = sample.x;
        QCOMPARE(sample.total, estimateMemory(in).device_total);
    }
    const auto gpus = doc->selectedGpus();
    // The largest fits: the fast estimate at once, the exact answer from the worker thread.
    sweep->limitsWorker()->waitForNewest();
    QVERIFY(sweep->maxFitsExact());
    QCOMPARE(sweep->maxFits().size(), gpus.size());
    for (std::size_t i = 0; i < gpus.size(); ++i)
        QCOMPARE(sweep->maxFits()[i],
                 maxSequenceLength(doc->input(),
                                   gpus[i].memory_bytes,
                                   FitMetric::DeviceTotal,
                                   1 << 24));

    sweep->setAxis(SweepAxis::MicroBatch);
    QVERIFY(!sweep->maxFitsExact()); // not delivered before the event loop runs
    sweep->limitsWorker()->waitForNewest();
    QVERIFY(sweep->maxFitsExact());
    QCOMPARE(sweep->samples().front().x, 1);
    QCOMPARE(sweep->samples().back().x, 1024);
    for (std::size_t i = 0; i < gpus.size(); ++i)
        QCOMPARE(sweep->maxFits()[i],
                 maxMicroBatch(doc->input(), gpus[i].memory_bytes, FitMetric::DeviceTotal, 1 << 20));
    // Tokens/s on each GPU, as far as the micro-batch fits it.
    QCOMPARE(sweep->speeds().size(), gpus.size());
    for (std::size_t i = 0; i < gpus.size(); ++i) {
        for (const auto &[batch, rate] : sweep->speeds()[i]) {
            QVERIFY(batch <= sweep->maxFits()[i]);
            EstimateInput in = doc->input();
            in.training.micro_batch_size = batch;
            QCOMPARE(rate, estimateThroughput(in, gpus[i].performance).tokens_per_second);
        }
    }
    auto *speed = child<QCheckBox>(m_window, "sweepSpeed");
    speed->setChecked(false);
    QVERIFY(sweep->speeds().empty());
    speed->setChecked(true);
    QCOMPARE(sweep->speeds().size(), gpus.size());
}

void TestMainWindow::verdictPanel()
{
    ScenarioDocument *doc = m_window->document();
    doc->edit(QStringLiteral("gpus"), [](Scenario &s) { s.gpus = {"rtx-4090", "h200"}; });
    auto *table = m_window->verdictPanel()->table();
    QCOMPARE(table->topLevelItemCount(), 2);
    auto column = [table](const QString &header) {
        for (int c = 0; c < table->columnCount(); ++c)
            if (table->headerItem()->text(c) == header)
                return c;
        return -1;
    };
    const MemoryEstimate &est = doc->estimate();
    const auto gpus = doc->selectedGpus();
    // Max batch and Max seq.: the fast estimate ("≈") at once, the exact value from the worker.
    VerdictPanel *panel = m_window->verdictPanel();
    QVERIFY(!panel->limitsExact());
    QVERIFY(table->topLevelItem(0)->text(column(QStringLiteral("Max batch"))).startsWith("≈ "));
    panel->limitsWorker()->waitForNewest();
    QVERIFY(panel->limitsExact());
    const StepModel model(doc->input());
    for (int i = 0; i < 2; ++i) {
        const GpuSpec &gpu = gpus[static_cast<std::size_t>(i)];
        const GpuVerdict v = gpuVerdict(model, est, gpu.memory_bytes);
        // A short verdict in the cell ("✗ does not fit · 27.44 GB over"), the band and the reason
        // as its hover text.
        const int verdict = column(QStringLiteral("Verdict"));
        const QString cell = table->topLevelItem(i)->text(verdict);
        QVERIFY2(cell.contains(QString::fromUtf8(verdictLabel(v.verdict))), qPrintable(cell));
        QCOMPARE(cell.startsWith(QStringLiteral("✗")), v.verdict == FitVerdict::DoesNotFit);
        QCOMPARE(cell.startsWith(QStringLiteral("✓")), v.verdict == FitVerdict::Fits);
        QVERIFY(table->topLevelItem(i)->toolTip(verdict).contains(QStringLiteral("On the device")));
        QCOMPARE(panel->verdicts()[static_cast<std::size_t>(i)].verdict, v.verdict);
        const auto batch = maxMicroBatch(doc->input(), gpu.memory_bytes);
        QCOMPARE(table->topLevelItem(i)->text(column(QStringLiteral("Max batch"))),
                 batch > 0 ? QLocale().toString(static_cast<qlonglong>(batch))
                           : QStringLiteral("none"));
        // Time on each GPU, from the throughput model.
        const ThroughputEstimate t = estimateThroughput(doc->input(), gpu.performance);
        QVERIFY(t.valid);
        QVERIFY(table->topLevelItem(i)
                    ->text(column(QStringLiteral("Step · speed")))
                    .contains(QString::fromStdString(formatRate(t.tokens_per_second))));
        QVERIFY(table->topLevelItem(i)->text(column(QStringLiteral("Run · cost"))).isEmpty());
        // Hovering the cell explains where the step goes (made when asked for).
        const auto &speed = m_window->verdictPanel()->speeds()[static_cast<std::size_t>(i)];
        QCOMPARE(speed.throughput.step_seconds, t.step_seconds);
        QVERIFY(speedToolTip(speed, gpu, doc->input()).contains(QStringLiteral("matmuls")));
    }
    // With a dataset: the run's time and, at the scenario's price, its cost.
    doc->edit(QStringLiteral("dataset"), [](Scenario &s) {
        s.dataset = DatasetConfig{10000, 1024, 1.0};
        s.prices["h200"] = 3.0;
    });
    const ThroughputEstimate h200 = estimateThroughput(doc->input(), gpus[1].performance);
    const RunEstimate run = estimateRun(h200, doc->input(), *doc->scenario().dataset, 3.0);
    const QString runText = table->topLevelItem(1)->text(column(QStringLiteral("Run · cost")));
    QVERIFY2(runText.contains(QString::fromStdString(formatCost(run.cost))), qPrintable(runText));
    QVERIFY(runText.contains(QString::fromStdString(formatDuration(run.run_seconds))));
    QVERIFY(table->topLevelItem(0)
                ->text(column(QStringLiteral("Run · cost")))
                .contains(QStringLiteral("no price"))); // no public list price for an RTX 4090
    doc->undoStack()->undo();
    QVERIFY(m_window->verdictPanel()->summaryText().contains(
        QString::fromUtf8(phaseLabel(est.peak_phase)).toLower()));
    doc->edit(QStringLiteral("offload"), [](Scenario &s) {
        s.training.method = Method::Full;
        s.training.offload.optimizer = true;
    });
    QVERIFY(m_window->verdictPanel()->summaryText().contains(QStringLiteral("CPU")));
}

void TestMainWindow::datasetBoxEditsThroughUndo()
{
    ScenarioDocument *doc = m_window->document();
    auto *box = child<DatasetBox>(m_window, "datasetBox");
    QVERIFY(!doc->scenario().dataset);
    QVERIFY(!box->isChecked());
    const int steps = doc->undoStack()->count();
    box->setChecked(true);
    QVERIFY(doc->scenario().dataset.has_value());
    setDoubleSpin(child<QDoubleSpinBox>(m_window, "datasetExamples"), 25000);
    setSpin(child<QSpinBox>(m_window, "datasetTokens"), 512);
    setDoubleSpin(child<QDoubleSpinBox>(m_window, "datasetEpochs"), 3);
    QVERIFY(doc->scenario().dataset == (DatasetConfig{25000, 512, 3.0}));
    QCOMPARE(doc->undoStack()->count(), steps + 4); // one undo step per edit
    // A price per GPU-hour for each selected GPU, the preset's list price until changed.
    const GpuSpec gpu = doc->selectedGpus().front();
    QDoubleSpinBox *price = box->priceBox(gpu.id);
    QVERIFY(price);
    QCOMPARE(price->value(), std::round(gpu.performance.price_per_hour * 100) / 100);
    setDoubleSpin(price, 1.75);
    QCOMPARE(doc->scenario().prices.at(gpu.id), 1.75);
    auto *reset = m_window->findChild<QToolButton *>(
        QStringLiteral("resetPrice-%1").arg(QString::fromStdString(gpu.id)));
    QVERIFY(reset && reset->isEnabled());
    reset->click();
    QVERIFY(doc->scenario().prices.empty());
    // Undo walks back through every edit; redo replays them into the controls.
    doc->undoStack()->undo();
    QCOMPARE(price->value(), 1.75);
    while (doc->undoStack()->count() > steps && doc->undoStack()->canUndo()
           && doc->undoStack()->index() > steps)
        doc->undoStack()->undo();
    QVERIFY(!doc->scenario().dataset);
    QVERIFY(!box->isChecked());
    doc->undoStack()->redo();
    QVERIFY(box->isChecked());
    QCOMPARE(child<QDoubleSpinBox>(m_window, "datasetExamples")->value(), 10000.0);
}

void TestMainWindow::makeItFitAppliesWithOneClick()
{
    ScenarioDocument *doc = m_window->document();
    doc->edit(QStringLiteral("gpus"), [](Scenario &s) { s.gpus = {"rtx-4090"}; });
    const GpuSpec gpu = doc->selectedGpus().front();
    QVERIFY2(doc->estimate().device_total > gpu.memory_bytes,
             "the default scenario should not fit 24 GB");
    FitPanel *fit = m_window->fitPanel();
    fit->recompute();
    QVERIFY(!fit->suggestions().empty());
    // One row per suggestion, and a heading before those that change what is trained.
    bool changesResult = false;
    for (const FitSuggestion &s : fit->suggestions())
        changesResult = changesResult || s.changesResult();
    QCOMPARE(fit->list()->topLevelItemCount(),
             static_cast<int>(fit->suggestions().size()) + (changesResult ? 1 : 0));
    const auto expected = suggestFits(doc->input(), gpu, 10);
    QCOMPARE(fit->suggestions().size(), expected.size());
    // Fastest first (modelled time per token, in steps of 1%), among those that keep the
    // experiment and among those that do not.
    for (std::size_t i = 1; i < expected.size(); ++i)
        if (fit->suggestions()[i - 1].changesResult() == fit->suggestions()[i].changesResult())
            QVERIFY(fit->suggestions()[i - 1].slowdown <= fit->suggestions()[i].slowdown * 1.01);

    const FitSuggestion first = fit->suggestions().front();
    auto *apply = m_window->findChild<QPushButton *>(QStringLiteral("applyFit0"));
    QVERIFY(apply);
    const int steps = doc->undoStack()->count();
    QTRY_VERIFY(apply->x() > 0); // the list has laid its rows out (a posted layout)
    QTest::mouseClick(apply, Qt::LeftButton);
    QCOMPARE(doc->undoStack()->count(), steps + 1);
    QVERIFY(doc->scenario().training == first.input.training);
    QCOMPARE(doc->estimate().device_total, first.device_total);
    QVERIFY(doc->estimate().device_total <= gpu.memory_bytes);
    QVERIFY(m_window->chart()->overCapacityText(0).isEmpty());
}

// After an edit the search runs on a worker: the panel says it is looking, the window keeps
// handling events, and the list fills with what the core suggests for the newest scenario only
// (an answer for the one before is dropped).
void TestMainWindow::makeItFitSearchesOffTheGuiThread()
{
    ScenarioDocument *doc = m_window->document();
    FitPanel *fit = m_window->fitPanel();
    doc->edit(QStringLiteral("gpus"), [](Scenario &s) { s.gpus = {"rtx-4090"}; });
    doc->edit(QStringLiteral("batch"), [](Scenario &s) { s.training.micro_batch_size = 4; });
    const auto message = [&] {
        return m_window->findChild<QLabel *>(QStringLiteral("fitMessage"))->text();
    };
    QTRY_VERIFY_WITH_TIMEOUT(message().startsWith(QStringLiteral("Looking for")), 5000);
    QVERIFY(fit->suggestions().empty());
    // A change while it searches: the first answer must not be shown.
    doc->edit(QStringLiteral("batch"), [](Scenario &s) { s.training.micro_batch_size = 2; });
    QTRY_VERIFY_WITH_TIMEOUT(!fit->suggestions().empty(), 120000);
    const GpuSpec gpu = doc->selectedGpus().front();
    const auto expected = suggestFits(doc->input(), gpu, 10);
    QCOMPARE(fit->suggestions().size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i)
        QCOMPARE(fit->suggestions()[i].changes, expected[i].changes);
    QVERIFY(!message().startsWith(QStringLiteral("Looking for")));
}

void TestMainWindow::saveOpenRoundTripKeepsThePicture()
{
    ScenarioDocument *doc = m_window->document();
    static_cast<QSpinBox *>(child<LogSliderSpin>(m_window, "sequenceLength")->spinBox())
        ->setValue(8192);
    chooseByKeyboard(child<QComboBox>(m_window, "precision"), QStringLiteral("mixed-bf16"));
    const std::vector<ChartBar> bars = m_window->chart()->bars();

    const QString path = m_dir->filePath(QStringLiteral("saved.yaml"));
    m_prompts->saveAnswer = path;
    m_window->action(QStringLiteral("actionSave"))->trigger(); // untitled: asks for a name
    QVERIFY(QFile::exists(path));
    QVERIFY(!doc->isModified());
    QVERIFY(m_window->windowTitle().contains(QStringLiteral("saved.yaml")));

    m_window->newScenario();
    QCOMPARE(doc->scenario().training.sequence_length, defaultScenario().training.sequence_length);
    QVERIFY(m_window->openFile(path));
    QCOMPARE(doc->scenario().training.sequence_length, 8192);
    QCOMPARE(doc->scenario().training.precision, Precision::MixedBf16);
    for (int c = 0; c < kComponentCount; ++c)
        QCOMPARE(m_window->chart()->segmentValue(0, static_cast<Component>(c)),
                 static_cast<double>(bars[0].estimate.components[static_cast<Component>(c)]) / 1e9);
    QCOMPARE(m_prompts->asked, 0);
}

void TestMainWindow::unsavedChangesGuard()
{
    ScenarioDocument *doc = m_window->document();
    setSpin(child<QSpinBox>(m_window, "loraRank"), 32);
    QVERIFY(doc->isModified());

    // Cancel keeps the window and the changes.
    m_prompts->answer = UserPrompts::SaveChoice::Cancel;
    QVERIFY(!m_window->close());
    QVERIFY(m_window->isVisible());
    QCOMPARE(m_prompts->asked, 1);
    m_window->newScenario();
    QCOMPARE(doc->scenario().training.lora.rank, 32);
    QVERIFY(!m_window->openFile(QStringLiteral(MEMBUDGET_TEST_DATA "/qlora-7b.yaml")));
    QCOMPARE(doc->scenario().training.lora.rank, 32);
    QCOMPARE(m_prompts->asked, 3);

    // Save writes the file (asking for a name first), then goes on.
    m_prompts->answer = UserPrompts::SaveChoice::Save;
    m_prompts->saveAnswer = m_dir->filePath(QStringLiteral("guarded"));
    m_window->newScenario();
    QVERIFY(QFile::exists(m_dir->filePath(QStringLiteral("guarded.yaml"))));
    QCOMPARE(doc->scenario(), defaultScenario());

    // Save but the name dialog is cancelled: nothing is lost.
    setSpin(child<QSpinBox>(m_window, "loraRank"), 8);
    m_window->newScenario(); // the document has a file now: saves in place
    QCOMPARE(doc->scenario(), defaultScenario());
    setSpin(child<QSpinBox>(m_window, "loraRank"), 4);
    m_prompts->saveAnswer.clear();
    doc->reset(doc->scenario()); // untitled again, clean
    setSpin(child<QSpinBox>(m_window, "loraRank"), 2);
    QVERIFY(!m_window->close());
    QCOMPARE(doc->scenario().training.lora.rank, 2);

    // Discard closes.
    m_prompts->answer = UserPrompts::SaveChoice::Discard;
    QVERIFY(m_window->close());
}

void TestMainWindow::badFileShowsErrorAndKeepsScenario()
{
    ScenarioDocument *doc = m_window->document();
    setSpin(child<QSpinBox>(m_window, "loraRank"), 48);
    m_prompts->answer = UserPrompts::SaveChoice::Discard;
    const Scenario before = doc->scenario();
    QVERIFY(!m_window->openFile(QStringLiteral(MEMBUDGET_TEST_DATA "/bad-precision.yaml")));
    QCOMPARE(m_prompts->errors.size(), 1);
    QVERIFY2(m_prompts->errors.front().contains(QStringLiteral("bad-precision.yaml:6:")),
             qPrintable(m_prompts->errors.front()));
    QVERIFY(m_prompts->errors.front().contains(QStringLiteral("bf8")));
    QCOMPARE(doc->scenario(), before);
    QVERIFY(m_window->chart()->bars().front().valid);

    QVERIFY(
        !m_window->importModelConfig(QStringLiteral(MEMBUDGET_TEST_DATA "/bad-precision.yaml")));
    QCOMPARE(m_prompts->errors.size(), 2);
    QCOMPARE(doc->scenario(), before);
}

void TestMainWindow::dropOpensScenarioAndImportsConfig()
{
    ScenarioDocument *doc = m_window->document();
    auto drop = [this](const QString &path) {
        QMimeData mime;
        mime.setUrls({QUrl::fromLocalFile(path)});
        QDragEnterEvent enter(QPoint(50, 50), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(m_window, &enter);
        if (!enter.isAccepted())
            return false;
        QDropEvent dropEvent(QPointF(50, 50), Qt::CopyAction, &mime, Qt::LeftButton, Qt::NoModifier);
        QApplication::sendEvent(m_window, &dropEvent);
        QCoreApplication::processEvents();
        return true;
    };
    QVERIFY(!drop(m_dir->filePath(QStringLiteral("notes.txt"))));
    QVERIFY(drop(QStringLiteral(MEMBUDGET_TEST_DATA "/qlora-7b.yaml")));
    QCOMPARE(doc->scenario().model.preset, std::string("llama-2-7b"));
    QCOMPARE(doc->scenario().training.method, Method::Qlora);
    QVERIFY(doc->filePath().endsWith(QStringLiteral("qlora-7b.yaml")));

    QVERIFY(drop(QStringLiteral(MEMBUDGET_TEST_DATA "/llama-config.json")));
    QCOMPARE(doc->scenario().model.hidden_size.value_or(0), 2048);
    QCOMPARE(doc->scenario().training.method, Method::Qlora); // only the model changed
    QVERIFY(doc->isModified());
}

void TestMainWindow::titleShowsFileAndModifiedMark()
{
    QVERIFY(m_window->openFile(QStringLiteral(MEMBUDGET_TEST_DATA "/qlora-7b.yaml")));
    QVERIFY(m_window->windowTitle().startsWith(QStringLiteral("qlora-7b.yaml[*]")));
    QVERIFY(!m_window->isWindowModified());
    setSpin(child<QSpinBox>(m_window, "loraRank"), 8);
    QVERIFY(m_window->isWindowModified());
    m_window->action(QStringLiteral("actionUndo"))->trigger();
    QVERIFY(!m_window->isWindowModified());
}

void TestMainWindow::recentFilesAndPresetScenarios()
{
    QVERIFY(m_window->openFile(QStringLiteral(MEMBUDGET_TEST_DATA "/qlora-7b.yaml")));
    auto *recent = m_window->findChild<QMenu *>(QStringLiteral("recentMenu"));
    QVERIFY(recent->isEnabled());
    QVERIFY(recent->actions().front()->text().contains(QStringLiteral("qlora-7b.yaml")));

    const auto &presets = m_window->document()->catalog().scenarios();
    QVERIFY(!presets.empty());
    auto *menu = m_window->findChild<QMenu *>(QStringLiteral("scenariosMenu"));
    QCOMPARE(menu->actions().size(), static_cast<qsizetype>(presets.size()));
    QAction *first = m_window->findChild<QAction *>(QStringLiteral("scenario_")
                                                    + QString::fromStdString(presets.front().id));
    QVERIFY(first);
    first->trigger();
    QCOMPARE(m_window->document()->scenario(), presets.front().scenario);
    QVERIFY(m_window->document()->filePath().isEmpty());
}

void TestMainWindow::copyBreakdown()
{
    m_window->action(QStringLiteral("actionCopyMarkdown"))->trigger();
    const QString markdown = QApplication::clipboard()->text();
    QVERIFY2(markdown.contains(QStringLiteral("| Weights |")), qPrintable(markdown));
    QVERIFY(markdown.contains(QStringLiteral("---:|")));
    // One line per GPU with the verdict the verdict panel shows (tight where the band straddles
    // the capacity, not "does not fit" from the expected total alone).
    ScenarioDocument *doc = m_window->document();
    doc->edit(QStringLiteral("gpus"), [](Scenario &s) { s.gpus = {"a100-80gb", "h100-80gb"}; });
    doc->edit(QStringLiteral("batch"), [](Scenario &s) { s.training.micro_batch_size = 1; });
    bool sawTight = false;
    for (std::int64_t sequence = 1024; sequence <= 262144 && !sawTight; sequence *= 2) {
        doc->edit(QStringLiteral("seq"),
                  [&](Scenario &s) { s.training.sequence_length = sequence; });
        m_window->action(QStringLiteral("actionCopyMarkdown"))->trigger();
        const QString text = QApplication::clipboard()->text();
        for (const GpuSpec &gpu : doc->selectedGpus()) {
            const GpuVerdict v = gpuVerdict(doc->input(), gpu.memory_bytes);
            const QString line = text.section(QString::fromStdString(gpu.name), 1, 1)
                                     .section(QLatin1Char('\n'), 0, 0);
            const QString word = v.verdict == FitVerdict::Fits ? QStringLiteral("): fits")
                                 : v.verdict == FitVerdict::Tight
                                     ? QStringLiteral("): tight")
                                     : QStringLiteral("): does not fit");
            QVERIFY2(line.startsWith(QStringLiteral(" (")) && line.contains(word), qPrintable(line));
            sawTight = sawTight || v.verdict == FitVerdict::Tight;
        }
    }
    QVERIFY(sawTight); // the case the old line got wrong was met
    m_window->action(QStringLiteral("actionCopyCsv"))->trigger();
    const QString csv = QApplication::clipboard()->text();
    QVERIFY(csv.startsWith(QStringLiteral("component,forward_bytes")));
    const QString weights = csv.split(QLatin1Char('\n')).at(1);
    QVERIFY(weights.startsWith(QStringLiteral("weights,")));
    QCOMPARE(weights.section(QLatin1Char(','), 4, 4).toLongLong(),
             m_window->document()->estimate().components[Component::Weights]);
}

// An earlier version stored every scenario's GPU list in the settings: one 1 MiB scenario with
// 350,000 GPUs made every later start take a minute. The settings hold at most kMaxScenarioGpus
// known ids, whatever a file or an old settings file held.
void TestMainWindow::settingsHoldABoundedGpuList()
{
    QTemporaryDir dir;
    const QString ini = dir.filePath(QStringLiteral("poisoned.ini"));
    {
        QSettings raw(ini, QSettings::IniFormat);
        QStringList ids;
        for (int i = 0; i < 5000; ++i)
            ids << QStringLiteral("rtx-4090") << QStringLiteral("no-such-gpu-%1").arg(i);
        raw.setValue(QStringLiteral("scenario/gpus"), ids);
    }
    {
        MainWindow window(PresetCatalog::bundled(), std::make_unique<AppSettings>(ini));
        QCOMPARE(window.document()->scenario().gpus, std::vector<std::string>{"rtx-4090"});
        QCOMPARE(window.chart()->capacityLineCount(), 1);
    }
    QSettings after(ini, QSettings::IniFormat);
    QCOMPARE(after.value(QStringLiteral("scenario/gpus")).toStringList(),
             QStringList{QStringLiteral("rtx-4090")});
    AppSettings settings(dir.filePath(QStringLiteral("other.ini")));
    QStringList many;
    for (int i = 0; i < 100; ++i)
        many << QStringLiteral("gpu-%1").arg(i % 70);
    settings.setSelectedGpus(many);
    QCOMPARE(settings.selectedGpus().size(), static_cast<qsizetype>(kMaxScenarioGpus));
}

// Under de_DE the app mixed "4,096 tokens" (the core) with "16,23 GB" (printf under the user's
// locale) and "4.096" (QLocale): one format now, the command line's.
void TestMainWindow::numbersFollowOneFormat()
{
    if (!std::setlocale(LC_ALL, "de_DE.UTF-8"))
        QSKIP("the de_DE.UTF-8 locale is not installed");
    const QLocale before;
    QLocale::setDefault(QLocale(QLocale::German, QLocale::Germany)); // as the user's would be
    useOneNumberFormat();                                            // as main() does
    QStringList texts;
    {
        MainWindow window(PresetCatalog::bundled(),
                          std::make_unique<AppSettings>(m_dir->filePath(QStringLiteral("de.ini"))));
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        for (const QLabel *label : window.findChildren<QLabel *>())
            texts << label->text();
        for (const QAbstractSpinBox *spin : window.findChildren<QAbstractSpinBox *>())
            texts << spin->text();
    }
    std::setlocale(LC_ALL, "C");
    QLocale::setDefault(before);
    const QString all = texts.join(QLatin1Char('\n'));
    QVERIFY2(!all.contains(QRegularExpression(QStringLiteral("\\d,\\d\\d? (GB|GiB|MB|MiB|B)\\b"))),
             qPrintable(all));
    QVERIFY2(all.contains(QRegularExpression(QStringLiteral("\\d\\.\\d\\d (GB|GiB)"))),
             qPrintable(all));
    QVERIFY2(all.contains(QStringLiteral("hidden 4,096")), qPrintable(all));
}

// "text\u005fconfig" was found by the key scanner as written and looked up decoded: an uncaught
// std::out_of_range aborted the app and the unsaved scenario was lost.
void TestMainWindow::importsAConfigWithEscapedKeys()
{
    const QString path = m_dir->filePath(QStringLiteral("config.json"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"({"text\u005fconfig": {"model_type": "llama", "hidden_size": 2048,
      "intermediate_size": 5632, "num_attention_heads": 32, "num_hidden_layers": 22,
      "num_key_value_heads": 4, "vocab_size": 32000}, "model_type": "llava"})");
    f.close();
    QVERIFY(m_window->importModelConfig(path));
    QCOMPARE(m_window->document()->scenario().model.layers, std::optional<std::int64_t>(22));
    QVERIFY2(m_prompts->errors.isEmpty(), qPrintable(m_prompts->errors.join('\n')));
}

// A spin box holding typed text commits it when it is hidden. Closing the window hides it: the
// edit must reach the window while it is still a MainWindow, not from QWidget's destructor after
// the window's own members are gone (the random-input test found this under UBSan).
void TestMainWindow::typedTextCommittedOnCloseReachesAWholeWindow()
{
    ScenarioDocument *doc = m_window->document();
    QAbstractSpinBox *spin = m_window->controls()->microBatchSlider()->spinBox();
    spin->setFocus();
    const std::int64_t before = doc->scenario().training.micro_batch_size;
    QTest::keyClick(spin, Qt::Key_A, Qt::ControlModifier);
    QTest::keyClicks(spin, QString::number(before + 1));
    QCOMPARE(doc->scenario().training.micro_batch_size, before); // typed, not committed yet
    QList<bool> whole;
    connect(doc, &ScenarioDocument::changed, this, [doc, &whole] {
        whole << (qobject_cast<MainWindow *>(doc->parent()) != nullptr);
    });
    m_prompts->answer = UserPrompts::SaveChoice::Discard;
    delete m_window;
    m_window = nullptr;
    QCOMPARE(whole, QList<bool>{true});
}

QTEST_MAIN(TestMainWindow)
#include "tst_main_window.moc"

// The arrows of the tensor-parallel box step through degrees that divide the GPU count and the
// heads, and the GPU box steps in multiples of the degree: stepping never makes the scenario invalid.
void TestMainWindow::parallelismArrowsOfferOnlyValidDegrees()
{
    ScenarioDocument *doc = m_window->document();
    doc->edit(QStringLiteral("setup"), [](Scenario &s) {
        s.model = ModelSpec{};
        s.model.preset = "llama-2-7b"; // 32 heads
        s.parallelism.gpus = 24;
        s.parallelism.tensor_parallel = 1;
    });
    auto *tp = child<QSpinBox>(m_window, "tensorParallel");
    auto *gpus = child<QSpinBox>(m_window, "gpuCount");
    QList<int> seen;
    for (int i = 0; i < 6; ++i) {
        QTest::keyClick(tp, Qt::Key_Up);
        seen << static_cast<int>(doc->scenario().parallelism.tensor_parallel);
        QVERIFY2(doc->valid(), qPrintable(doc->error()));
    }
    QCOMPARE(seen, (QList<int>{2, 4, 8, 8, 8, 8})); // divisors of gcd(24, 32) = 8
    QTest::keyClick(tp, Qt::Key_Down);
    QCOMPARE(doc->scenario().parallelism.tensor_parallel, 4);
    QTest::keyClick(gpus, Qt::Key_Up);
    QCOMPARE(doc->scenario().parallelism.gpus, 28); // 24 + 4
    QVERIFY2(doc->valid(), qPrintable(doc->error()));
    // Typing is still free; the reason is shown when the core cannot use it.
    setSpin(tp, 3);
    QVERIFY(!doc->valid());
    QVERIFY(doc->error().contains(QStringLiteral("tensor_parallel")));
}
