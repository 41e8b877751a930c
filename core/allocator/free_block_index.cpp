// SPDX-License-Identifier: GPL-3.0-or-later
#include "allocator/free_block_index.h"

#include <algorithm>
#include <cmath>

namespace membudget {

namespace {

bool before(const FreeBlockIndex::Entry &a, Bytes size, Bytes address)
{
    return a.size < size || (a.size == size && a.address < address);
}

std::vector<FreeBlockIndex::Entry>::iterator place(std::vector<FreeBlockIndex::Entry> &run,
                                                   Bytes size,
                                                   Bytes address)
{
    return std::lower_bound(run.begin(),
                            run.end(),
                            FreeBlockIndex::Entry{size, address, -1},
                            [](const FreeBlockIndex::Entry &a, const FreeBlockIndex::Entry &b) {
                                return before(a, b.size, b.address);
                            });
}

} // namespace

std::size_t FreeBlockIndex::runFor(Bytes size, Bytes address) const
{
    const auto end = m_tails.begin() + static_cast<std::ptrdiff_t>(m_runCount);
    const auto at = std::partition_point(m_tails.begin(), end, [&](const Entry &tail) {
        return before(tail, size, address);
    });
    return static_cast<std::size_t>(at - m_tails.begin());
}

std::size_t FreeBlockIndex::runLength() const
{
    if (m_count < 4 * kRun * kRun) // sqrt(n) / 2 <= kRun: a training step's few hundred blocks
        return kRun;
    return static_cast<std::size_t>(std::sqrt(static_cast<double>(m_count))) / 2;
}

void FreeBlockIndex::insert(const Entry &entry)
{
    std::size_t r = std::min(runFor(entry.size, entry.address), m_runCount);
    if (m_runCount == 0) {
        if (m_runs.empty()) {
            m_runs.emplace_back();
            m_tails.emplace_back();
        }
        m_runCount = 1;
    } else if (r == m_runCount) {
        r = m_runCount - 1; // past every entry: append to the last run
    }
    std::vector<Entry> &run = m_runs[r];
    run.insert(place(run, entry.size, entry.address), entry);
    ++m_count;
    const std::size_t length = runLength();
    if (run.size() < 2 * length) {
        noteTail(r);
        return;
    }
    // Split a full run in two; the second half goes into a kept (or new) vector after it.
    if (m_runCount == m_runs.size()) {
        m_runs.emplace_back();
        m_tails.emplace_back();
    }
    const auto from = static_cast<std::ptrdiff_t>(r) + 1;
    const auto spare = static_cast<std::ptrdiff_t>(m_runCount);
    std::rotate(m_runs.begin() + from, m_runs.begin() + spare, m_runs.begin() + spare + 1);
    std::rotate(m_tails.begin() + from, m_tails.begin() + spare, m_tails.begin() + spare + 1);
    ++m_runCount;
    std::vector<Entry> &full = m_runs[r];
    std::vector<Entry> &half = m_runs[r + 1];
    const std::size_t keep = full.size() / 2;
    half.assign(full.begin() + static_cast<std::ptrdiff_t>(keep), full.end());
    full.resize(keep);
    noteTail(r);
    noteTail(r + 1);
}

bool FreeBlockIndex::erase(Bytes size, Bytes address)
{
    const std::size_t r = runFor(size, address);
    if (r == m_runCount)
        return false;
    auto at = place(m_runs[r], size, address);
    if (at == m_runs[r].end() || at->size != size || at->address != address)
        return false;
    eraseAt({static_cast<std::uint32_t>(r), static_cast<std::uint32_t>(at - m_runs[r].begin())});
    return true;
}

void FreeBlockIndex::eraseAt(Position p)
{
    std::vector<Entry> &run = m_runs[p.run];
    run.erase(run.begin() + p.index);
    --m_count;
    if (run.empty())
        removeRun(p.run);
    else
        noteTail(p.run);
}

// An emptied run moves behind the runs in use, keeping its capacity for the next split.
void FreeBlockIndex::removeRun(std::size_t run)
{
    const auto at = static_cast<std::ptrdiff_t>(run);
    const auto used = static_cast<std::ptrdiff_t>(m_runCount);
    std::rotate(m_runs.begin() + at, m_runs.begin() + at + 1, m_runs.begin() + used);
    std::rotate(m_tails.begin() + at, m_tails.begin() + at + 1, m_tails.begin() + used);
    --m_runCount;
}

FreeBlockIndex::Position FreeBlockIndex::lowerBound(Bytes size) const
{
    const auto tailsEnd = m_tails.begin() + static_cast<std::ptrdiff_t>(m_runCount);
    const auto first = std::partition_point(m_tails.begin(), tailsEnd, [&](const Entry &tail) {
        return tail.size < size;
    });
    const auto r = static_cast<std::size_t>(first - m_tails.begin());
    if (r == m_runCount)
        return end();
    const auto &run = m_runs[r];
    const auto at = std::lower_bound(run.begin(), run.end(), size, [](const Entry &a, Bytes s) {
        return a.size < s;
    });
    return {static_cast<std::uint32_t>(r), static_cast<std::uint32_t>(at - run.begin())};
}

FreeBlockIndex::Position FreeBlockIndex::next(Position p) const
{
    if (p.index + 1 < m_runs[p.run].size())
        return {p.run, p.index + 1};
    return {p.run + 1, 0};
}

FreeBlockIndex::Position FreeBlockIndex::last() const
{
    const auto r = static_cast<std::uint32_t>(m_runCount - 1);
    return {r, static_cast<std::uint32_t>(m_runs[r].size() - 1)};
}

void FreeBlockIndex::collect(std::vector<Entry> &out) const
{
    out.clear();
    for (std::size_t r = 0; r < m_runCount; ++r)
        out.insert(out.end(), m_runs[r].begin(), m_runs[r].end());
}

} // namespace membudget
