// SPDX-License-Identifier: GPL-3.0-or-later
// Help > User Guide, offscreen: the guide compiled into the program is docs/user-guide.md, it
// renders with its images, every link goes somewhere (a heading, another page of the docs, or the
// web), following a heading link scrolls to it and another page opens with Back to return.
#include "dialogs/user_guide_window.h"
#include "main_window.h"

#include <QAction>
#include <QFile>
#include <QRegularExpression>
#include <QScrollBar>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextDocument>

using namespace membudget;

class TestUserGuide : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    MainWindow *m_window = nullptr;
    UserGuideWindow *m_guide = nullptr;

    // Every link target and image name in the rendered document.
    void collect(QStringList &links, QStringList &images) const
    {
        QTextDocument *doc = m_guide->browser()->document();
        for (QTextBlock b = doc->begin(); b.isValid(); b = b.next())
            for (auto it = b.begin(); !it.atEnd(); ++it) {
                const QTextCharFormat f = it.fragment().charFormat();
                if (f.isImageFormat())
                    images << f.toImageFormat().name();
                else if (f.isAnchor() && !f.anchorHref().isEmpty())
                    links << f.anchorHref();
            }
    }

private slots:
    void initTestCase()
    {
        m_window = new MainWindow(PresetCatalog::bundled(),
                                  std::make_unique<AppSettings>(m_dir.filePath("s.ini")));
        m_window->show();
        m_window->action(QStringLiteral("actionUserGuide"))->trigger();
        m_guide = m_window->findChild<UserGuideWindow *>();
        QVERIFY(m_guide);
        QVERIFY(m_guide->isVisible());
        QCOMPARE(m_window->action(QStringLiteral("actionUserGuide"))->shortcut(),
                 QKeySequence(QKeySequence::HelpContents));
    }
    void cleanupTestCase() { delete m_window; }

    void compiledCopyIsTheDocsPage()
    {
        QFile compiled(QStringLiteral(":/membudget/docs/user-guide.md"));
        QFile source(QStringLiteral(MEMBUDGET_SOURCE_DIR "/docs/user-guide.md"));
        QVERIFY(compiled.open(QIODevice::ReadOnly) && source.open(QIODevice::ReadOnly));
        QCOMPARE(compiled.readAll(), source.readAll());
        const QString text = m_guide->browser()->toPlainText();
        QVERIFY(text.contains(QLatin1String("Will my run fit?")));
        QVERIFY(text.contains(QLatin1String("What does a fine-tune take?")));
        QVERIFY(!text.contains(QLatin1String("]("))); // Markdown rendered, not shown raw
    }

    void imagesLoad()
    {
        QStringList links, images;
        collect(links, images);
        QVERIFY(images.size() >= 2);
        for (const QString &name : images) {
            const QUrl url = m_guide->browser()->source().resolved(QUrl(name));
            const QVariant image
                = m_guide->browser()->document()->resource(QTextDocument::ImageResource, url);
            QVERIFY2(image.isValid() && !image.value<QImage>().isNull(), qPrintable(name));
        }
    }

    void everyLinkGoesSomewhere()
    {
        QStringList links, images;
        collect(links, images);
        QVERIFY(links.size() >= 8);
        for (const QString &href : links) {
            const QUrl url(href);
            if (url.scheme().startsWith(QLatin1String("http")))
                continue;
            if (href.startsWith(QLatin1Char('#'))) {
                QVERIFY2(m_guide->scrollToHeading(url.fragment()), qPrintable(href));
                continue;
            }
            const QUrl target = UserGuideWindow::home().resolved(url);
            QVERIFY2(QFile::exists(QLatin1Char(':') + target.path()), qPrintable(href));
            QVERIFY2(QFile::exists(QStringLiteral(MEMBUDGET_SOURCE_DIR "/docs/") + url.path()),
                     qPrintable(href)); // and the installed docs have it beside the guide
        }
    }

    void followingLinks()
    {
        QTextBrowser *b = m_guide->browser();
        b->verticalScrollBar()->setValue(0);
        m_guide->follow(QUrl(QStringLiteral("#2-what-does-a-fine-tune-take")));
        QVERIFY(b->verticalScrollBar()->value() > 0);
        QCOMPARE(b->textCursor().block().text(), QStringLiteral("2. What does a fine-tune take?"));
        m_guide->follow(QUrl(QStringLiteral("cli.md")));
        QVERIFY(b->source().path().endsWith(QLatin1String("/cli.md")));
        QVERIFY(b->toPlainText().startsWith(QLatin1String("Command line")));
        QVERIFY(b->isBackwardAvailable());
        b->backward();
        QCOMPARE(b->source(), UserGuideWindow::home());
        m_guide->follow(QUrl(QStringLiteral("no-such-page.md"))); // stays
        QCOMPARE(b->source(), UserGuideWindow::home());
        QCOMPARE(UserGuideWindow::headingAnchor(QStringLiteral("1. Will my run fit?")),
                 QStringLiteral("1-will-my-run-fit"));
    }

    void oneWindow()
    {
        m_window->action(QStringLiteral("actionUserGuide"))->trigger();
        QCOMPARE(m_window->findChildren<UserGuideWindow *>().size(), 1);
    }
};

QTEST_MAIN(TestUserGuide)
#include "tst_user_guide.moc"
