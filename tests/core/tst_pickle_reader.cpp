// SPDX-License-Identifier: GPL-3.0-or-later
// The restricted pickle reader: every opcode it accepts decodes as Python's pickle would, every
// other one is refused with its name and offset, and malformed input fails with one clear error at
// the right byte. Hand-assembled pickles here are the reader's test cases, not snapshots; the real
// snapshots are read by tst_memory_snapshot.
#include "snapshot/pickle_reader.h"

#include <QtTest>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>

using namespace membudget::pickle;

namespace {

// Assembles pickle bytes: opcodes and their little-endian arguments.
class Bytes
{
public:
    Bytes() { m_s = std::string("\x80\x04", 2); } // PROTO 4
    Bytes &op(unsigned char c)
    {
        m_s.push_back(static_cast<char>(c));
        return *this;
    }
    Bytes &le(std::uint64_t v, int n)
    {
        for (int i = 0; i < n; ++i)
            m_s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
        return *this;
    }
    Bytes &raw(const std::string &s)
    {
        m_s += s;
        return *this;
    }
    Bytes &str(const std::string &s) { return op(0x8C).le(s.size(), 1).raw(s); }
    Bytes &int1(unsigned v) { return op('K').le(v, 1); }
    Bytes &stop() { return op('.'); }
    std::string bytes() const { return m_s; }

private:
    std::string m_s;
};

std::optional<Document> parse(const Bytes &b, ReadError &error, const Limits &limits = {})
{
    return Document::parse(b.bytes(), error, limits);
}

} // namespace

class TestPickleReader : public QObject
{
    Q_OBJECT

private slots:
    void integers_data()
    {
        QTest::addColumn<QByteArray>("encoded"); // opcode and argument after PROTO
        QTest::addColumn<qint64>("value");
        const auto row = [](const char *name, std::string enc, std::int64_t v) {
            QTest::newRow(name) << QByteArray(enc.data(), static_cast<int>(enc.size()))
                                << static_cast<qint64>(v);
        };
        row("BININT1 255", std::string("K\xFF", 2), 255);
        row("BININT2 65535", std::string("M\xFF\xFF", 3), 65535);
        row("BININT -1", std::string("J\xFF\xFF\xFF\xFF", 5), -1);
        row("BININT min", std::string("J\x00\x00\x00\x80", 5), INT32_MIN);
        row("LONG1 empty is 0", std::string("\x8A\x00", 2), 0);
        row("LONG1 -129", std::string("\x8A\x02\x7F\xFF", 4), -129);
        row("LONG1 2^40", std::string("\x8A\x06\x00\x00\x00\x00\x00\x01", 8), std::int64_t{1} << 40);
        // An address like the snapshots' (0x7F2A_0000_0000), needing 6 bytes.
        row("LONG1 address", std::string("\x8A\x06\x00\x00\x00\x00\x2A\x7F", 8), 0x7F2A00000000);
        row("LONG1 2^60 (past the small range)",
            std::string("\x8A\x08\x00\x00\x00\x00\x00\x00\x00\x10", 10),
            std::int64_t{1} << 60);
        row("LONG1 int64 max",
            std::string("\x8A\x08\xFF\xFF\xFF\xFF\xFF\xFF\xFF\x7F", 10),
            INT64_MAX);
        row("LONG1 int64 min",
            std::string("\x8A\x08\x00\x00\x00\x00\x00\x00\x00\x80", 10),
            INT64_MIN);
        row("LONG1 9 bytes, sign extension only",
            std::string("\x8A\x09\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFF", 11),
            -1);
        row("LONG4 300", std::string("\x8B\x02\x00\x00\x00\x2C\x01", 7), 300);
    }
    void integers()
    {
        QFETCH(QByteArray, encoded);
        QFETCH(qint64, value);
        ReadError error;
        const auto doc = parse(Bytes().raw(encoded.toStdString()).stop(), error);
        QVERIFY2(doc, error.message.c_str());
        QCOMPARE(doc->root().kind(), Kind::Int);
        QCOMPARE(*doc->integer(doc->root()), value);
    }

