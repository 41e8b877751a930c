// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <array>
#include <cassert>
#include <cstddef>
#include <initializer_list>

namespace membudget {

// A vector of at most N elements stored inline: the few inputs, outputs and saved tensors of an
// op graph's op, without a heap allocation per op (an estimate builds a few hundred ops).
template<typename T, std::size_t N>
class SmallVector
{
public:
    SmallVector() = default;
    SmallVector(std::initializer_list<T> values)
    {
        for (const T &v : values)
            push_back(v);
    }

    void push_back(const T &v)
    {
        assert(m_size < N);
        if (m_size < N)
            m_data[m_size++] = v;
    }
    void clear() { m_size = 0; }
    std::size_t size() const { return m_size; }
    bool empty() const { return m_size == 0; }
    T &operator[](std::size_t i) { return m_data[i]; }
    const T &operator[](std::size_t i) const { return m_data[i]; }
    T *begin() { return m_data.data(); }
    T *end() { return m_data.data() + m_size; }
    const T *begin() const { return m_data.data(); }
    const T *end() const { return m_data.data() + m_size; }

private:
    std::array<T, N> m_data{};
    std::size_t m_size = 0;
};

} // namespace membudget
