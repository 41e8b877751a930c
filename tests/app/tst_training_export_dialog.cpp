// SPDX-License-Identifier: GPL-3.0-or-later
// File > Export Training Config, offscreen: the preview is the core's text for each format, JSON's
// header is shown beside it, Copy and Save take exactly the preview, a failed save keeps the old
// file, and an inference scenario says why nothing can be exported.
#include "dialogs/training_export_dialog.h"
#include "document/scenario_document.h"
#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QFile>
#include <QJsonDocument>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTemporaryDir>
#include <QTest>

using namespace membudget;

class TestTrainingExportDialog : public QObject
{
    Q_OBJECT

    QTemporaryDir *m_dir = nullptr;
    MainWindow *m_window = nullptr;

    TrainingExportDialog *openDialog()
    {
        m_window->action(QStringLiteral("actionExportTraining"))->trigger();
        return m_window->findChild<TrainingExportDialog *>();
    }

private slots:
    void init()
    {
        m_dir = new QTemporaryDir;
        auto settings = std::make_unique<AppSettings>(m_dir->filePath(QStringLiteral("s.ini")));
        m_window = new MainWindow(PresetCatalog::bundled(), std::move(settings));
        m_window->show();
        QVERIFY(QTest::qWaitForWindowExposed(m_window));
    }
    void cleanup()
    {
        delete m_window;
        delete m_dir;
    }

    void previewIsTheCoresText()
    {
        TrainingExportDialog *d = openDialog();
        QVERIFY(d);
        std::string problem;
        for (TrainingFormat f : {TrainingFormat::Trainer,
                                 TrainingFormat::Sft,
                                 TrainingFormat::Accelerate,
                                 TrainingFormat::DeepSpeed}) {
            d->setFormat(f);
            const auto e = exportTrainingConfig(m_window->document()->scenario(),
                                                m_window->document()->catalog(),
                                                f,
                                                problem);
            QVERIFY(e);
            QCOMPARE(d->preview()->toPlainText(), QString::fromStdString(e->text));
        }
        // JSON has no comments: the header is shown under the preview.
        QVERIFY(!QJsonDocument::fromJson(d->preview()->toPlainText().toUtf8()).isNull());
        QVERIFY2(d->notesLabel()->text().startsWith(
                     QLatin1String("Training setup exported by MemBudget")),
                 qPrintable(d->notesLabel()->text()));
        d->findChild<QPushButton *>(QStringLiteral("exportCopy"))->click();
        QCOMPARE(QApplication::clipboard()->text(), d->preview()->toPlainText());
    }

    void saveWritesThePreview()
    {
        TrainingExportDialog *d = openDialog();
        d->setFormat(TrainingFormat::Accelerate);
        const QString path = m_dir->filePath(QStringLiteral("accelerate_config.yaml"));
        QString suggested;
        d->setPathPrompt([&](const QString &s) {
            suggested = s;
            return path;
        });
        d->saveButton()->click();
        QVERIFY(suggested.endsWith(QLatin1String("accelerate_config.yaml")));
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QCOMPARE(QString::fromUtf8(f.readAll()), d->preview()->toPlainText());
        f.close();

        // A folder that does not exist: an error, the earlier file untouched.
        d->setFormat(TrainingFormat::Trainer);
        d->setPathPrompt(
            [&](const QString &) { return m_dir->filePath(QStringLiteral("no/x.py")); });
        d->saveButton()->click();
        QVERIFY2(d->notesLabel()->text().contains(QLatin1String("could not be written")),
                 qPrintable(d->notesLabel()->text()));
        QVERIFY(f.open(QIODevice::ReadOnly));
        QVERIFY(f.readAll().contains("distributed_type"));
    }

    void inferenceSaysWhy()
    {
        m_window->document()->edit(QStringLiteral("inference"),
                                   [](Scenario &s) { s.training.mode = Mode::Inference; });
        TrainingExportDialog *d = openDialog();
        QVERIFY(d);
        QVERIFY(d->preview()->toPlainText().isEmpty());
        QVERIFY(d->notesLabel()->text().contains(QLatin1String("inference scenario")));
        QVERIFY(!d->saveButton()->isEnabled());
        m_window->document()->undoStack()->setClean();
    }
};

QTEST_MAIN(TestTrainingExportDialog)
#include "tst_training_export_dialog.moc"