    void scalars()
    {
        ReadError error;
        // (None, True, False, 1.5, "héllo", "X"*300 via BINUNICODE, "" via BINUNICODE8)
        Bytes b;
        b.op('(').op('N').op(0x88).op(0x89);
        b.op('G').raw(std::string("\x3F\xF8\x00\x00\x00\x00\x00\x00", 8)); // 1.5, big-endian
        b.str("h\xC3\xA9llo");
        b.op('X').le(300, 4).raw(std::string(300, 'X'));
        b.op(0x8D).le(0, 8);
        b.op('t').stop();
        const auto doc = parse(b, error);
        QVERIFY2(doc, error.message.c_str());
        const auto items = doc->items(doc->root());
        QCOMPARE(doc->root().kind(), Kind::Tuple);
        QCOMPARE(items.size(), std::size_t{7});
        QVERIFY(items[0].isNone());
        QCOMPARE(*doc->boolean(items[1]), true);
        QCOMPARE(*doc->boolean(items[2]), false);
        QCOMPARE(*doc->number(items[3]), 1.5);
        QCOMPARE(std::string(*doc->string(items[4])), std::string("h\xC3\xA9llo"));
        QCOMPARE(doc->string(items[5])->size(), std::size_t{300});
        QCOMPARE(doc->string(items[6])->size(), std::size_t{0});
        QVERIFY(!doc->integer(items[4]));
        QVERIFY(!doc->string(items[3]));
    }

    // A dict built from pieces: SETITEM, then SETITEMS with a key repeated (the last value wins),
    // a tuple, and a list the memo shares between the dict and a later APPEND.
    void containersAndMemo()
    {
        Bytes b;
        b.op('}').op(0x94);                          // dict, memo 0
        b.str("a").op(']').op(0x94);                 // key "a", list memo 1
        b.op('(').int1(1).int1(2).op('e');           // list += [1, 2]
        b.op('s');                                   // dict["a"] = list
        b.op('(').str("b").op('h').le(1, 1);         // "b": memo 1, the same list
        b.str("t").int1(7).int1(8).int1(9).op(0x87); // "t": (7, 8, 9)
        b.str("e").op(')');                          // "e": ()
        b.str("a").op('N');                          // "a" again: None
        b.op('u');                                   // SETITEMS
        b.op('h').le(1, 1).int1(3).op('a');          // memo 1 .append(3)
        b.op(0x86).stop();                           // (dict, list)
        ReadError error;
        const auto doc = parse(b, error);
        QVERIFY2(doc, error.message.c_str());
        const auto pair = doc->items(doc->root());
        QCOMPARE(pair.size(), std::size_t{2});
        const Value dict = pair[0];
        QCOMPARE(dict.kind(), Kind::Dict);
        QVERIFY(doc->find(dict, "a")->isNone());
        const Value shared = *doc->find(dict, "b");
        QCOMPARE(doc->containerIndex(shared), doc->containerIndex(pair[1]));
        const auto list = doc->items(shared);
        QCOMPARE(list.size(), std::size_t{3});
        QCOMPARE(*doc->integer(list[2]), std::int64_t{3});
        const auto t = doc->items(*doc->find(dict, "t"));
        QCOMPARE(t.size(), std::size_t{3});
        QCOMPARE(*doc->integer(t[1]), std::int64_t{8});
        QCOMPARE(doc->items(*doc->find(dict, "e")).size(), std::size_t{0});
        QCOMPARE(doc->offsetOf(dict), std::uint64_t{2});
    }

    void dictLookupKeepsTheLastValue()
    {
        Bytes b;
        b.op('}').op('(').str("k").int1(1).str("x").int1(5).str("k").int1(2).op('u').stop();
        ReadError error;
        const auto doc = parse(b, error);
        QVERIFY2(doc, error.message.c_str());
        QCOMPARE(*doc->integer(*doc->find(doc->root(), "k")), std::int64_t{2});
        QCOMPARE(*doc->integer(*doc->find(doc->root(), "x")), std::int64_t{5});
        QVERIFY(!doc->find(doc->root(), "missing"));
    }

