// SPDX-License-Identifier: GPL-3.0-or-later
// Small screens (issue #16, items 1 and 11), on a screen of the size MEMBUDGET_TEST_SCREEN says
// ("1366x768", "1600x1000"; the offscreen platform's screen is configured before the application
// starts): the window opens within the screen, also when the geometry saved last time was from a
// larger one; model, method, precision, micro-batch and sequence are in view without scrolling;
// sections fold away and stay folded; and with a larger system font no verdict and no Make It
// Fit row is cut short.
#include "document/scenario_document.h"
#include "main_window.h"
#include "panels/controls_panel.h"
#include "panels/fit_panel.h"
#include "panels/verdict_panel.h"
#include "widgets/collapsible_section.h"

#include <QApplication>
#include <QHeaderView>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QStyle>
#include <QTemporaryDir>
#include <QTest>
#include <QToolButton>
#include <QTreeWidget>

using namespace membudget;

namespace {

QSize g_screen; // set by main()

std::unique_ptr<AppSettings> settingsIn(const QTemporaryDir &dir)
{
    return std::make_unique<AppSettings>(dir.filePath(QStringLiteral("settings.ini")));
}

// The horizontal room a tree cell's text needs: its advance plus the style's text margins.
int textRoom(const QTreeWidget *tree, const QTreeWidgetItem *item, int column)
{
    const int margin = tree->style()->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, tree) + 1;
    return QFontMetrics(item->font(column)).horizontalAdvance(item->text(column)) + 2 * margin;
}

} // namespace

class TestScreenFit : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void theScreenIsTheOneAskedFor();
    void opensWithinTheScreen();
    void restoresAGeometryFromALargerScreenWithinThisOne();
    void mostUsedControlsAreInViewWithoutScrolling();
    void sectionsFoldAndStayFolded();
    void aLargerSystemFontCutsNoVerdictAndNoSuggestion();
};

void TestScreenFit::theScreenIsTheOneAskedFor()
{
    QCOMPARE(QGuiApplication::primaryScreen()->availableGeometry().size(), g_screen);
}

void TestScreenFit::opensWithinTheScreen()
{
    QTemporaryDir dir;
    MainWindow window(PresetCatalog::bundled(), settingsIn(dir));
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    const QRect available = window.screen()->availableGeometry();
    QVERIFY2(available.contains(window.frameGeometry()),
             qPrintable(QStringLiteral("%1x%2 on %3x%4")
                            .arg(window.frameGeometry().width())
                            .arg(window.frameGeometry().height())
                            .arg(available.width())
                            .arg(available.height())));
    // And uses it: not a small window in a corner of a small screen.
    QVERIFY(window.width() >= std::min(1366, available.width() - 40));
}

void TestScreenFit::restoresAGeometryFromALargerScreenWithinThisOne()
{
    QTemporaryDir dir;
    {
        // Saved on a 2560 x 1440 monitor: a 2400 x 1350 window at (100, 50).
        auto settings = settingsIn(dir);
        MainWindow big(PresetCatalog::bundled(), settingsIn(dir));
        big.setGeometry(100, 50, 2400, 1350);
        settings->setWindowGeometry(big.saveGeometry());
        settings->sync();
    }
    MainWindow window(PresetCatalog::bundled(), settingsIn(dir));
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QVERIFY2(window.screen()->availableGeometry().contains(window.frameGeometry()),
             qPrintable(QStringLiteral("%1,%2 %3x%4")
                            .arg(window.frameGeometry().x())
                            .arg(window.frameGeometry().y())
                            .arg(window.frameGeometry().width())
                            .arg(window.frameGeometry().height())));
}

void TestScreenFit::mostUsedControlsAreInViewWithoutScrolling()
{
    QTemporaryDir dir;
    MainWindow window(PresetCatalog::bundled(), settingsIn(dir));
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    QCoreApplication::processEvents();
    auto *scroll = qobject_cast<QScrollArea *>(window.controls()->parentWidget()->parentWidget());
    QVERIFY(scroll);
    QCOMPARE(scroll->verticalScrollBar()->value(), 0);
    const QRect viewport = scroll->viewport()->rect();
    for (const char *name : {"modelPreset", "method", "precision", "microBatch", "sequenceLength"}) {
        auto *w = window.controls()->findChild<QWidget *>(QLatin1String(name));
        QVERIFY2(w && w->isVisible(), name);
        const QRect r(w->mapTo(scroll->viewport(), QPoint(0, 0)), w->size());
        QVERIFY2(viewport.contains(r),
                 qPrintable(QStringLiteral("%1 at y %2..%3, the panel shows 0..%4")
                                .arg(QLatin1String(name))
                                .arg(r.top())
                                .arg(r.bottom())
                                .arg(viewport.height())));
    }
}

