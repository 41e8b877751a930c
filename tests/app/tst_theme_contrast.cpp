// SPDX-License-Identifier: GPL-3.0-or-later
// Themes (issue #16, item 9): switching between light, dark and a dark system palette recolours
// the verdict, Make It Fit, the controls' notes and the charts at once, without waiting for an
// edit, and every text colour reads at 4.5:1 or better (WCAG 2.1 AA) on what it sits on.
#include "advice/gpu_verdict.h"
#include "charts/budget_chart.h"
#include "charts/chart_theme.h"
#include "document/scenario_document.h"
#include "main_window.h"
#include "model/step_model.h"
#include "panels/controls_panel.h"
#include "panels/fit_panel.h"
#include "panels/verdict_panel.h"

#include <QAction>
#include <QApplication>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QStyle>
#include <QTemporaryDir>
#include <QTest>
#include <QTreeWidget>

using namespace membudget;

namespace {

QStringList poorContrast(const QTreeWidget *tree)
{
    QStringList found;
    const QPalette p = tree->palette();
    const QColor base = p.color(QPalette::Base);
    const QColor alternate = over(p.color(QPalette::AlternateBase), base);
    for (int r = 0; r < tree->topLevelItemCount(); ++r) {
        const QTreeWidgetItem *item = tree->topLevelItem(r);
        for (int c = 0; c < tree->columnCount(); ++c) {
            if (item->text(c).isEmpty())
                continue;
            const QBrush brush = item->foreground(c);
            const QColor text = brush.style() == Qt::NoBrush ? p.color(QPalette::Text)
                                                             : brush.color();
            for (const QColor &bg : {base, alternate}) {
                const double ratio = contrastRatio(text, bg);
                if (ratio < 4.5)
                    found << QStringLiteral("'%1' %2 on %3: %4")
                                 .arg(item->text(c).simplified().left(40), text.name(), bg.name())
                                 .arg(ratio, 0, 'f', 2);
            }
        }
    }
    return found;
}

QStringList poorLabels(QWidget *root)
{
    QStringList found;
    for (QLabel *label : root->findChildren<QLabel *>()) {
        // Disabled controls are exempt (WCAG 2.1, 1.4.3: "part of an inactive user interface
        // component"), e.g. the dataset rows while no dataset is set.
        if (!label->isVisibleTo(root) || label->text().isEmpty() || !label->isEnabled())
            continue;
        const QColor text = label->palette().color(label->foregroundRole());
        const QColor bg = label->palette().color(label->backgroundRole());
        const double ratio = contrastRatio(text, bg);
        if (ratio < 4.5)
            found << QStringLiteral("%1 '%2': %3")
                         .arg(label->objectName(), label->text().left(40))
                         .arg(ratio, 0, 'f', 2);
    }
    return found;
}

QStringList poorChartText(const BudgetChart *chart)
{
    QStringList found;
    for (const PlacedLabel &l : chart->placedLabels())
        if (contrastRatio(l.color, l.background) < 4.5)
            found << QStringLiteral("chart '%1'").arg(l.text.simplified());
    return found;
}

QPalette darkSystemPalette()
{
    // A dark desktop theme the application did not choose (KDE Breeze Dark-like colours).
    QPalette p;
    p.setColor(QPalette::Window, QColor(49, 54, 59));
    p.setColor(QPalette::WindowText, QColor(239, 240, 241));
    p.setColor(QPalette::Base, QColor(35, 38, 41));
    p.setColor(QPalette::AlternateBase, QColor(49, 54, 59));
    p.setColor(QPalette::Text, QColor(239, 240, 241));
    p.setColor(QPalette::Button, QColor(49, 54, 59));
    p.setColor(QPalette::ButtonText, QColor(239, 240, 241));
    p.setColor(QPalette::Highlight, QColor(61, 174, 233));
    p.setColor(QPalette::PlaceholderText, QColor(160, 160, 160));
    return p;
}

} // namespace

class TestThemeContrast : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void everyThemeRecoloursAtOnceAndReads();
};