    // Items added to a list in two batches with another list built in between lie apart while
    // parsing; the list's items end up together and in order.
    void interleavedAppendsStayInOrder()
    {
        Bytes b;
        b.op(']').op(0x94).op('(').int1(1).int1(2).op('e'); // A = [1, 2], memo 0
        b.op(']').op('(').int1(9).op('e');                  // B = [9]
        b.op('h').le(0, 1).op('(').int1(3).int1(4).op('e'); // A += [3, 4]
        b.int1(5).op('a');                                  // A.append(5)
        b.op(0x87).stop();                                  // (A, B, A)
        ReadError error;
        const auto doc = parse(b, error);
        QVERIFY2(doc, error.message.c_str());
        const auto t = doc->items(doc->root());
        QCOMPARE(t.size(), std::size_t{3});
        const auto a = doc->items(t[0]);
        QCOMPARE(a.size(), std::size_t{5});
        for (std::size_t i = 0; i < a.size(); ++i)
            QCOMPARE(*doc->integer(a[i]), static_cast<std::int64_t>(i + 1));
        QCOMPARE(doc->items(t[1]).size(), std::size_t{1});
        QCOMPARE(*doc->integer(doc->items(t[1])[0]), std::int64_t{9});
    }

    // Deep structures are stored flat: a list nested 200,000 deep parses without recursion, and a
    // memo "bomb" (each tuple holding the previous one twice, 2^60 leaves) costs only its bytes.
    void deepAndSharedStructuresStayCheap()
    {
        Bytes nest;
        for (int i = 0; i < 200000; ++i)
            nest.op(']');
        for (int i = 0; i < 199999; ++i)
            nest.op('a');
        nest.stop();
        ReadError error;
        const auto doc = parse(nest, error);
        QVERIFY2(doc, error.message.c_str());
        QCOMPARE(doc->containerCount(), std::size_t{200000});
        QCOMPARE(doc->items(doc->root()).size(), std::size_t{1});

        Bytes bomb;
        bomb.int1(1).op(0x85).op(0x94); // (1,), memo 0
        for (unsigned i = 0; i < 60; ++i)
            bomb.op('h').le(i, 1).op(0x86).op(0x94); // (prev, prev)
        bomb.stop();
        const auto b = parse(bomb, error);
        QVERIFY2(b, error.message.c_str());
        QCOMPARE(b->containerCount(), std::size_t{61});
    }

    void refusedOpcodes_data()
    {
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<QString>("name");
        const auto row = [](const char *name, std::string body) {
            QTest::newRow(name) << QByteArray(body.data(), static_cast<int>(body.size()))
                                << QString::fromLatin1(name);
        };
        row("GLOBAL", "cos\nsystem\n");
        row("STACK_GLOBAL", "\x93");
        row("REDUCE", "R");
        row("BUILD", "b");
        row("INST", "ios\nsystem\n");
        row("OBJ", "o");
        row("NEWOBJ", "\x81");
        row("NEWOBJ_EX", "\x92");
        row("PERSID", "Pid\n");
        row("BINPERSID", "Q");
        row("EXT1", "\x82\x01");
        row("EXT2", "\x83\x01\x00");
        row("EXT4", std::string("\x84\x01\x00\x00\x00", 5));
        row("SHORT_BINBYTES", "C\x01x");
        row("BYTEARRAY8", std::string("\x96\x00\x00\x00\x00\x00\x00\x00\x00", 9));
        row("EMPTY_SET", "\x8F");
        row("DICT", "d");
        row("GET", "g0\n");
        row("DUP", "2");
        row("STRING", "S'x'\n");
        row("INT", "I1\n");
    }
    void refusedOpcodes()
    {
        QFETCH(QByteArray, body);
        QFETCH(QString, name);
        ReadError error;
        QVERIFY(!parse(Bytes().raw(body.toStdString()).stop(), error));
        QCOMPARE(error.offset, std::uint64_t{2}); // right after PROTO 4
        QVERIFY2(error.message.rfind("opcode " + name.toStdString() + " (0x", 0) == 0,
                 error.message.c_str());
        QVERIFY2(error.message.find("refused") != std::string::npos, error.message.c_str());
    }

