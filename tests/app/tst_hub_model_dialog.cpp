// SPDX-License-Identifier: GPL-3.0-or-later
// The app's way to a Hugging Face model, offscreen, against a server on the loopback address that
// serves the published config.json files in tests/data/hub: an id typed in the model search fetches
// in the background and becomes the (undoable) model; failures keep the dialog open and say why;
// Cancel stops a fetch; an invalid id asks nothing; offline, the cached copy is used and said so.
#include "dialogs/hub_model_dialog.h"
#include "document/scenario_document.h"
#include "hub_test_data.h"
#include "local_http_server.h"
#include "main_window.h"

#include <QComboBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QStatusBar>
#include <QTemporaryDir>
#include <QTest>
#include <QUndoStack>

using namespace membudget;
using namespace membudget::test;

// How long a QTRY_ waits for the window: a sanitizer build on two loaded cores estimates an
// 80-layer model (two replays of its step) in seconds; a passing check returns at once.
constexpr int kPatienceMs = 60000;

class TestHubModelDialog : public QObject
{
    Q_OBJECT

    LocalHttpServer *m_server = nullptr;
    QTemporaryDir *m_dir = nullptr;
    MainWindow *m_window = nullptr;

    HubSettings settings() const
    {
        HubSettings s;
        s.endpoint = QUrl(m_server->baseUrl());
        s.cacheDir = m_dir->filePath(QStringLiteral("cache"));
        // The loopback server answers from this thread's event loop; right after the window
        // opens, that loop can be busy for seconds in a sanitizer build on loaded cores, so a
        // short deadline would fire before the answer is read (CI, 2026-11-27: both first
        // fetches timed out). These tests are about the flow, not the deadline.
        s.timeoutMs = kPatienceMs;
        return s;
    }
    HubModelDialog *dialog() const { return m_window->findChild<HubModelDialog *>(); }

private slots:
    void init()
    {
        m_server = new LocalHttpServer;
        QVERIFY(m_server->listen());
        m_server->serveFile(kLlamaConfigPath, hubDataFile("meta-llama/Llama-3.1-70B/config.json"));
        m_dir = new QTemporaryDir;
        auto appSettings = std::make_unique<AppSettings>(m_dir->filePath(QStringLiteral("s.ini")));
        m_window = new MainWindow(PresetCatalog::bundled(), std::move(appSettings));
        m_window->setHubSettings(settings());
        m_window->show();
        QVERIFY(QTest::qWaitForWindowExposed(m_window));
    }
    void cleanup()
    {
        m_window->document()->undoStack()->setClean();
        delete m_window;
        delete m_server;
        delete m_dir;
    }

    void idTypedInTheModelSearch()
    {
        const Scenario before = m_window->document()->scenario();
        auto *combo = m_window->findChild<QComboBox *>(QStringLiteral("modelPreset"));
        QVERIFY(combo);
        combo->lineEdit()->setFocus();
        combo->lineEdit()->selectAll();
        QTest::keyClicks(combo->lineEdit(), QStringLiteral("meta-llama/Llama-3.1-70B"));
        QTest::keyClick(combo->lineEdit(), Qt::Key_Return);
        // The dialog shows the fetch, then closes by itself; the window never waited.
        QTRY_VERIFY_WITH_TIMEOUT(m_window->document()->scenario().model.source
                                     == "meta-llama/Llama-3.1-70B",
                                 kPatienceMs);
        QTRY_VERIFY_WITH_TIMEOUT(!dialog(), kPatienceMs);
        QCOMPARE(m_window->document()->estimate().parameters, Q_INT64_C(70553706496));
        QCOMPARE(combo->currentText(), QStringLiteral("meta-llama/Llama-3.1-70B"));
        QVERIFY2(m_window->statusBar()->currentMessage().startsWith(
                     QLatin1String("Fetched the config.json of meta-llama/Llama-3.1-70B")),
                 qPrintable(m_window->statusBar()->currentMessage()));
        QCOMPARE(m_server->requests().size(), 1);
        // One undo step brings the previous model back; Enter on the same id asks nothing again.
        m_window->document()->undoStack()->undo();
        QVERIFY(m_window->document()->scenario().model == before.model);
        m_window->document()->undoStack()->redo();
        combo->lineEdit()->setFocus();
        QTest::keyClick(combo->lineEdit(), Qt::Key_Return);
        QVERIFY(!dialog());
        QCOMPARE(m_server->requests().size(), 1);
    }

