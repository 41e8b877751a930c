// SPDX-License-Identifier: GPL-3.0-or-later
// Byte sizes and counts print and parse the same whatever the C locale: the desktop app runs with
// the user's (Qt calls setlocale), the command line with "C".
#include "base/byte_format.h"

#include <QtTest>

#include <clocale>

using namespace membudget;

class TestByteFormat : public QObject
{
    Q_OBJECT
private:
    // Runs `check` under each locale that is installed (de_DE writes 16,23; tr_TR lowers 'I' to
    // a dotless i), then back in "C".
    template<typename Check>
    static int underLocales(Check check)
    {
        int ran = 0;
        for (const char *name : {"C", "de_DE.UTF-8", "tr_TR.UTF-8", "tr_TR.ISO-8859-9"}) {
            if (!std::setlocale(LC_ALL, name))
                continue;
            check();
            ++ran;
        }
        std::setlocale(LC_ALL, "C");
        return ran;
    }

private slots:
    void formatsAreLocaleIndependent()
    {
        const int ran = underLocales([] {
            QCOMPARE(formatBytes(16'230'000'000), std::string("16.23 GB"));
            QCOMPARE(formatBytes(3 * kGiB / 2, ByteUnit::GiB, 1), std::string("1.5 GiB"));
            QCOMPARE(formatCount(4096), std::string("4,096"));
            QCOMPARE(formatFixed(2.5, 2), std::string("2.50"));
        });
        if (ran < 2)
            QSKIP("de_DE.UTF-8 and tr_TR.UTF-8 are not installed: only the C locale was checked");
    }

    void unitsReadInAnyCase()
    {
        const int ran = underLocales([] {
            for (const char *text : {"1GIB", "1gib", "1GiB", " 1 GIB ", "1073741824"}) {
                Bytes b = 0;
                QVERIFY2(parseByteSize(text, b), text);
                QCOMPARE(b, kGiB);
            }
            Bytes b = 0;
            QVERIFY(!parseByteSize("1 \xc4\xb0GB", b)); // a dotted capital I is not a unit
        });
        if (ran < 2)
            QSKIP("tr_TR.UTF-8 is not installed: only the C locale was checked");
    }

    // No "-0 B", no "-too large", no finite figure past what int64 holds.
    void signsAndSaturation()
    {
        QCOMPARE(formatBytes(0), std::string("0 B"));
        QCOMPARE(formatBytes(-1'500'000'000), std::string("-1.50 GB"));
        QCOMPARE(formatBytes(-1), std::string("-1 B"));
        QCOMPARE(formatFixed(-0.001, 2), std::string("0.00"));
        QCOMPARE(formatBytes(kBytesMax), std::string("too large"));
        QCOMPARE(formatBytes(-kBytesMax), std::string("too large"));
        QCOMPARE(formatBytes(1'660'206'966'633'859'584), std::string("1.66 EB"));
        QCOMPARE(formatBytes(2 * 1024 * kGiB, ByteUnit::GiB), std::string("2.00 TiB"));
        QCOMPARE(formatByteChange(80 * kGB, 80 * kGB), std::string("0 B"));
        QCOMPARE(formatByteChange(80 * kGB, 48 * kGB), std::string("-32.00 GB"));
        QCOMPARE(formatByteChange(48 * kGB, 80 * kGB, ByteUnit::GB, 1), std::string("+32.0 GB"));
        QCOMPARE(formatByteChange(kBytesMax, 48 * kGB), std::string("n/a"));
        QCOMPARE(formatCount(-0.4), std::string("0"));
        QCOMPARE(toCount(1.2e20), kBytesMax);
        QCOMPARE(toCount(-5), std::int64_t(0));
    }
};

QTEST_GUILESS_MAIN(TestByteFormat)
#include "tst_byte_format.moc"
