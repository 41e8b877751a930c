// SPDX-License-Identifier: GPL-3.0-or-later
// The hostile-input corpus (tests/data/bad) opened in the desktop application, through the real
// error dialog: every file shows a critical message box naming the file, line and column, and the
// scenario that was open stays exactly as it was (contents, file name, undo history, chart).
#include "charts/budget_chart.h"
#include "document/scenario_document.h"
#include "io/scenario_yaml.h"
#include "main_window.h"

#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QMessageBox>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <QUndoStack>

using namespace membudget;

namespace {

QString corpusDir()
{
    return QStringLiteral(MEMBUDGET_SOURCE_DIR "/tests/data/bad");
}

// Runs `action`, which is expected to open a modal message box; records the box's icon and text
// and closes it the way a user would (its default button).
struct DialogWatch
{
    QString text;
    QMessageBox::Icon icon = QMessageBox::NoIcon;
    int seen = 0;

    template<typename Action>
    void run(Action action)
    {
        QTimer poll;
        poll.setInterval(5);
        QObject::connect(&poll, &QTimer::timeout, [this] {
            if (auto *box = qobject_cast<QMessageBox *>(QApplication::activeModalWidget())) {
                ++seen;
                text = box->text() + QLatin1Char('\n') + box->informativeText();
                icon = box->icon();
                box->accept();
            }
        });
        poll.start();
        action();
        poll.stop();
    }
};

} // namespace

class TestBadInputsGui : public QObject
{
    Q_OBJECT
private:
    QTemporaryDir m_dir;
    MainWindow *m_window = nullptr;
    QString m_goodPath;
    std::string m_goodYaml;

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_window = new MainWindow(PresetCatalog::bundled(),
                                  std::make_unique<AppSettings>(
                                      m_dir.filePath(QStringLiteral("settings.ini"))));
        m_window->show();
        QVERIFY(QTest::qWaitForWindowExposed(m_window));
        // A saved scenario with one unsaved edit on top: both must survive every bad file.
        m_goodPath = m_dir.filePath(QStringLiteral("good.yaml"));
        QFile::copy(QStringLiteral(MEMBUDGET_SOURCE_DIR
                                   "/presets/scenarios/lora-mistral-7b-a100-80gb.yaml"),
                    m_goodPath);
        QVERIFY(m_window->openFile(m_goodPath));
        m_goodYaml = scenarioToYaml(m_window->document()->scenario());
    }
    void cleanupTestCase()
    {
        m_window->document()->undoStack()->setClean();
        delete m_window;
    }

    void corpus_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("position");
        QFile manifest(corpusDir() + QStringLiteral("/EXPECTED.tsv"));
        QVERIFY(manifest.open(QIODevice::ReadOnly | QIODevice::Text));
        int rows = 0;
        while (!manifest.atEnd()) {
            const QStringList cols
                = QString::fromUtf8(manifest.readLine()).chopped(1).split(QLatin1Char('\t'));
            // Memory snapshots are not opened as scenarios; the command line checks them.
            if (cols.size() == 3 && !cols[0].startsWith(QLatin1String("snapshot-"))) {
                QTest::newRow(qPrintable(cols[0])) << cols[0] << cols[1];
                ++rows;
            }
        }
        QVERIFY(rows >= 60);
    }
    void corpus()
    {
        QFETCH(QString, file);
        QFETCH(QString, position);
        const QString path = corpusDir() + QLatin1Char('/') + file;
        ScenarioDocument *doc = m_window->document();
        const int undoBefore = doc->undoStack()->count();
        const std::size_t barsBefore = m_window->chart()->bars().size();
        const Bytes peakBefore = m_window->chart()->bars().front().estimate.peak_allocated;

        DialogWatch dialog;
        QElapsedTimer timer;
        timer.start();
        bool accepted = true;
        // config.json files go through Import; everything else through Open, as a user would try.
        if (file.endsWith(QLatin1String(".json")))
            dialog.run([&] { accepted = m_window->importModelConfig(path); });
        else
            dialog.run([&] { accepted = m_window->openFile(path); });
        const qint64 ms = timer.elapsed();

        QVERIFY(!accepted);
        QCOMPARE(dialog.seen, 1);
        QCOMPARE(dialog.icon, QMessageBox::Critical);
        // Opening a preset file as a scenario is refused for its format, at its own position.
        if (!file.startsWith(QLatin1String("presets-")))
            QVERIFY2(dialog.text.contains(path + QLatin1Char(':') + position + QStringLiteral(": ")),
                     qPrintable(dialog.text));
        else
            QVERIFY2(dialog.text.contains(path + QLatin1Char(':')), qPrintable(dialog.text));
        QVERIFY2(ms < 1000, qPrintable(QString::number(ms)));

        QCOMPARE(scenarioToYaml(doc->scenario()), m_goodYaml);
        QCOMPARE(doc->filePath(), QFileInfo(m_goodPath).absoluteFilePath());
        QCOMPARE(doc->undoStack()->count(), undoBefore);
        QVERIFY(!doc->isModified());
        QCOMPARE(m_window->chart()->bars().size(), barsBefore);
        QCOMPARE(m_window->chart()->bars().front().estimate.peak_allocated, peakBefore);
    }
};

QTEST_MAIN(TestBadInputsGui)
#include "tst_bad_inputs_gui.moc"
