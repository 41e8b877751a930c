// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/yaml_reader.h"

#include "base/byte_format.h"
#include "base/utf8.h"
#include "io/input_file.h"
#include "model/training_options.h"

#include <charconv>
#include <cmath>
#include <set>
#include <string_view>
#include <vector>

namespace membudget {

namespace {

bool isQuoted(const YAML::Node &node)
{
    return node.Tag() == "!";
}

std::string describe(const YAML::Node &node)
{
    switch (node.Type()) {
    case YAML::NodeType::Map:
        return "a mapping";
    case YAML::NodeType::Sequence:
        return "a list";
    case YAML::NodeType::Null:
        return "nothing (null)";
    case YAML::NodeType::Scalar:
        return isQuoted(node) ? "the string \"" + node.Scalar() + "\""
                              : "\"" + node.Scalar() + "\"";
    default:
        return "nothing";
    }
}

std::string withCommas(std::int64_t v)
{
    std::string digits = std::to_string(v < 0 ? -v : v);
    std::string out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0)
            out += ',';
        out += digits[i];
    }
    return v < 0 ? "-" + out : out;
}

// YAML 1.2 spellings of infinity and not-a-number (core schema).
bool isInfOrNan(const std::string &s)
{
    std::string t = s;
    if (!t.empty() && (t.front() == '+' || t.front() == '-'))
        t.erase(0, 1);
    return t == ".inf" || t == ".Inf" || t == ".INF" || t == ".nan" || t == ".NaN" || t == ".NAN";
}

// yaml-cpp 0.7 decodes the escapes \N and \_ to the single bytes 0x85 and 0xA0 (exp.cpp, Escape)
// instead of U+0085 and U+00A0 in UTF-8. The file was valid UTF-8 (checkInputText), so such a byte
// can only come from those escapes: the code points are put back.
std::string withEscapesRepaired(const std::string &text)
{
    std::string out;
    std::size_t i = 0;
    while (i < text.size()) {
        char32_t cp = 0;
        const std::size_t n = utf8SequenceLength(text, i, cp);
        const auto byte = static_cast<unsigned char>(text[i]);
        if (n == 0 && (byte == 0x85 || byte == 0xA0)) {
            out += '\xC2';
            out += static_cast<char>(byte);
            ++i;
        } else {
            out.append(text, i, n == 0 ? 1 : n);
            i += n == 0 ? 1 : n;
        }
    }
    return out;
}

std::string shortNumber(double v)
{
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, res.ptr);
}

// Where a second YAML document starts: a "---" or "..." marker at the start of a line after the
// first document's content (YAML 1.2, section 9.1; markers are not allowed inside content).
std::size_t secondDocumentStart(const std::string &text)
{
    bool sawContent = false;
    std::size_t lineStart = 0;
    while (lineStart < text.size()) {
        std::size_t end = text.find('\n', lineStart);
        if (end == std::string::npos)
            end = text.size();
        const std::string_view line(text.data() + lineStart, end - lineStart);
        const auto isMarker = [&](std::string_view m) {
            return line.substr(0, 3) == m
                   && (line.size() == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r');
        };
        if (isMarker("---") || isMarker("...")) {
            if (sawContent)
                return lineStart;
            if (isMarker("---") && line.find_first_not_of(" \t\r", 3) != std::string_view::npos
                && line[line.find_first_not_of(" \t\r", 3)] != '#')
                sawContent = true; // "--- value" starts the first document with content
        } else {
            const std::size_t first = line.find_first_not_of(" \t\r");
            if (first != std::string_view::npos && line[first] != '#'
                && !(first == 0 && line[0] == '%'))
                sawContent = true;
        }
        lineStart = end + 1;
    }
    return std::string::npos;
}

} // namespace

