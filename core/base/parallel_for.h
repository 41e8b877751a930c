// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace membudget {

// Calls body(i) for every i in [0, count) on up to the machine's hardware threads (the calling one
// included), each index exactly once, and returns when all are done. The first exception a call
// throws is rethrown here once every thread has stopped; the indices not yet taken are skipped.
// For independent work items of a millisecond or more (a step replay each), not for fine loops.
// `maxThreads` (0: all of them) caps the threads, the calling one included: an app keeps a core for
// its GUI thread with hardware threads - 1.
template<typename Body>
void parallelFor(std::size_t count, Body body, unsigned maxThreads = 0)
{
    unsigned available = std::max(1u, std::thread::hardware_concurrency());
    if (maxThreads > 0)
        available = std::min(available, maxThreads);
    const std::size_t threads = std::min<std::size_t>(count, available);
    std::atomic<std::size_t> next{0};
    std::atomic<bool> failed{false};
    std::exception_ptr error;
    std::mutex errorMutex;
    auto work = [&] {
        for (std::size_t i = next++; i < count && !failed; i = next++) {
            try {
                body(i);
            } catch (...) {
                const std::lock_guard<std::mutex> lock(errorMutex);
                if (!error)
                    error = std::current_exception();
                failed = true;
            }
        }
    };
    std::vector<std::thread> pool;
    try {
        for (std::size_t t = 1; t < threads; ++t)
            pool.emplace_back(work);
    } catch (const std::system_error &) {
        // No more threads to be had: the ones started (and this one) do the rest.
    }
    work();
    for (std::thread &t : pool)
        t.join();
    if (error)
        std::rethrow_exception(error);
}

} // namespace membudget