    void failureKeepsTheDialogOpen()
    {
        auto *d = qobject_cast<HubModelDialog *>(
            m_window->openHubModel(QStringLiteral("nobody/nothing"), true));
        QVERIFY(d);
        QTRY_VERIFY_WITH_TIMEOUT(!d->isFetching(), kPatienceMs);
        QVERIFY(d->isVisible());
        QVERIFY2(d->statusLabel()->text().contains(QLatin1String("No model nobody/nothing")),
                 qPrintable(d->statusLabel()->text()));
        QVERIFY(m_window->document()->scenario().model.source.empty());
        // Correcting the id and fetching again works from the same dialog.
        d->lineEdit()->setText(QStringLiteral("https://huggingface.co/meta-llama/Llama-3.1-70B"));
        QVERIFY(d->fetchButton()->isEnabled());
        QTest::mouseClick(d->fetchButton(), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(m_window->document()->scenario().model.source
                                     == "meta-llama/Llama-3.1-70B",
                                 kPatienceMs);
    }

    void cancelStopsTheFetch()
    {
        m_server->route(kLlamaConfigPath, [](const HttpRequest &) {
            HttpResponse r;
            r.stall = true;
            return r;
        });
        const Scenario before = m_window->document()->scenario();
        auto *d = qobject_cast<HubModelDialog *>(
            m_window->openHubModel(QStringLiteral("meta-llama/Llama-3.1-70B"), true));
        QVERIFY(d);
        QVERIFY(d->isFetching());
        QTRY_COMPARE_WITH_TIMEOUT(m_server->requests().size(), 1, kPatienceMs);
        QVERIFY(m_window->isEnabled()); // the window is not frozen meanwhile
        d->reject();                    // what Cancel and Escape do
        QTRY_VERIFY_WITH_TIMEOUT(!dialog(), kPatienceMs);
        QVERIFY(m_window->document()->scenario().model == before.model);
        QVERIFY(!m_window->document()->isModified());
    }

    void invalidIdAsksNothing()
    {
        auto *d = qobject_cast<HubModelDialog *>(
            m_window->openHubModel(QStringLiteral("meta-llama/../../etc"), true));
        QVERIFY(d);
        QVERIFY(!d->isFetching());
        QVERIFY(!d->fetchButton()->isEnabled());
        QVERIFY2(d->statusLabel()->text().contains(QLatin1String("one '/'")),
                 qPrintable(d->statusLabel()->text()));
        d->lineEdit()->setText(QStringLiteral("https://example.com/a/b"));
        QVERIFY(!d->fetchButton()->isEnabled());
        QVERIFY(d->statusLabel()->text().contains(QLatin1String("not a Hugging Face address")));
        QTest::qWait(50);
        QVERIFY(m_server->requests().isEmpty());
        d->reject();
    }

    void offlineUsesTheCachedCopy()
    {
        m_window->openHubModel(QStringLiteral("meta-llama/Llama-3.1-70B"), true);
        QTRY_VERIFY_WITH_TIMEOUT(m_window->document()->scenario().model.source
                                     == "meta-llama/Llama-3.1-70B",
                                 kPatienceMs);
        QTRY_VERIFY_WITH_TIMEOUT(!dialog(), kPatienceMs);
        m_window->document()->undoStack()->undo();
        QVERIFY(m_window->document()->scenario().model.source.empty());
        m_server->close();
        m_window->openHubModel(QStringLiteral("meta-llama/Llama-3.1-70B"), true);
        QTRY_VERIFY_WITH_TIMEOUT(m_window->document()->scenario().model.source
                                     == "meta-llama/Llama-3.1-70B",
                                 kPatienceMs);
        const QString message = m_window->statusBar()->currentMessage();
        QVERIFY2(message.startsWith(QLatin1String("Offline: cannot reach"))
                     && message.contains(
                         QLatin1String("used the copy of meta-llama/Llama-3.1-70B cached on")),
                 qPrintable(message));
    }

    void menuAction()
    {
        QAction *a = m_window->action(QStringLiteral("actionOpenHub"));
        QVERIFY(a);
        a->trigger();
        QVERIFY(dialog());
        QVERIFY(dialog()->lineEdit()->text().isEmpty());
        QVERIFY(!dialog()->fetchButton()->isEnabled());
        dialog()->reject();
        QTRY_VERIFY_WITH_TIMEOUT(!dialog(), kPatienceMs);
    }
};

QTEST_MAIN(TestHubModelDialog)
#include "tst_hub_model_dialog.moc"