    void malformed_data()
    {
        QTest::addColumn<QByteArray>("pickle"); // whole file
        QTest::addColumn<qint64>("offset");
        QTest::addColumn<QString>("message"); // a part of the message
        const auto row = [](const char *name, std::string p, std::int64_t at, const char *m) {
            QTest::newRow(name) << QByteArray(p.data(), static_cast<int>(p.size()))
                                << static_cast<qint64>(at) << QString::fromUtf8(m);
        };
        const std::string p4("\x80\x04", 2);
        row("empty", "", 0, "an empty file");
        row("no PROTO", "}.", 0, "not a pickle of protocol 2 or later (first byte 0x7D)");
        row("zip", "PK\x03\x04rest", 0, "a zip archive");
        row("protocol 6", "\x80\x06}.", 0, "protocol 6 is not one this reader knows");
        row("PROTO twice", p4 + "\x80\x04}.", 2, "only allowed at the start");
        row("truncated PROTO", "\x80", 0, "the file ends inside PROTO");
        row("truncated BININT", p4 + "J\x01", 2, "needs 4 more bytes, 1 is left");
        row("truncated LONG1", p4 + "\x8A\x05\x01", 2, "the file ends inside LONG1");
        row("truncated string",
            p4
                + "\x8C\x05"
                  "ab",
            2,
            "the file ends inside SHORT_BINUNICODE");
        row("truncated BINUNICODE8 length", p4 + "\x8D\x01\x00", 2, "ends inside BINUNICODE8");
        row("no STOP", p4 + "}", 3, "ends before the pickle's STOP");
        row("FRAME past the end",
            p4 + std::string("\x95\x10\x00\x00\x00\x00\x00\x00\x00}.", 11),
            2,
            "announces 16 bytes but only 2 are left");
        row("data after STOP", p4 + "}.x", 4, "1 bytes after the pickle's STOP");
        row("empty stack at STOP", p4 + ".", 2, "ends with 0 values");
        row("two values at STOP", p4 + "NN.", 4, "ends with 2 values");
        row("open MARK at STOP", p4 + "N(.", 4, "1 MARK left open");
        row("invalid UTF-8", p4 + "\x8C\x03" + "a\xFF" + "b.", 5, "not valid UTF-8 (byte 0xFF)");
        row("truncated UTF-8", p4 + "\x8C\x02" + "a\xC3" + ".", 5, "not valid UTF-8 (byte 0xC3)");
        row("surrogate", p4 + "\x8C\x03\xED\xB2\x80.", 4, "not valid UTF-8 (byte 0xED)");
        row("memo get empty",
            p4 + std::string("h\x00.", 3),
            2,
            "memo index 0 out of range (0 values memoized)");
        row("memo get past", p4 + "N\x94h\x01.", 4, "memo index 1 out of range (1 value");
        row("memo put skips", p4 + "Nq\x05.", 3, "memo index 5 skips ahead of the 0 values");
        row("memoize nothing", p4 + "\x94N.", 2, "nothing on the stack to memoize");
        row("memoize below mark", p4 + "N(\x94.", 4, "nothing on the stack to memoize");
        row("APPENDS without MARK", p4 + "]Ne.", 4, "no MARK before it");
        row("SETITEMS without MARK", p4 + "}NNu.", 5, "no MARK before it");
        row("TUPLE without MARK", p4 + "Nt.", 3, "no MARK before it");
        row("APPENDS with nothing below", p4 + "(Ne.", 4, "needs a list below its MARK");
        row("APPEND underflow", p4 + "]a.", 3, "APPEND: needs 2 values on the stack, 1 is there");
        row("APPEND across a MARK", p4 + "](Na.", 5, "1 is there above the last MARK");
        row("SETITEM underflow", p4 + "}Ns.", 4, "SETITEM: needs 3 values");
        row("TUPLE3 underflow", p4 + "NN\x87.", 4, "TUPLE3: needs 3 values");
        row("APPEND to a tuple", p4 + ")Na.", 4, "needs a list below its items, found a tuple");
        row("APPEND to a dict", p4 + "}Na.", 4, "found a dict");
        row("SETITEM to a list", p4 + "]NNs.", 5, "needs a dict below its items, found a list");
        row("odd SETITEMS", p4 + "}(NNNu.", 7, "a key without a value (3 items)");
        row("list as a key", p4 + "}]Ns.", 5, "a dict key that is a list");
        row("None as a key", p4 + "}NNs.", 5, "a dict key that is None");
        row("LONG1 past 64 bits",
            p4 + std::string("\x8A\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01.", 12),
            2,
            "an integer wider than 64 bits (9 bytes)");
        row("LONG1 2^63 needs 9 bytes",
            p4 + std::string("\x8A\x09\x00\x00\x00\x00\x00\x00\x00\x80\x00.", 12),
            2,
            "wider than 64 bits");
        row("LONG4 negative length", p4 + "\x8B\xFF\xFF\xFF\xFF.", 2, "negative length -1");
        row("unknown opcode", p4 + "\xFE.", 2, "unknown pickle opcode 0xFE");
    }
    void malformed()
    {
        QFETCH(QByteArray, pickle);
        QFETCH(qint64, offset);
        QFETCH(QString, message);
        ReadError error;
        QVERIFY(!Document::parse(pickle.toStdString(), error));
        QVERIFY2(error.message.find(message.toStdString()) != std::string::npos,
                 error.message.c_str());
        QCOMPARE(static_cast<qint64>(error.offset), offset);
        QVERIFY(error.message.find('\n') == std::string::npos);
    }

