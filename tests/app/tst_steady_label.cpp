// SPDX-License-Identifier: GPL-3.0-or-later
// SteadyLabel: a new text that needs no other size lays nothing out above the label; one that
// needs more lines, or a wider line, gets them; a hidden label hides its box.
#include "layout_requests.h"
#include "widgets/steady_label.h"

#include <QLabel>
#include <QPushButton>
#include <QTest>
#include <QVBoxLayout>

using namespace membudget;
using test::LayoutRequests;

namespace {

struct Window
{
    QWidget widget;
    QLabel *label = new QLabel;
    SteadyLabel *box = nullptr;
    LayoutRequests requests;

    explicit Window(bool wrap)
    {
        label->setWordWrap(wrap);
        label->setText(QStringLiteral("Peak 12.34 GiB allocated"));
        box = new SteadyLabel(label);
        auto *row = new QHBoxLayout;
        row->addWidget(box, 1);
        row->addWidget(new QPushButton(QStringLiteral("Open")));
        auto *layout = new QVBoxLayout(&widget);
        layout->addLayout(row);
        layout->addStretch(1);
        widget.resize(400, 300);
        widget.show();
        QVERIFY(QTest::qWaitForWindowExposed(&widget));
        settle();
        widget.installEventFilter(&requests);
    }
    // Requests posted while posted events are delivered wait for the next round.
    void settle()
    {
        for (int i = 0; i < 5; ++i)
            QCoreApplication::processEvents();
    }
};

} // namespace

class TestSteadyLabel : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void sameSizeLaysOutNothing_data();
    void sameSizeLaysOutNothing();
    void moreLinesGrowTheBox();
    void aWiderLineWidensTheBox();
    void aShorterLineShrinksTheBoxOncePaused();
    void aShorterTextSetWhileHiddenShrinksTheBox();
    void hidingTheLabelHidesTheBox();
    void aTextSetWhileHiddenShowsWhole_data();
    void aTextSetWhileHiddenShowsWhole();
    void findChildFindsTheLabel();
};

void TestSteadyLabel::sameSizeLaysOutNothing_data()
{
    QTest::addColumn<bool>("wrap");
    QTest::newRow("one line") << false;
    QTest::newRow("word-wrapped") << true;
}

void TestSteadyLabel::sameSizeLaysOutNothing()
{
    QFETCH(bool, wrap);
    Window w(wrap);
    const QRect before = w.box->geometry();
    for (const char *text : {"Peak 98.76 GiB allocated", "Peak 1.02 GiB allocated"}) {
        w.label->setText(QLatin1String(text));
        w.settle();
    }
    QCOMPARE(w.requests.count, 0);
    QCOMPARE(w.box->geometry(), before);
    QCOMPARE(w.label->geometry(), w.box->rect());
    // A plain label in the same place makes the window lay itself out at every text.
    QLabel plain(QStringLiteral("Peak 12.34 GiB"));
    w.widget.layout()->addWidget(&plain);
    w.settle();
    w.requests.count = 0;
    plain.setText(QStringLiteral("Peak 98.76 GiB"));
    w.settle();
    QCOMPARE(w.requests.count, 1);
}

void TestSteadyLabel::moreLinesGrowTheBox()
{
    Window w(true);
    const int oneLine = w.box->height();
    QString longer;
    for (int i = 0; i < 12; ++i)
        longer += QStringLiteral("allocations and frees ");
    w.label->setText(longer);
    w.settle();
    QVERIFY(w.requests.count >= 1);
    QVERIFY2(w.box->height() >= w.label->heightForWidth(w.box->width()),
             qPrintable(QStringLiteral("%1 < %2")
                            .arg(w.box->height())
                            .arg(w.label->heightForWidth(w.box->width()))));
    QVERIFY(w.box->height() > oneLine);
    w.label->setText(QStringLiteral("Peak 1.02 GiB"));
    w.settle();
    QCOMPARE(w.box->height(), oneLine);
    // A narrower window: the text wraps to more lines, and the box follows.
    w.label->setText(longer);
    w.settle();
    const int wide = w.box->height();
    w.widget.resize(250, 300);
    w.settle();
    QVERIFY(w.box->height() > wide);
    QVERIFY(w.box->height() >= w.label->heightForWidth(w.box->width()));
}

