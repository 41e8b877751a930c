// SPDX-License-Identifier: GPL-3.0-or-later
#include "allocator/allocator_settings.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstdlib>
#include <vector>

namespace membudget {

namespace {

struct Token
{
    std::string text;
    std::size_t column = 0; // 1-based
};

// Splits at ',', ':', '[' and ']' (each its own token) and drops spaces, as
// CUDAAllocatorConfig::lexArgs does.
std::vector<Token> lex(std::string_view text)
{
    std::vector<Token> tokens;
    Token word;
    auto flush = [&] {
        if (!word.text.empty())
            tokens.push_back(word);
        word = {};
    };
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == ',' || c == ':' || c == '[' || c == ']') {
            flush();
            tokens.push_back({std::string(1, c), i + 1});
        } else if (c != ' ') {
            if (word.text.empty())
                word.column = i + 1;
            word.text += c;
        }
    }
    flush();
    return tokens;
}

class ConfReader
{
public:
    ConfReader(std::string_view text, std::string &error)
        : m_tokens(lex(text))
        , m_end(text.size() + 1)
        , m_error(error)
    {}

    bool atEnd() const { return m_pos >= m_tokens.size(); }
    bool peekIs(std::string_view s) const { return !atEnd() && m_tokens[m_pos].text == s; }
    std::size_t column() const { return atEnd() ? m_end : m_tokens[m_pos].column; }

    bool fail(const std::string &what) { return failAt(column(), what); }
    bool failAt(std::size_t col, const std::string &what)
    {
        m_error = "PYTORCH_CUDA_ALLOC_CONF column " + std::to_string(col) + ": " + what;
        return false;
    }
    bool expect(std::string_view s)
    {
        if (!peekIs(s))
            return fail("expected '" + std::string(s) + "'");
        ++m_pos;
        return true;
    }
    bool isPunctuation() const
    {
        const std::string &t = m_tokens[m_pos].text;
        return t.size() == 1 && std::string_view(",:[]").find(t[0]) != std::string_view::npos;
    }
    bool word(std::string &out)
    {
        if (atEnd() || isPunctuation())
            return fail("expected a value");
        out = m_tokens[m_pos++].text;
        return true;
    }
    bool unsignedValue(std::uint64_t &out)
    {
        const std::size_t col = column();
        std::string text;
        if (!word(text))
            return false;
        const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
        if (ec != std::errc() || ptr != text.data() + text.size())
            return failAt(col, "expected a whole number, got '" + text + "'");
        return true;
    }
    bool boolValue(bool &out)
    {
        std::string text;
        if (!word(text))
            return false;
        if (text != "True" && text != "False") {
            --m_pos;
            return fail("expected True or False");
        }
        out = text == "True";
        return true;
    }

private:
    std::vector<Token> m_tokens;
    std::size_t m_pos = 0;
    std::size_t m_end;
    std::string &m_error;
};

// max_split_size_mb / max_non_split_rounding_mb: whole MiB, more than 20
// (CUDAAllocatorConfig::parseMaxSplitSize).
bool readMegabytesAbove20(ConfReader &r, const std::string &key, Bytes &out)
{
    const std::size_t col = r.column();
    std::uint64_t mb = 0;
    if (!r.unsignedValue(mb))
        return false;
    if (mb <= 20 || mb > static_cast<std::uint64_t>(kBytesMax / kMiB))
        return r.failAt(col, key + " must be more than 20 (MiB)");
    out = static_cast<Bytes>(mb) * kMiB;
    return true;
}

bool readThreshold(ConfReader &r, double &out)
{
    const std::size_t col = r.column();
    std::string text;
    if (!r.word(text))
        return false;
    char *end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size() || !(v > 0.0 && v < 1.0))
        return r.failAt(col, "garbage_collection_threshold must be a number between 0 and 1");
    out = v;
    return true;
}

bool powerOfTwoOrZero(std::uint64_t v)
{
    return v == 0 || std::has_single_bit(v);
}

