// SPDX-License-Identifier: GPL-3.0-or-later
#include "dialogs/user_guide_window.h"

#include <QAbstractTextDocumentLayout>
#include <QDesktopServices>
#include <QDialogButtonBox>
#include <QFile>
#include <QGuiApplication>
#include <QPushButton>
#include <QScreen>
#include <QScrollBar>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTimer>
#include <QVBoxLayout>

#include <algorithm>

namespace membudget {

UserGuideWindow::UserGuideWindow(QWidget *parent)
    : QDialog(parent)
{
    setObjectName(QStringLiteral("userGuide"));
    setWindowTitle(tr("MemBudget User Guide"));
    setWindowFlag(Qt::WindowMaximizeButtonHint);
    auto *layout = new QVBoxLayout(this);
    m_browser = new QTextBrowser;
    m_browser->setObjectName(QStringLiteral("userGuideBrowser"));
    m_browser->setOpenLinks(false); // follow() decides: pages, headings, web
    layout->addWidget(m_browser);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    m_back = buttons->addButton(tr("&Back"), QDialogButtonBox::ActionRole);
    m_back->setEnabled(false);
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::close);
    connect(m_back, &QPushButton::clicked, m_browser, &QTextBrowser::backward);
    connect(m_browser, &QTextBrowser::backwardAvailable, m_back, &QPushButton::setEnabled);
    connect(m_browser, &QTextBrowser::anchorClicked, this, &UserGuideWindow::follow);
    connect(m_browser, &QTextBrowser::sourceChanged, this, &UserGuideWindow::fitImages);

    const QRect screen
        = (parent ? parent->screen() : QGuiApplication::primaryScreen())->availableGeometry();
    resize(std::min(fontMetrics().horizontalAdvance(QLatin1Char('m')) * 80, screen.width() * 9 / 10),
           screen.height() * 85 / 100);
    m_browser->setSource(home(), QTextDocument::MarkdownResource);
}

void UserGuideWindow::resizeEvent(QResizeEvent *event)
{
    QDialog::resizeEvent(event);
    // After the layout has given the browser its new width.
    QTimer::singleShot(0, this, &UserGuideWindow::fitImages);
}

void UserGuideWindow::fitImages()
{
    QTextDocument *doc = m_browser->document();
    const double width = std::max(200, m_browser->viewport()->width() - 32);
    for (QTextBlock b = doc->begin(); b.isValid(); b = b.next()) {
        for (auto it = b.begin(); !it.atEnd(); ++it) {
            const QTextFragment fragment = it.fragment();
            QTextImageFormat image = fragment.charFormat().toImageFormat();
            if (!image.isValid())
                continue;
            const QImage picture = doc->resource(QTextDocument::ImageResource,
                                                 m_browser->source().resolved(QUrl(image.name())))
                                       .value<QImage>();
            if (picture.isNull())
                continue;
            const double shown = std::min<double>(picture.width(), width);
            image.setWidth(shown);
            image.setHeight(shown * picture.height() / picture.width());
            QTextCursor cursor(doc);
            cursor.setPosition(fragment.position());
            cursor.setPosition(fragment.position() + fragment.length(), QTextCursor::KeepAnchor);
            cursor.setCharFormat(image);
        }
    }
}

QUrl UserGuideWindow::home()
{
    return QUrl(QStringLiteral("qrc:/membudget/docs/user-guide.md"));
}

QString UserGuideWindow::headingAnchor(const QString &heading)
{
    QString anchor;
    for (QChar c : heading.toLower()) {
        if (c.isLetterOrNumber() || c == QLatin1Char('-') || c == QLatin1Char('_'))
            anchor += c;
        else if (c == QLatin1Char(' '))
            anchor += QLatin1Char('-');
    }
    return anchor;
}

bool UserGuideWindow::scrollToHeading(const QString &anchor)
{
    QTextDocument *doc = m_browser->document();
    for (QTextBlock b = doc->begin(); b.isValid(); b = b.next()) {
        if (b.blockFormat().headingLevel() == 0 || headingAnchor(b.text()) != anchor)
            continue;
        m_browser->setTextCursor(QTextCursor(b));
        const QRectF rect = doc->documentLayout()->blockBoundingRect(b);
        m_browser->verticalScrollBar()->setValue(static_cast<int>(rect.top()));
        return true;
    }
    return false;
}

void UserGuideWindow::follow(const QUrl &link)
{
    const QString scheme = link.scheme();
    if (scheme == QLatin1String("http") || scheme == QLatin1String("https")
        || scheme == QLatin1String("mailto")) {
        QDesktopServices::openUrl(link);
        return;
    }
    const QUrl current = m_browser->source();
    QUrl target = current.resolved(link);
    const QString fragment = target.fragment();
    target.setFragment(QString());
    QUrl here = current;
    here.setFragment(QString());
    if (target != here) {
        if (!QFile::exists(QLatin1Char(':') + target.path()))
            return; // not a page of the guide's set: nothing to open
        m_browser->setSource(target, QTextDocument::MarkdownResource);
    }
    if (!fragment.isEmpty())
        scrollToHeading(fragment);
}

} // namespace membudget