void TestSteadyLabel::aWiderLineWidensTheBox()
{
    Window w(false);
    const int width = w.box->width();
    w.label->setText(QStringLiteral("Peak 12.34 GiB allocated, 80.00 GiB reserved of 79.25 GiB"));
    w.settle();
    QVERIFY(w.requests.count >= 1);
    QVERIFY(w.box->width() >= w.label->sizeHint().width());
    QVERIFY(w.box->width() > width);
}

// A line that got shorter keeps its box while texts keep coming (no jitter during a drag), and
// gives the room back once they pause.
void TestSteadyLabel::aShorterLineShrinksTheBoxOncePaused()
{
    Window w(false);
    const auto minimumWidth = [&w] { return w.widget.layout()->minimumSize().width(); };
    const int narrow = minimumWidth();
    w.label->setText(QStringLiteral("Cannot estimate: the model preset no-such-model is unknown"));
    w.settle();
    const int wide = minimumWidth();
    QVERIFY(wide > narrow);
    w.requests.count = 0;
    w.label->setText(QStringLiteral("Peak 12.34 GiB allocated"));
    w.settle();
    QCOMPARE(minimumWidth(), wide);
    QCOMPARE(w.requests.count, 0);
    QTRY_COMPARE(minimumWidth(), narrow);
}

// A word-wrapped text that got shorter while its tab was hidden: shown, the box is as tall as it.
void TestSteadyLabel::aShorterTextSetWhileHiddenShrinksTheBox()
{
    Window w(true);
    w.label->setText(QStringLiteral("allocations and frees ").repeated(12));
    w.settle();
    const int tall = w.box->height();
    w.widget.hide();
    w.label->setText(QStringLiteral("Peak 1.02 GiB"));
    w.widget.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w.widget));
    w.settle();
    QVERIFY(w.box->height() < tall);
}

void TestSteadyLabel::hidingTheLabelHidesTheBox()
{
    Window w(true);
    w.label->hide();
    w.settle();
    QVERIFY(w.box->isHidden());
    w.label->show();
    w.settle();
    QVERIFY(!w.box->isHidden());
}

void TestSteadyLabel::aTextSetWhileHiddenShowsWhole_data()
{
    QTest::addColumn<bool>("wrap");
    QTest::newRow("one line") << false;
    QTest::newRow("word-wrapped") << true;
}

// A label's text set while its window is hidden (the app sets its first texts before it shows)
// posts no request: shown, the box still fits the text.
void TestSteadyLabel::aTextSetWhileHiddenShowsWhole()
{
    QFETCH(bool, wrap);
    Window w(wrap);
    w.widget.hide();
    QString longer = QStringLiteral("Peak 52.73 GiB per GPU (backward) · does not fit 1 GPU(s)");
    if (wrap)
        longer = longer.repeated(4);
    w.label->setText(longer);
    w.widget.show();
    QVERIFY(QTest::qWaitForWindowExposed(&w.widget));
    w.settle();
    if (wrap)
        QVERIFY(w.box->height() >= w.label->heightForWidth(w.box->width()));
    else
        QVERIFY(w.box->width() >= w.label->sizeHint().width());
}

void TestSteadyLabel::findChildFindsTheLabel()
{
    Window w(false);
    w.label->setObjectName(QStringLiteral("peakLabel"));
    QCOMPARE(w.widget.findChild<QLabel *>(QStringLiteral("peakLabel")), w.label);
}

QTEST_MAIN(TestSteadyLabel)
#include "tst_steady_label.moc"
