// SPDX-License-Identifier: GPL-3.0-or-later
// escapeForTerminal: what a file may hold never reaches a terminal raw.
#include "base/terminal_text.h"
#include "io/load_error.h"

#include <QtTest>

using namespace membudget;

class TestTerminalText : public QObject
{
    Q_OBJECT
private slots:
    void controlsAndInvisiblesAreEscaped_data()
    {
        QTest::addColumn<QByteArray>("text");
        QTest::addColumn<QByteArray>("shown");
        QTest::newRow("OSC title")
            << QByteArray("\x1b]0;owned\x07") << QByteArray("\\x1B]0;owned\\x07");
        QTest::newRow("CSI as C1") << QByteArray("\xc2\x9b"
                                                 "2J")
                                   << QByteArray("\\u009B2J");
        QTest::newRow("NEL") << QByteArray("a\xc2\x85z") << QByteArray("a\\u0085z");
        QTest::newRow("RLO") << QByteArray("\xe2\x80\xae"
                                           "txt.exe")
                             << QByteArray("\\u202Etxt.exe");
        QTest::newRow("RLI") << QByteArray("\xe2\x81\xa7x") << QByteArray("\\u2067x");
        QTest::newRow("ZWSP") << QByteArray("la\xe2\x80\x8byers") << QByteArray("la\\u200Byers");
        QTest::newRow("BOM") << QByteArray("\xef\xbb\xbfkey") << QByteArray("\\uFEFFkey");
        QTest::newRow("LS") << QByteArray("a\xe2\x80\xa8z") << QByteArray("a\\u2028z");
        QTest::newRow("tag") << QByteArray("\xf3\xa0\x80\x81") << QByteArray("\\U000E0001");
        QTest::newRow("CR") << QByteArray("ok\rfake") << QByteArray("ok\\rfake");
        QTest::newRow("DEL") << QByteArray("\x7f") << QByteArray("\\x7F");
        QTest::newRow("bad UTF-8") << QByteArray("caf\xe9") << QByteArray("caf\\xE9");
        QTest::newRow("printable")
            << QByteArray("Qwen \xe9\x80\x9a\xe4\xb9\x89 caf\xc3\xa9 \xf0\x9f\x9a\x80")
            << QByteArray("Qwen \xe9\x80\x9a\xe4\xb9\x89 caf\xc3\xa9 \xf0\x9f\x9a\x80");
        QTest::newRow("lines kept") << QByteArray("a\n\tb") << QByteArray("a\n\tb");
    }
    void controlsAndInvisiblesAreEscaped()
    {
        QFETCH(QByteArray, text);
        QFETCH(QByteArray, shown);
        QCOMPARE(QByteArray::fromStdString(escapeForTerminal(text.toStdString())), shown);
    }

    void oneLineMessages()
    {
        QCOMPARE(escapeForTerminal("a\nb\tc", LineBreaks::Escape), std::string("a\\nb c"));
        QCOMPARE(escapeForTerminal(std::string(500, 'x'), LineBreaks::Escape, 10),
                 std::string(10, 'x') + "...");
        LoadError e;
        e.file = "evil\x1b[2J.yaml";
        e.line = 3;
        e.column = 4;
        e.message = "unknown key '\xe2\x80\xaelayers'\nsecond line";
        QCOMPARE(e.toString(),
                 std::string("evil\\x1B[2J.yaml:3:4: unknown key '\\u202Elayers'\\nsecond line"));
    }
};

QTEST_GUILESS_MAIN(TestTerminalText)
#include "tst_terminal_text.moc"
