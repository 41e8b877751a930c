// SPDX-License-Identifier: GPL-3.0-or-later
// The caching allocator's index of free blocks against a std::set holding the same entries: same
// order (size, then address), same best-fit answers, at the sizes of a training step (hundreds of
// entries, runs of 8) and of a model of thousands of layers (tens of thousands, longer runs).
#include "allocator/free_block_index.h"

#include <QtTest>

#include <random>
#include <set>
#include <utility>

using namespace membudget;

namespace {

using Key = std::pair<Bytes, Bytes>; // size, address

std::vector<Key> keysOf(const FreeBlockIndex &index)
{
    std::vector<FreeBlockIndex::Entry> entries;
    index.collect(entries);
    std::vector<Key> out;
    for (const FreeBlockIndex::Entry &e : entries)
        out.emplace_back(e.size, e.address);
    return out;
}

// The best fit by lowerBound(), walked with next(), as a key; {-1, -1} at the end.
Key bestFit(const FreeBlockIndex &index, Bytes size)
{
    const FreeBlockIndex::Position p = index.lowerBound(size);
    if (index.isEnd(p))
        return {-1, -1};
    return {index.at(p).size, index.at(p).address};
}

Key bestFit(const std::set<Key> &set, Bytes size)
{
    const auto it = set.lower_bound({size, std::numeric_limits<Bytes>::min()});
    return it == set.end() ? Key{-1, -1} : *it;
}

} // namespace

class TestFreeBlockIndex : public QObject
{
    Q_OBJECT

private slots:
    void matchesAnOrderedSet_data()
    {
        QTest::addColumn<int>("target");
        QTest::addColumn<int>("sizes");
        QTest::newRow("a step's few hundred blocks") << 300 << 40;
        QTest::newRow("many equal sizes") << 2000 << 3;
        QTest::newRow("thousands of layers") << 40000 << 5000;
    }

    // Random inserts and erases drift the count up to `target` and back down; after each change
    // the best fit for a random size agrees, and every so often the whole order does.
    void matchesAnOrderedSet()
    {
        QFETCH(int, target);
        QFETCH(int, sizes);
        std::mt19937_64 random(static_cast<std::uint64_t>(target) * 7919u + sizes);
        FreeBlockIndex index;
        std::set<Key> set;
        std::vector<Key> present;
        Bytes nextAddress = 0;
        const int steps = target * 4;
        for (int step = 0; step < steps; ++step) {
            const bool growing = step < steps / 2;
            const bool insert = present.empty()
                                || random() % 100 < static_cast<unsigned>(growing ? 70 : 30);
            if (insert) {
                const Key k{Bytes(512) * Bytes(1 + random() % static_cast<unsigned>(sizes)),
                            nextAddress += 4096};
                index.insert({k.first, k.second, step});
                set.insert(k);
                present.push_back(k);
            } else {
                const std::size_t at = random() % present.size();
                const Key k = present[at];
                present[at] = present.back();
                present.pop_back();
                if (random() % 2) {
                    QVERIFY(index.erase(k.first, k.second));
                } else {
                    // Through a position, as the allocator takes its best fit.
                    FreeBlockIndex::Position p = index.lowerBound(k.first);
                    while (!index.isEnd(p) && index.at(p).address != k.second)
                        p = index.next(p);
                    QVERIFY(!index.isEnd(p));
                    index.eraseAt(p);
                }
                set.erase(k);
                QVERIFY(!index.erase(k.first, k.second)); // gone
            }
            QCOMPARE(index.count(), set.size());
            const Bytes probe = Bytes(512) * Bytes(random() % static_cast<unsigned>(sizes + 2));
            QCOMPARE(bestFit(index, probe), bestFit(set, probe));
            if (!set.empty()) {
                const FreeBlockIndex::Entry &largest = index.at(index.last());
                QCOMPARE(Key(largest.size, largest.address), *set.rbegin());
            }
            if (step % 997 == 0)
                QCOMPARE(keysOf(index), std::vector<Key>(set.begin(), set.end()));
        }
        QCOMPARE(keysOf(index), std::vector<Key>(set.begin(), set.end()));
    }
};

QTEST_APPLESS_MAIN(TestFreeBlockIndex)
#include "tst_free_block_index.moc"