bool YamlReader::parse(const std::string &text, YAML::Node &root)
{
    if (!checkInputText(text, m_file, m_error))
        return false;
    m_text = &text;
    // yaml-cpp 0.7 reads a lone CR (old Mac line ends) as part of the line: the whole file would be
    // one line and every position past its first line wrong. A CR not before an LF becomes an LF
    // (same length, so positions in the text stay valid).
    if (const std::size_t cr = text.find('\r'); cr != std::string::npos) {
        m_normalized = text;
        for (std::size_t i = cr; i < m_normalized.size(); ++i)
            if (m_normalized[i] == '\r'
                && (i + 1 == m_normalized.size() || m_normalized[i + 1] != '\n'))
                m_normalized[i] = '\n';
        m_text = &m_normalized;
    }
    const std::string &source = *m_text;
    try {
        // Only the first document is parsed (yaml-cpp 0.7's LoadAll can loop forever on a stray
        // ','; found by tests/fuzz); a second one is found by its marker instead.
        if (const std::size_t at = secondDocumentStart(source); at != std::string::npos) {
            int line = 0, column = 0;
            positionOf(source, at, line, column);
            return failAtPosition(line,
                                  column,
                                  "more than one YAML document (---); a MemBudget file holds one");
        }
        root = YAML::Load(source);
    } catch (const YAML::DeepRecursion &e) {
        return failAt(e.mark, "nesting too deep (more than 500 levels)");
    } catch (const YAML::ParserException &e) {
        std::string msg = e.msg.empty() ? std::string("invalid YAML") : e.msg;
        return failAt(e.mark, "invalid YAML: " + msg);
    } catch (const YAML::Exception &e) {
        return failAt(e.mark, std::string("invalid YAML: ") + e.msg);
    } catch (const std::exception &e) {
        return failAt(YAML::Mark::null_mark(), std::string("cannot read the file: ") + e.what());
    }
    if (!root.IsDefined() || root.IsNull())
        return failAtPosition(1, 1, "the file is empty");
    return true;
}

bool YamlReader::fail(const YAML::Node &node, const std::string &message)
{
    return failAt(node.Mark(), message);
}

bool YamlReader::failAt(const YAML::Mark &mark, const std::string &message)
{
    // yaml-cpp's marks are 0-based; null_mark() (-1) means no position.
    return failAtPosition(mark.line >= 0 ? mark.line + 1 : 0,
                          mark.column >= 0 && mark.line >= 0 ? mark.column + 1 : 0,
                          message);
}

bool YamlReader::failAtPosition(int line, int column, const std::string &message)
{
    m_error.file = m_file;
    m_error.line = line;
    m_error.column = column;
    m_error.message = message;
    return false;
}

bool YamlReader::checkTag(const YAML::Node &node)
{
    // yaml-cpp reports "?" for untagged nodes and "!" for quoted scalars. Anything else was written
    // by hand (!include, !!python/object...): MemBudget never acts on tags, so it refuses them.
    const std::string &tag = node.Tag();
    if (tag.empty() || tag == "?" || tag == "!")
        return true;
    std::string shown = tag.rfind("tag:yaml.org,2002:", 0) == 0 ? "!!" + tag.substr(18) : tag;
    if (shown.size() > 40)
        shown = shown.substr(0, 40) + "...";
    return fail(node,
                "YAML tag '" + shown
                    + "' is not supported: MemBudget files are plain values "
                      "and never include other files");
}

bool YamlReader::expectMap(const YAML::Node &node, const std::string &what)
{
    if (!checkTag(node))
        return false;
    if (!node.IsMap())
        return fail(node, what + " must be a mapping of keys to values, not " + describe(node));
    std::set<std::string> seen;
    for (auto it = node.begin(); it != node.end(); ++it) {
        const YAML::Node key = it->first;
        if (!key.IsScalar())
            return fail(key, "keys in " + what + " must be plain names");
        if (!checkTag(key) || !checkTag(it->second))
            return false;
        if (!seen.insert(key.Scalar()).second)
            return fail(key, "duplicate key '" + key.Scalar() + "' in " + what);
    }
    return true;
}

bool YamlReader::expectMap(const YAML::Node &node,
                           const std::string &what,
                           std::initializer_list<const char *> allowed)
{
    if (!expectMap(node, what))
        return false;
    for (auto it = node.begin(); it != node.end(); ++it) {
        const std::string &name = it->first.Scalar();
        bool ok = false;
        for (const char *a : allowed)
            ok = ok || name == a;
        if (!ok) {
            std::string list;
            int i = 0;
            for (const char *a : allowed) {
                list += i++ ? ", " : "";
                list += a;
            }
            return fail(it->first,
                        "unknown key '" + name + "' in " + what + "; expected one of: " + list);
        }
    }
    return true;
}