    void limits()
    {
        ReadError error;
        Limits small;
        small.max_nesting = 3;
        QVERIFY(parse(Bytes().op('(').op('(').op('(').op('t').op('t').op('t').stop(), error, small));
        QVERIFY(!parse(Bytes().op('(').op('(').op('(').op('(').stop(), error, small));
        QCOMPARE(error.offset, std::uint64_t{5});
        QVERIFY2(error.message.find("nested deeper than 3 levels") != std::string::npos,
                 error.message.c_str());

        small = Limits{};
        small.max_string_bytes = 4;
        QVERIFY(parse(Bytes().str("abcd").stop(), error, small));
        QVERIFY(!parse(Bytes().str("abcde").stop(), error, small));
        QVERIFY2(error.message.find("a string of 5 bytes; at most 4") != std::string::npos,
                 error.message.c_str());

        small = Limits{};
        small.max_containers = 2;
        QVERIFY(parse(Bytes().op(']').op(']').op('a').stop(), error, small));
        QVERIFY(!parse(Bytes().op(']').op(']').op(']').stop(), error, small));
        QCOMPARE(error.offset, std::uint64_t{4});
        QVERIFY2(error.message.find("more than 2 lists, tuples and dicts") != std::string::npos,
                 error.message.c_str());

        small = Limits{};
        small.max_values = 3;
        QVERIFY(parse(Bytes().op('N').op('N').op(0x86).stop(), error, small));
        QVERIFY(!parse(Bytes().op('N').op('N').op('N').op('N').stop(), error, small));
        QCOMPARE(error.offset, std::uint64_t{5});
        QVERIFY2(error.message.find("more than 3 values") != std::string::npos,
                 error.message.c_str());
    }

    // The 9 real snapshots in tests/data/snapshots parse; they hold only the opcodes above.
    void realSnapshotsParse()
    {
        const QDir dir(QStringLiteral(MEMBUDGET_SOURCE_DIR "/tests/data/snapshots"));
        const QStringList files = dir.entryList({QStringLiteral("*.pickle")}, QDir::Files);
        QVERIFY(files.size() >= 9);
        for (const QString &name : files) {
            QFile f(dir.filePath(name));
            QVERIFY(f.open(QIODevice::ReadOnly));
            const QByteArray data = f.readAll();
            ReadError error;
            const auto doc = Document::parse(data.toStdString(), error);
            QVERIFY2(doc,
                     qPrintable(name + QStringLiteral(": ")
                                + QString::fromStdString(error.message)));
            QCOMPARE(doc->root().kind(), Kind::Dict);
            QVERIFY(doc->find(doc->root(), "segments"));
        }
    }
};

QTEST_APPLESS_MAIN(TestPickleReader)
#include "tst_pickle_reader.moc"