// roundup_power2_divisions: either one value for every interval, or
// [MB:divisions,...,>:divisions] where MB is a power of two naming the interval that starts there
// and '>' every interval after the last one named (CUDAAllocatorConfig::parseRoundUpPower2Divisions:
// the first entry also applies to every smaller interval).
bool readDivisions(ConfReader &r, std::array<std::uint32_t, 16> &divisions)
{
    if (!r.peekIs("[")) {
        std::uint64_t v = 0;
        if (!r.unsignedValue(v))
            return false;
        if (!std::has_single_bit(v) || v > 1u << 20)
            return r.fail("roundup_power2_divisions must be a power of two");
        divisions.fill(static_cast<std::uint32_t>(v));
        return true;
    }
    r.expect("[");
    std::size_t last = 0;
    bool first = true;
    while (!r.peekIs("]")) {
        if (r.atEnd())
            return r.fail("expected ']'");
        const bool rest = r.peekIs(">");
        std::uint64_t mb = 0;
        if (rest)
            r.expect(">");
        else if (!r.unsignedValue(mb))
            return false;
        else if (!std::has_single_bit(mb))
            return r.fail("the interval before ':' must be a power of two (MiB)");
        std::uint64_t v = 0;
        if (!r.expect(":") || !r.unsignedValue(v))
            return false;
        if (!powerOfTwoOrZero(v) || v > 1u << 20)
            return r.fail("divisions must be 0 or a power of two");
        const auto value = static_cast<std::uint32_t>(v);
        if (rest) {
            std::fill(divisions.begin() + static_cast<std::ptrdiff_t>(last), divisions.end(), value);
        } else {
            const std::size_t index = std::min<std::size_t>(std::bit_width(mb) - 1, 15);
            if (first)
                std::fill(divisions.begin(),
                          divisions.begin() + static_cast<std::ptrdiff_t>(index),
                          value);
            first = false;
            divisions[index] = value;
            last = index;
        }
        if (r.atEnd())
            return r.fail("expected ']'");
        if (!r.peekIs("]") && !r.expect(","))
            return false;
    }
    return r.expect("]");
}

bool readOption(ConfReader &r, AllocatorSettings &s)
{
    const std::size_t keyColumn = r.column();
    std::string key;
    if (!r.word(key) || !r.expect(":"))
        return false;
    std::string ignored;
    bool flag = false;
    if (key == "max_split_size_mb") {
        Bytes v = 0;
        if (!readMegabytesAbove20(r, key, v))
            return false;
        s.max_split_size = v;
        return true;
    }
    if (key == "max_non_split_rounding_mb")
        return readMegabytesAbove20(r, key, s.max_non_split_rounding);
    if (key == "garbage_collection_threshold")
        return readThreshold(r, s.garbage_collection_threshold);
    if (key == "roundup_power2_divisions")
        return readDivisions(r, s.roundup_power2_divisions);
    if (key == "expandable_segments")
        return r.boolValue(s.expandable_segments);
    if (key == "backend") {
        if (!r.word(ignored))
            return false;
        if (ignored != "native")
            return r.fail("only backend:native is modelled (cudaMallocAsync is not)");
        return true;
    }
    if (key == "release_lock_on_cudamalloc" || key == "pinned_use_cuda_host_register"
        || key == "pinned_use_background_threads" || key == "graph_capture_record_stream_reuse")
        return r.boolValue(flag);
    if (key == "pinned_num_register_threads" || key == "pinned_reserve_segment_size_mb")
        return r.word(ignored);
    return r.failAt(keyColumn, "unknown option '" + key + "'");
}

} // namespace

bool parseAllocatorConf(std::string_view text, AllocatorSettings &settings, std::string &error)
{
    AllocatorSettings parsed = settings;
    ConfReader reader(text, error);
    while (!reader.atEnd()) {
        if (!readOption(reader, parsed))
            return false;
        if (!reader.atEnd() && !reader.expect(","))
            return false;
    }
    settings = parsed;
    return true;
}

std::string allocatorConfText(const AllocatorSettings &s)
{
    std::vector<std::string> parts;
    if (s.expandable_segments)
        parts.emplace_back("expandable_segments:True");
    if (s.max_split_size)
        parts.push_back("max_split_size_mb:" + std::to_string(*s.max_split_size / kMiB));
    if (s.max_non_split_rounding != 20 * kMiB)
        parts.push_back("max_non_split_rounding_mb:"
                        + std::to_string(s.max_non_split_rounding / kMiB));
    if (s.garbage_collection_threshold > 0) {
        std::string t = std::to_string(s.garbage_collection_threshold);
        while (t.size() > 3 && t.back() == '0')
            t.pop_back();
        parts.push_back("garbage_collection_threshold:" + t);
    }
    const auto &d = s.roundup_power2_divisions;
    if (std::any_of(d.begin(), d.end(), [](std::uint32_t v) { return v > 1; })) {
        std::string list = "roundup_power2_divisions:[";
        for (std::size_t i = 0; i < d.size(); ++i)
            list += std::to_string(1u << i) + ":" + std::to_string(d[i])
                    + (i + 1 < d.size() ? "," : "]");
        parts.push_back(list);
    }
    std::string out;
    for (const auto &p : parts)
        out += (out.empty() ? "" : ",") + p;
    return out;
}

} // namespace membudget
