// SPDX-License-Identifier: GPL-3.0-or-later
// The window's actions (issue #16): GiB by default everywhere at once, GB/GiB buttons that keep
// their size and Ctrl+U that works (item 10); pins that refuse a twin and an Unpin All enabled only
// with pins, pin labels that keep every difference in their hover text, a recent file that has gone
// is said so at once and leaves the list, a per-phase breakdown in the window, an export icon that
// is not a check mark and a Quit key on every platform (item 14); Make It Fit keeps the effective
// batch, sets method changes apart and states the CPU RAM an offload needs (item 4).
#include "advice/fit_advisor.h"
#include "charts/budget_chart.h"
#include "document/scenario_document.h"
#include "main_window.h"
#include "panels/breakdown_view.h"
#include "panels/controls_panel.h"
#include "panels/fit_panel.h"
#include "panels/verdict_panel.h"
#include "test_main_window.h"

#include <QAction>
#include <QComboBox>
#include <QFile>
#include <QListWidget>
#include <QMenu>
#include <QPushButton>
#include <QStyle>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QToolBar>
#include <QToolButton>
#include <QTreeWidget>

using namespace membudget;

namespace {

class FakePrompts : public UserPrompts
{
public:
    int asked = 0;
    QStringList errors;
    SaveChoice askSaveChanges(QWidget *, const QString &) override
    {
        ++asked;
        return SaveChoice::Cancel;
    }
    void showError(QWidget *, const QString &, const QString &text) override { errors << text; }
};

} // namespace

class TestWindowActions : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void init();
    void cleanup();
    void gibByDefaultEverywhere();
    void unitButtonsKeepTheirSizeAndCtrlUWorks();
    void pinsRefuseTwinsAndUnpinAllFollows();
    void aPinLabelKeepsEveryDifference();
    void aMissingRecentFileIsSaidSoAndLeaves();
    void breakdownTabShowsEachPhase();
    void iconsAndQuitKey();
    void makeItFitKeepsTheExperimentUnlessItSays();

private:
    QTemporaryDir *m_dir = nullptr;
    MainWindow *m_window = nullptr;
    FakePrompts *m_prompts = nullptr;
};

void TestWindowActions::init()
{
    m_dir = new QTemporaryDir;
    m_window = test::newTestMainWindow(*m_dir, m_prompts);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window));
}

void TestWindowActions::cleanup()
{
    m_window->document()->undoStack()->setClean();
    delete m_window;
    delete m_dir;
}

void TestWindowActions::gibByDefaultEverywhere()
{
    QCOMPARE(m_window->unit(), ByteUnit::GiB);
    QVERIFY(m_window->action(QStringLiteral("actionUnitGiB"))->isChecked());
    QVERIFY(m_window->chart()->yAxis->label().contains(QStringLiteral("GiB")));
    QTreeWidget *verdicts = m_window->verdictPanel()->table();
    QVERIFY(verdicts->topLevelItemCount() > 0);
    for (int r = 0; r < verdicts->topLevelItemCount(); ++r) {
        QVERIFY(verdicts->topLevelItem(r)->text(1).endsWith(QStringLiteral("GiB")));
        QVERIFY(verdicts->topLevelItem(r)->text(2).contains(QStringLiteral("GiB")));
    }
    QVERIFY(m_window->verdictPanel()->summaryText().contains(QStringLiteral("GiB")));
    QVERIFY(!m_window->verdictPanel()->summaryText().contains(QStringLiteral(" GB")));
    auto *fitGpu = m_window->findChild<QComboBox *>(QStringLiteral("fitGpu"));
    for (int i = 0; i < fitGpu->count(); ++i)
        QVERIFY2(fitGpu->itemText(i).contains(QStringLiteral("GiB")),
                 qPrintable(fitGpu->itemText(i)));
    auto *list = m_window->findChild<QListWidget *>(QStringLiteral("gpuList"));
    for (int i = 0; i < list->count(); ++i)
        QVERIFY2(list->item(i)->text().endsWith(QStringLiteral("GiB")),
                 qPrintable(list->item(i)->text()));
}

void TestWindowActions::unitButtonsKeepTheirSizeAndCtrlUWorks()
{
    auto *tools = m_window->findChild<QToolBar *>(QStringLiteral("mainToolBar"));
    QWidget *gb = tools->widgetForAction(m_window->action(QStringLiteral("actionUnitGB")));
    QWidget *gib = tools->widgetForAction(m_window->action(QStringLiteral("actionUnitGiB")));
    QVERIFY(gb && gib);
    const QSize gbSize = gb->size(), gibSize = gib->size();
    QCOMPARE(gbSize.width(), gibSize.width());
    for (int round = 0; round < 2; ++round) {
        QTest::mouseClick(gb, Qt::LeftButton);
        QCOMPARE(m_window->unit(), ByteUnit::GB);
        QTest::mouseClick(gib, Qt::LeftButton);
        QCOMPARE(m_window->unit(), ByteUnit::GiB);
        QCOMPARE(gb->size(), gbSize);
        QCOMPARE(gib->size(), gibSize);
        QCOMPARE(static_cast<QToolButton *>(gb)->text(), QStringLiteral("GB"));
        QCOMPARE(static_cast<QToolButton *>(gib)->text(), QStringLiteral("GiB"));
    }
    // Ctrl+U, as a user presses it over the window.
    m_window->activateWindow();
    QTest::keyClick(m_window, Qt::Key_U, Qt::ControlModifier);
    QCOMPARE(m_window->unit(), ByteUnit::GB);
    QTest::keyClick(m_window, Qt::Key_U, Qt::ControlModifier);
    QCOMPARE(m_window->unit(), ByteUnit::GiB);
}