bool YamlReader::checkQuoteClosed(const YAML::Node &node)
{
    // yaml-cpp 0.7 accepts a quoted scalar left open at the end of the file and swallows the rest of
    // the file into it; find its closing quote in the text ("\" escapes, '' doubles).
    if (!isQuoted(node) || !m_text)
        return true;
    const std::string &t = *m_text;
    const auto start = static_cast<std::size_t>(node.Mark().pos);
    if (start >= t.size() || (t[start] != '"' && t[start] != '\''))
        return true;
    const char q = t[start];
    for (std::size_t i = start + 1; i < t.size(); ++i) {
        if (q == '"' && t[i] == '\\') {
            ++i;
        } else if (t[i] == q) {
            if (q == '\'' && i + 1 < t.size() && t[i + 1] == '\'') {
                ++i;
                continue;
            }
            return true;
        }
    }
    return fail(node,
                std::string("this quoted value has no closing ") + (q == '"' ? "double" : "single")
                    + " quote");
}

bool YamlReader::scalarText(const YAML::Node &node, const std::string &what, std::string &out)
{
    if (!checkTag(node) || !checkQuoteClosed(node))
        return false;
    if (!node.IsScalar())
        return fail(node, "'" + what + "' must be a single value, not " + describe(node));
    out = withEscapesRepaired(node.Scalar());
    return true;
}

bool YamlReader::toDouble(
    const YAML::Node &node, const std::string &what, double &out, double min, double max)
{
    if (!checkTag(node))
        return false;
    if (!node.IsScalar() || isQuoted(node))
        return fail(node, "'" + what + "' must be a number, not " + describe(node));
    const std::string &s = node.Scalar();
    if (isInfOrNan(s))
        return fail(node, "'" + what + "' must be a finite number, not " + s);
    double v = 0;
    const char *first = s.data();
    const char *last = s.data() + s.size();
    if (first != last && *first == '+')
        ++first;
    auto res = std::from_chars(first, last, v);
    if (res.ec == std::errc::result_out_of_range)
        return fail(node, "'" + what + "' is out of range: " + s);
    if (res.ec != std::errc() || res.ptr != last || s.empty())
        return fail(node, "'" + what + "' must be a number, not \"" + s + "\"");
    if (!std::isfinite(v))
        return fail(node, "'" + what + "' must be a finite number, not " + s);
    if (v < min || v > max)
        return fail(node,
                    "'" + what + "' must be between " + shortNumber(min) + " and "
                        + shortNumber(max) + ", not " + s);
    out = v;
    return true;
}

bool YamlReader::toInt(const YAML::Node &node,
                       const std::string &what,
                       std::int64_t &out,
                       std::int64_t min,
                       std::int64_t max)
{
    if (!checkTag(node))
        return false;
    if (!node.IsScalar() || isQuoted(node))
        return fail(node, "'" + what + "' must be a whole number, not " + describe(node));
    const std::string &s = node.Scalar();
    if (isInfOrNan(s))
        return fail(node, "'" + what + "' must be a finite whole number, not " + s);
    std::int64_t v = 0;
    const char *first = s.data();
    const char *last = s.data() + s.size();
    if (first != last && *first == '+')
        ++first;
    auto res = std::from_chars(first, last, v);
    if (res.ec == std::errc() && res.ptr == last && !s.empty()) {
        // plain integer
    } else if (res.ec == std::errc::result_out_of_range) {
        if (s.front() == '-')
            return fail(node,
                        "'" + what + "' is too small: " + s + " (at least " + withCommas(min) + ")");
        return fail(node,
                    "'" + what + "' is too large: " + s + " (at most " + withCommas(max) + ")");
    } else {
        double d = 0;
        auto dres = std::from_chars(first, last, d);
        if (dres.ec != std::errc() || dres.ptr != last || s.empty() || !std::isfinite(d))
            return fail(node, "'" + what + "' must be a whole number, not \"" + s + "\"");
        if (d != std::floor(d))
            return fail(node, "'" + what + "' must be a whole number, not " + s);
        if (d < static_cast<double>(min) || d > static_cast<double>(max))
            return fail(node,
                        "'" + what + "' must be between " + withCommas(min) + " and "
                            + withCommas(max) + ", not " + s);
        v = static_cast<std::int64_t>(d);
    }
    if (v < min || v > max)
        return fail(node,
                    "'" + what + "' must be between " + withCommas(min) + " and " + withCommas(max)
                        + ", not " + s);
    out = v;
    return true;
}