void TestScreenFit::sectionsFoldAndStayFolded()
{
    QTemporaryDir dir;
    QStringList folded;
    {
        MainWindow window(PresetCatalog::bundled(), settingsIn(dir));
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        const auto sections = window.controls()->sections();
        QVERIFY(sections.size() >= 6);
        for (CollapsibleSection *s : sections) {
            QVERIFY2(s->isExpanded(), qPrintable(s->objectName()));
            QVERIFY(s->content()->isVisible() || !s->isVisible());
        }
        CollapsibleSection *techniques = window.controls()->findChild<CollapsibleSection *>(
            QStringLiteral("sectionTechniques"));
        QVERIFY(techniques);
        QTest::mouseClick(techniques->header(), Qt::LeftButton);
        QVERIFY(!techniques->isExpanded());
        QVERIFY(!techniques->content()->isVisible());
        QVERIFY(!window.controls()->findChild<QWidget *>(QStringLiteral("attention"))->isVisible());
        folded = window.controls()->collapsedSections();
        QCOMPARE(folded, QStringList{QStringLiteral("sectionTechniques")});
        window.close();
    }
    MainWindow again(PresetCatalog::bundled(), settingsIn(dir));
    QCOMPARE(again.controls()->collapsedSections(), folded);
}

void TestScreenFit::aLargerSystemFontCutsNoVerdictAndNoSuggestion()
{
    const QFont before = QApplication::font();
    QFont larger = before;
    larger.setPointSizeF(before.pointSizeF() + 2);
    QApplication::setFont(larger);
    {
        QTemporaryDir dir;
        MainWindow window(PresetCatalog::bundled(), settingsIn(dir));
        window.document()->edit(QStringLiteral("gpus"), [](Scenario &s) {
            s.gpus = {"rtx-3060-12gb", "rtx-4090", "a100-80gb", "h200"};
        });
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        window.fitPanel()->recompute();
        QCoreApplication::processEvents();

        QTreeWidget *verdicts = window.verdictPanel()->table();
        QCOMPARE(verdicts->topLevelItemCount(), 4);
        for (int r = 0; r < verdicts->topLevelItemCount(); ++r) {
            const QTreeWidgetItem *item = verdicts->topLevelItem(r);
            for (int c = 0; c < verdicts->columnCount(); ++c)
                QVERIFY2(verdicts->header()->sectionSize(c) >= textRoom(verdicts, item, c),
                         qPrintable(QStringLiteral("'%1' in %2 px")
                                        .arg(item->text(c))
                                        .arg(verdicts->header()->sectionSize(c))));
        }
        QTreeWidget *fits = window.fitPanel()->list();
        QVERIFY(fits->topLevelItemCount() > 0);
        // The changes keep room to be read: a third of the list at least (they were squeezed to a
        // few letters a line at 1366 x 768 when the speed went on one line beside Headroom).
        QVERIFY2(fits->header()->sectionSize(0) * 3 >= fits->viewport()->width(),
                 qPrintable(QStringLiteral("%1 of %2 px")
                                .arg(fits->header()->sectionSize(0))
                                .arg(fits->viewport()->width())));
        const int width = fits->header()->sectionSize(0)
                          - 2 * (fits->style()->pixelMetric(QStyle::PM_FocusFrameHMargin) + 1);
        for (int r = 0; r < fits->topLevelItemCount(); ++r) {
            QTreeWidgetItem *item = fits->topLevelItem(r);
            const QRect wrapped = QFontMetrics(item->font(0))
                                      .boundingRect(QRect(0, 0, width, 1 << 20),
                                                    Qt::TextWordWrap,
                                                    item->text(0));
            const QRect row = fits->visualItemRect(item);
            QVERIFY2(row.height() >= wrapped.height(),
                     qPrintable(QStringLiteral("'%1' needs %2 px, has %3")
                                    .arg(item->text(0).simplified())
                                    .arg(wrapped.height())
                                    .arg(row.height())));
        }
    }
    QApplication::setFont(before);
}

int main(int argc, char **argv)
{
    // The screen the test asks for, before the application (and its platform) exists.
    const QByteArray wanted = qEnvironmentVariable("MEMBUDGET_TEST_SCREEN", "1366x768").toLatin1();
    const QList<QByteArray> parts = wanted.split('x');
    g_screen = QSize(parts.value(0).toInt(), parts.value(1).toInt());
    QTemporaryDir config;
    const QString json = config.filePath(QStringLiteral("screen.json"));
    QFile file(json);
    if (!file.open(QIODevice::WriteOnly))
        return 1;
    file.write(
        QStringLiteral("{\"screens\": [{\"name\": \"test\", \"x\": 0, \"y\": 0, \"width\": %1, "
                       "\"height\": %2, \"logicalDpi\": 96, \"dpr\": 1}]}")
            .arg(g_screen.width())
            .arg(g_screen.height())
            .toUtf8());
    file.close();
    qputenv("QT_QPA_PLATFORM", ("offscreen:configfile=" + json).toUtf8());
    QApplication app(argc, argv);
    TestScreenFit test;
    return QTest::qExec(&test, argc, argv);
}

#include "tst_screen_fit.moc"