void TestWindowActions::pinsRefuseTwinsAndUnpinAllFollows()
{
    QAction *unpin = m_window->action(QStringLiteral("actionClearPins"));
    QVERIFY(!unpin->isEnabled());
    m_window->action(QStringLiteral("actionPin"))->trigger();
    QCOMPARE(m_window->pinCount(), 1);
    QVERIFY(unpin->isEnabled());
    // The same scenario again, however often: still one pin.
    for (int i = 0; i < 5; ++i)
        m_window->action(QStringLiteral("actionPin"))->trigger();
    QCOMPARE(m_window->pinCount(), 1);
    // Another GPU to compare against does not make it another scenario.
    m_window->document()->edit(QStringLiteral("gpu"), [](Scenario &s) { s.gpus.push_back("h200"); });
    m_window->pinCurrent();
    QCOMPARE(m_window->pinCount(), 1);
    m_window->document()->edit(QStringLiteral("seq"),
                               [](Scenario &s) { s.training.sequence_length = 2048; });
    m_window->pinCurrent();
    QCOMPARE(m_window->pinCount(), 2);
    unpin->trigger();
    QCOMPARE(m_window->pinCount(), 0);
    QVERIFY(!unpin->isEnabled());
}

void TestWindowActions::aPinLabelKeepsEveryDifference()
{
    ScenarioDocument *doc = m_window->document();
    m_window->pinCurrent();
    // Six differences from the pinned scenario; the one under the bar is abridged, its hover text
    // names every one (attention, the last, included).
    doc->edit(QStringLiteral("many"), [](Scenario &s) {
        s.training.precision = Precision::MixedBf16;
        s.training.optimizer = Optimizer::AdamW8bit;
        s.training.micro_batch_size = 2;
        s.training.sequence_length = 2048;
        s.training.checkpointing = Checkpointing::Selective;
        s.training.attention = Attention::Sdpa;
    });
    const ChartBar &pin = m_window->chart()->bars()[1];
    QVERIFY2(pin.tooltip.contains(QStringLiteral("flash")), qPrintable(pin.tooltip));
    for (const char *d : {"bf16", "adamw", "batch 4", "seq 4,096", "ckpt full"})
        QVERIFY2(pin.tooltip.contains(QLatin1String(d)), qPrintable(pin.tooltip + " lacks " + d));
}

void TestWindowActions::aMissingRecentFileIsSaidSoAndLeaves()
{
    const QString path = m_dir->filePath(QStringLiteral("gone.yaml"));
    QVERIFY(m_window->saveTo(path));
    QVERIFY(QFile::remove(path));
    // Unsaved changes: still, nobody is asked about them for a file that cannot be opened.
    m_window->document()->edit(QStringLiteral("seq"),
                               [](Scenario &s) { s.training.sequence_length = 1024; });
    QMenu *recent = m_window->findChild<QMenu *>(QStringLiteral("recentMenu"));
    QAction *entry = nullptr;
    for (QAction *a : recent->actions())
        if (a->statusTip().endsWith(QStringLiteral("gone.yaml")))
            entry = a;
    QVERIFY(entry);
    entry->trigger();
    QCOMPARE(m_prompts->asked, 0);
    QCOMPARE(m_prompts->errors.size(), 1);
    QVERIFY2(m_prompts->errors.front().contains(QStringLiteral("no longer exists")),
             qPrintable(m_prompts->errors.front()));
    for (QAction *a : recent->actions())
        QVERIFY(!a->statusTip().endsWith(QStringLiteral("gone.yaml")));
    QCOMPARE(m_window->document()->scenario().training.sequence_length, std::int64_t(1024));
}