bool YamlReader::getInt(
    const YAML::Node &map, const char *key, std::int64_t &out, std::int64_t min, std::int64_t max)
{
    const YAML::Node node = map[key];
    return !node.IsDefined() || toInt(node, key, out, min, max);
}

bool YamlReader::getInt(const YAML::Node &map,
                        const char *key,
                        std::optional<std::int64_t> &out,
                        std::int64_t min,
                        std::int64_t max)
{
    const YAML::Node node = map[key];
    if (!node.IsDefined())
        return true;
    std::int64_t v = 0;
    if (!toInt(node, key, v, min, max))
        return false;
    out = v;
    return true;
}

bool YamlReader::getDouble(
    const YAML::Node &map, const char *key, double &out, double min, double max)
{
    const YAML::Node node = map[key];
    return !node.IsDefined() || toDouble(node, key, out, min, max);
}

bool YamlReader::getDouble(
    const YAML::Node &map, const char *key, std::optional<double> &out, double min, double max)
{
    const YAML::Node node = map[key];
    if (!node.IsDefined())
        return true;
    double v = 0;
    if (!toDouble(node, key, v, min, max))
        return false;
    out = v;
    return true;
}

bool YamlReader::getBool(const YAML::Node &map, const char *key, bool &out)
{
    const YAML::Node node = map[key];
    if (!node.IsDefined())
        return true;
    if (!checkTag(node))
        return false;
    if (!node.IsScalar() || isQuoted(node))
        return fail(node, std::string("'") + key + "' must be true or false, not " + describe(node));
    const std::string &s = node.Scalar();
    if (s == "true" || s == "True" || s == "TRUE")
        out = true;
    else if (s == "false" || s == "False" || s == "FALSE")
        out = false;
    else
        return fail(node, std::string("'") + key + "' must be true or false, not \"" + s + "\"");
    return true;
}

bool YamlReader::getBool(const YAML::Node &map, const char *key, std::optional<bool> &out)
{
    if (!map[key].IsDefined())
        return true;
    bool v = false;
    if (!getBool(map, key, v))
        return false;
    out = v;
    return true;
}

bool YamlReader::getString(const YAML::Node &map, const char *key, std::string &out)
{
    const YAML::Node node = map[key];
    if (!node.IsDefined())
        return true;
    if (node.IsNull()) {
        out.clear();
        return true;
    }
    if (!scalarText(node, key, out))
        return false;
    if (out.size() > 4096)
        return fail(node, std::string("'") + key + "' is longer than 4096 characters");
    return true;
}

bool YamlReader::getByteSize(const YAML::Node &map,
                             const char *key,
                             std::int64_t &out,
                             std::int64_t max)
{
    const YAML::Node node = map[key];
    if (!node.IsDefined())
        return true;
    std::string text;
    if (!scalarText(node, key, text))
        return false;
    Bytes v = 0;
    if (!parseByteSize(text, v))
        return fail(node,
                    std::string("'") + key
                        + "' must be a size such as 512MiB, 0.5GiB or 2GB, not \"" + text + "\"");
    if (v > max)
        return fail(node,
                    std::string("'") + key + "' is larger than " + formatBytes(max, ByteUnit::GiB));
    out = v;
    return true;
}

std::string YamlReader::unknownName(const std::string &key,
                                    const std::string &value,
                                    const char *const *names,
                                    int count)
{
    return "unknown " + key + " '" + value + "'; expected " + allowedNames(names, count);
}

} // namespace membudget