void TestThemeContrast::everyThemeRecoloursAtOnceAndReads()
{
    const QPalette original = QApplication::palette();
    QTemporaryDir dir;
    MainWindow window(PresetCatalog::bundled(),
                      std::make_unique<AppSettings>(dir.filePath(QStringLiteral("settings.ini"))));
    ScenarioDocument *doc = window.document();
    // Rows that fit and rows that do not; suggestions, some of which change the result.
    doc->edit(QStringLiteral("setup"), [](Scenario &s) {
        s.gpus = {"rtx-3060-12gb", "rtx-4090", "a100-80gb", "h200", "mi325x"};
        s.training.method = Method::Full;
        s.training.precision = Precision::MixedBf16;
        s.training.micro_batch_size = 2;
    });
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    window.verdictPanel()->limitsWorker()->waitForNewest(); // the replays' verdicts
    QVERIFY(doc->estimate().device_total > doc->selectedGpus().front().memory_bytes);
    QVERIFY(doc->estimate().device_total <= doc->selectedGpus().back().memory_bytes);
    window.fitPanel()->recompute();
    QCoreApplication::processEvents();
    QVERIFY(window.fitPanel()->list()->topLevelItemCount() > 0);

    QMenu *themeMenu = nullptr;
    for (QMenu *m : window.menuBar()->findChildren<QMenu *>())
        if (m->title().remove(QLatin1Char('&')) == QStringLiteral("Theme"))
            themeMenu = m;
    QVERIFY(themeMenu);
    const QList<QAction *> themes = themeMenu->actions(); // system, light, dark

    struct Step
    {
        const char *name;
        std::function<void()> apply;
    };
    const std::vector<Step> steps = {
        {"dark", [&] { themes[2]->trigger(); }},
        {"light", [&] { themes[1]->trigger(); }},
        {"system", [&] { themes[0]->trigger(); }},
        {"dark system palette",
         [&] {
             themes[0]->trigger();
             QApplication::setPalette(darkSystemPalette());
         }},
        {"dark again", [&] { themes[2]->trigger(); }},
    };
    const int steps0 = doc->undoStack()->count();
    for (const Step &step : steps) {
        step.apply();
        // No edit in between: the panels must follow the palette by themselves. The suggestions
        // are recomputed after their debounce.
        QTest::qWait(200);
        QTRY_VERIFY_WITH_TIMEOUT(!window.fitPanel()->busy(), 60000); // on a loaded machine
        QCOMPARE(doc->undoStack()->count(), steps0);
        const ChartColors colors = chartColors(window.verdictPanel()->palette());
        QTreeWidget *verdicts = window.verdictPanel()->table();
        const auto gpus = doc->selectedGpus();
        // Three states, three colours: fits (ok), tight (warning), does not fit (danger), as the
        // core's verdict says.
        const StepModel model(doc->input());
        for (int r = 0; r < verdicts->topLevelItemCount(); ++r) {
            const FitVerdict v = gpuVerdict(model,
                                            doc->estimate(),
                                            gpus[static_cast<std::size_t>(r)].memory_bytes)
                                     .verdict;
            QCOMPARE(verdicts->topLevelItem(r)->foreground(2).color(),
                     v == FitVerdict::Fits    ? colors.ok
                     : v == FitVerdict::Tight ? colors.warning
                                              : colors.danger);
        }
        // Each of the three reads on the table's rows and on the window (the reason line), whether
        // or not a row shows it now.
        const QPalette p = verdicts->palette();
        for (const QColor &state : {colors.ok, colors.warning, colors.danger})
            for (const QColor &bg : {p.color(QPalette::Base),
                                     over(p.color(QPalette::AlternateBase), p.color(QPalette::Base)),
                                     window.verdictPanel()->palette().color(QPalette::Window)})
                QVERIFY2(contrastRatio(state, bg) >= 4.5,
                         qPrintable(QStringLiteral("%1: %2 on %3")
                                        .arg(QLatin1String(step.name), state.name(), bg.name())));
        QStringList problems = poorContrast(verdicts);
        problems << poorContrast(window.fitPanel()->list());
        problems << poorLabels(window.controls());
        problems << poorLabels(window.verdictPanel());
        problems << poorLabels(window.fitPanel());
        window.chart()->replot(QCustomPlot::rpImmediateRefresh);
        problems << poorChartText(window.chart());
        QVERIFY2(problems.isEmpty(),
                 qPrintable(QLatin1String(step.name) + QStringLiteral(": ") + problems.join("; ")));
    }
    themes[0]->trigger();
    QApplication::setPalette(original);
}

QTEST_MAIN(TestThemeContrast)
#include "tst_theme_contrast.moc"