void TestWindowActions::breakdownTabShowsEachPhase()
{
    m_window->views()->setCurrentIndex(MainWindow::BreakdownViewIndex);
    QTreeWidget *table = m_window->breakdownView()->table();
    const MemoryEstimate &est = m_window->document()->estimate();
    QCOMPARE(table->columnCount(), 1 + kPhaseCount + 1);
    int row = 0;
    for (int c = 0; c < kComponentCount; ++c) {
        const auto comp = static_cast<Component>(c);
        if (!componentApplies(comp, true))
            continue;
        QTreeWidgetItem *item = table->topLevelItem(row++);
        QCOMPARE(item->text(0), QString::fromUtf8(componentLabel(comp)));
        for (int p = 0; p < kPhaseCount; ++p)
            QCOMPARE(item->text(1 + p),
                     QString::fromStdString(
                         formatBytes(est.phase(static_cast<Phase>(p))[comp], ByteUnit::GiB)));
        QVERIFY(!item->toolTip(0).isEmpty());
    }
    QCOMPARE(table->topLevelItemCount(), row + 2);
    QCOMPARE(table->topLevelItem(row + 1)->text(1 + kPhaseCount),
             QString::fromStdString(formatBytes(est.device_total, ByteUnit::GiB)));
    // It follows edits while shown.
    m_window->document()->edit(QStringLiteral("seq"),
                               [](Scenario &s) { s.training.sequence_length = 1024; });
    QCOMPARE(table->topLevelItem(row + 1)->text(1 + kPhaseCount),
             QString::fromStdString(
                 formatBytes(m_window->document()->estimate().device_total, ByteUnit::GiB)));
}

void TestWindowActions::iconsAndQuitKey()
{
    QAction *exportAction = m_window->action(QStringLiteral("actionExport"));
    const QImage icon = exportAction->icon().pixmap(24, 24).toImage();
    const QImage check
        = m_window->style()->standardIcon(QStyle::SP_DialogApplyButton).pixmap(24, 24).toImage();
    QVERIFY(!icon.isNull());
    QVERIFY2(icon != check, "the Export icon is the dialog's Apply check mark");
    QCOMPARE(icon, QIcon(QStringLiteral(":/membudget/export.svg")).pixmap(24, 24).toImage());
    QVERIFY(m_window->action(QStringLiteral("actionQuit"))
                ->shortcuts()
                .contains(QKeySequence(Qt::CTRL | Qt::Key_Q)));
}

void TestWindowActions::makeItFitKeepsTheExperimentUnlessItSays()
{
    ScenarioDocument *doc = m_window->document();
    // A full fine-tune at micro-batch 83 (a prime) on one 80 GB card.
    doc->edit(QStringLiteral("setup"), [](Scenario &s) {
        s.training.method = Method::Full;
        s.training.precision = Precision::MixedBf16;
        s.training.micro_batch_size = 83;
        s.training.sequence_length = 1024;
        s.gpus = {"a100-80gb"};
    });
    FitPanel *fit = m_window->fitPanel();
    fit->recompute();
    const auto &suggestions = fit->suggestions();
    QVERIFY(!suggestions.empty());
    const std::int64_t effective = 83 * doc->scenario().training.gradient_accumulation_steps;
    QTreeWidget *list = fit->list();
    int suggestion = 0;
    bool heading = false, offload = false, methodChange = false;
    for (int r = 0; r < list->topLevelItemCount(); ++r) {
        QTreeWidgetItem *item = list->topLevelItem(r);
        if (item->data(0, Qt::UserRole).toInt() < 0) {
            heading = true;
            QVERIFY(item->text(0).contains(QStringLiteral("change what is trained")));
            continue;
        }
        const FitSuggestion &s = suggestions[static_cast<std::size_t>(suggestion)];
        QCOMPARE(item->data(0, Qt::UserRole).toInt(), suggestion);
        ++suggestion;
        QCOMPARE(s.input.training.micro_batch_size * s.input.training.gradient_accumulation_steps,
                 effective);
        // Method changes come after the heading, and say so in the row.
        QCOMPARE(s.changesResult(), heading);
        QCOMPARE(item->text(0).contains(QStringLiteral("changes the result")), s.changesResult());
        methodChange = methodChange || s.changesResult();
        if (s.cpu_offload_bytes > 0) {
            offload = true;
            QVERIFY2(item->text(0).contains(QStringLiteral("of CPU RAM")),
                     qPrintable(item->text(0)));
        }
    }
    QCOMPARE(suggestion, static_cast<int>(suggestions.size()));
    QVERIFY(heading && methodChange && offload);
    // Apply on a method change (after the heading) applies that suggestion, not the row above.
    int index = -1;
    for (int i = 0; i < static_cast<int>(suggestions.size()); ++i)
        if (suggestions[static_cast<std::size_t>(i)].changesResult() && index < 0)
            index = i;
    const FitSuggestion chosen = suggestions[static_cast<std::size_t>(index)];
    auto *button = m_window->findChild<QPushButton *>(QStringLiteral("applyFit%1").arg(index));
    QVERIFY(button);
    QTRY_VERIFY(button->x() > 0); // the list has laid its rows out (a posted layout)
    QTest::mouseClick(button, Qt::LeftButton);
    QVERIFY(doc->scenario().training == chosen.input.training);
}

QTEST_MAIN(TestWindowActions)
#include "tst_window_actions.moc"
