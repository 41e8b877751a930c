// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Small helpers shared by the GUI benchmarks: order statistics of a sample, thread CPU time and
// the resident memory of a process.

#include <QFile>
#include <QString>
#include <QStringList>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <vector>

namespace membudget::bench {

struct Summary
{
    std::size_t n = 0;
    double min = 0, median = 0, p95 = 0, max = 0;
};

// Nearest-rank percentile (p in [0, 1]) of an unsorted sample.
inline double percentile(std::vector<double> v, double p)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size())));
    return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

inline Summary summarize(const std::vector<double> &v)
{
    Summary s;
    s.n = v.size();
    if (v.empty())
        return s;
    s.min = *std::min_element(v.begin(), v.end());
    s.max = *std::max_element(v.begin(), v.end());
    s.median = percentile(v, 0.5);
    s.p95 = percentile(v, 0.95);
    return s;
}

// "name  n=..  min ..  median ..  p95 ..  max .. unit  [target ..: ok|MISSED]"
inline void printSummary(const char *name,
                         const Summary &s,
                         const char *unit,
                         double target = 0,
                         bool targetIsP95 = false)
{
    std::printf("%-34s n=%-4zu min %8.3f  median %8.3f  p95 %8.3f  max %8.3f %s",
                name,
                s.n,
                s.min,
                s.median,
                s.p95,
                s.max,
                unit);
    if (target > 0) {
        const double measured = targetIsP95 ? s.p95 : s.median;
        std::printf("   target %s <= %g: %s",
                    targetIsP95 ? "p95" : "median",
                    target,
                    measured <= target ? "ok" : "MISSED");
    }
    std::printf("\n");
    std::fflush(stdout);
}

// CPU time of the calling thread, ns: unlike wall-clock time, it does not grow while other
// processes hold the (two, shared) cores.
inline long long threadCpuNs()
{
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<long long>(ts.tv_sec) * 1'000'000'000LL + ts.tv_nsec;
}

// A "VmRSS:" / "VmHWM:" line of /proc/<pid>/status, in kB (0 when unreadable).
inline long statusKb(const QString &statusFile, const char *key)
{
    QFile f(statusFile);
    if (!f.open(QIODevice::ReadOnly | QIODevice::Text))
        return 0;
    const QByteArray prefix = QByteArray(key) + ':';
    for (const QByteArray &line : f.readAll().split('\n'))
        if (line.startsWith(prefix))
            return line.mid(prefix.size()).trimmed().split(' ').value(0).toLong();
    return 0;
}

} // namespace membudget::bench
