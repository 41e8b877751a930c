// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Help > User Guide: docs/user-guide.md rendered (QTextBrowser's Markdown), from the copy compiled
// into the program with the other docs pages and the guide's images, so that it works wherever the
// program runs. Links work: headings (#anchors, GitHub's spelling), the other docs pages, and web
// addresses (opened in the browser); Back returns.

#include <QDialog>
#include <QUrl>

class QTextBrowser;
class QPushButton;

namespace membudget {

class UserGuideWindow : public QDialog
{
    Q_OBJECT
public:
    explicit UserGuideWindow(QWidget *parent = nullptr);

    QTextBrowser *browser() const { return m_browser; }
    // Follows a link as a click would: another page, a heading of this one, or a web address.
    void follow(const QUrl &link);
    // Scrolls to the heading whose GitHub-style anchor is `anchor`; false when there is none.
    bool scrollToHeading(const QString &anchor);
    // "2. What does a fine-tune take?" -> "2-what-does-a-fine-tune-take" (GitHub's heading ids).
    static QString headingAnchor(const QString &heading);

    static QUrl home(); // qrc:/membudget/docs/user-guide.md

protected:
    void resizeEvent(QResizeEvent *event) override;

private:
    // Screenshots are wider than the window: each image is scaled down to the text width.
    void fitImages();

    QTextBrowser *m_browser;
    QPushButton *m_back;
};

} // namespace membudget
