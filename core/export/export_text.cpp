// SPDX-License-Identifier: GPL-3.0-or-later
#include "export/export_text.h"

#include "base/byte_format.h"
#include "base/utf8.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace membudget {

namespace {

bool isUnsafeCodePoint(char32_t c)
{
    return c < 0x20 || (c >= 0x7F && c <= 0x9F) || c == 0x2028 || c == 0x2029
           || (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069) || c == 0x200E
           || c == 0x200F || c == 0x061C;
}

const char *precisionWords(Precision p)
{
    switch (p) {
    case Precision::Fp32:
        return "fp32";
    case Precision::AmpBf16:
        return "bf16 autocast on fp32 weights";
    case Precision::AmpFp16:
        return "fp16 autocast on fp32 weights";
    case Precision::Bf16:
        return "pure bf16";
    case Precision::Fp16:
        return "pure fp16";
    case Precision::MixedBf16:
        return "bf16 with an fp32 master copy";
    case Precision::MixedFp16:
        return "fp16 with an fp32 master copy";
    }
    return "";
}

// Word-wraps `text` to lines of at most 96 characters: the first with `first` in front, the rest
// with `rest`.
void wrapInto(std::vector<std::string> &lines,
              const std::string &first,
              const std::string &rest,
              const std::string &text)
{
    constexpr std::size_t width = 96;
    std::string line = first;
    std::size_t i = 0;
    while (i < text.size()) {
        std::size_t end = text.find(' ', i);
        if (end == std::string::npos)
            end = text.size();
        const std::string word = text.substr(i, end - i);
        if (line.size() + word.size() + 1 > width && line.size() > rest.size() && line != first) {
            lines.push_back(line);
            line = rest;
        }
        if (line != first && line != rest)
            line += ' ';
        line += word;
        i = end + 1;
    }
    lines.push_back(line);
}

} // namespace

std::string commentSafe(const std::string &text)
{
    std::string out;
    std::size_t i = 0;
    while (i < text.size()) {
        char32_t c = 0;
        const std::size_t n = utf8SequenceLength(text, i, c);
        if (n == 0 || isUnsafeCodePoint(c)) {
            out += '?';
            i += n == 0 ? 1 : n;
            continue;
        }
        out.append(text, i, n);
        i += n;
    }
    return out;
}

std::string pythonString(const std::string &text)
{
    std::string out = "\"";
    std::size_t i = 0;
    while (i < text.size()) {
        char32_t c = 0;
        const std::size_t n = utf8SequenceLength(text, i, c);
        char buf[16];
        if (n == 0) {
            std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(text[i]));
            out += buf;
            ++i;
            continue;
        }
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c >= 0x20 && c < 0x7F) {
            out += static_cast<char>(c);
        } else {
            std::snprintf(buf,
                          sizeof buf,
                          c <= 0xFFFF ? "\\u%04x" : "\\U%08x",
                          static_cast<unsigned>(c));
            out += buf;
        }
        i += n;
    }
    return out + "\"";
}

std::string pythonFloat(double value)
{
    if (!std::isfinite(value))
        return "0.0";
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof buf, value);
    std::string s(buf, res.ptr);
    if (s.find_first_of(".e") == std::string::npos)
        s += ".0";
    return s;
}

std::string thousands(std::int64_t value)
{
    return formatCount(static_cast<double>(value));
}

std::vector<std::string> exportHeader(const ExportPlan &plan,
                                      const std::string &target,
                                      const std::vector<std::string> &notes)
{
    const Scenario &s = plan.scenario;
    const TrainingConfig &t = s.training;
    std::vector<std::string> lines;
    const std::string name = s.name.empty() ? plan.modelName : s.name;
    wrapInto(lines,
             "",
             "  ",
             "Training setup exported by MemBudget from the scenario \"" + commentSafe(name)
                 + "\".");
    std::string model = "Model: " + plan.modelIdOrPlaceholder();
    if (!plan.revision.empty())
        model += " (revision " + plan.revision + ")";
    model += std::string(", ") + methodName(t.method) + ", " + precisionWords(t.precision) + ".";
    wrapInto(lines, "", "  ", commentSafe(model));
    wrapInto(lines,
             "",
             "  ",
             "MemBudget's estimate: " + formatBytes(plan.peakPerGpu, ByteUnit::GiB)
                 + " peak per GPU; micro-batch " + std::to_string(t.micro_batch_size) + " x "
                 + thousands(t.sequence_length) + " tokens, "
                 + std::to_string(t.gradient_accumulation_steps) + " accumulation step"
                 + (t.gradient_accumulation_steps == 1 ? "" : "s") + ", "
                 + std::to_string(s.parallelism.gpus) + " GPU"
                 + (s.parallelism.gpus == 1 ? "" : "s") + ".");
    wrapInto(lines, "", "  ", "Keys as documented for " + target + ".");
    if (notes.empty()) {
        lines.push_back("Every setting MemBudget modelled is expressed below.");
    } else {
        lines.push_back("Not expressed by these settings:");
        for (const std::string &n : notes)
            wrapInto(lines, "  - ", "    ", commentSafe(n));
    }
    return lines;
}

} // namespace membudget
