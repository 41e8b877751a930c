// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Strict, position-aware reading of yaml-cpp nodes for the scenario, preset and config.json loaders.
// Internal to the core: yaml-cpp types never appear in the public headers.

#include "io/load_error.h"

#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

namespace membudget {

class YamlReader
{
public:
    YamlReader(std::string fileName, LoadError &error)
        : m_file(std::move(fileName))
        , m_error(error)
    {}

    // Parses a whole document. Returns false with the parser's position and a readable message for
    // syntax errors, nesting that is too deep, or an empty document.
    bool parse(const std::string &text, YAML::Node &root);

    bool fail(const YAML::Node &node, const std::string &message);
    bool failAt(const YAML::Mark &mark, const std::string &message);
    bool failAtPosition(int line, int column, const std::string &message); // 1-based; 0: none

    // A mapping whose keys are plain scalars, each at most once, all among `allowed`.
    bool expectMap(const YAML::Node &node,
                   const std::string &what,
                   std::initializer_list<const char *> allowed);
    bool expectMap(const YAML::Node &node, const std::string &what); // any keys, still no duplicates

    // Each getter leaves `out` untouched when the key is absent and returns false only on an error.
    bool getInt(const YAML::Node &map,
                const char *key,
                std::int64_t &out,
                std::int64_t min,
                std::int64_t max);
    bool getInt(const YAML::Node &map,
                const char *key,
                std::optional<std::int64_t> &out,
                std::int64_t min,
                std::int64_t max);
    bool getDouble(const YAML::Node &map, const char *key, double &out, double min, double max);
    bool getDouble(
        const YAML::Node &map, const char *key, std::optional<double> &out, double min, double max);
    bool getBool(const YAML::Node &map, const char *key, bool &out);
    bool getBool(const YAML::Node &map, const char *key, std::optional<bool> &out);
    bool getString(const YAML::Node &map, const char *key, std::string &out);
    bool getByteSize(const YAML::Node &map, const char *key, std::int64_t &out, std::int64_t max);

    template<typename Enum>
    bool getEnum(const YAML::Node &map,
                 const char *key,
                 Enum &out,
                 bool (*parseFn)(const std::string &, Enum &),
                 const char *const *names,
                 int count)
    {
        const YAML::Node node = map[key];
        if (!node.IsDefined())
            return true;
        std::string text;
        if (!scalarText(node, key, text))
            return false;
        if (!parseFn(text, out))
            return fail(node, unknownName(key, text, names, count));
        return true;
    }
    template<typename Enum>
    bool getEnum(const YAML::Node &map,
                 const char *key,
                 std::optional<Enum> &out,
                 bool (*parseFn)(const std::string &, Enum &),
                 const char *const *names,
                 int count)
    {
        if (!map[key].IsDefined())
            return true;
        Enum value{};
        if (!getEnum(map, key, value, parseFn, names, count))
            return false;
        out = value;
        return true;
    }

    // Refuses a quoted scalar whose closing quote is missing (see the .cpp).
    bool checkQuoteClosed(const YAML::Node &node);

    // Refuses explicit YAML tags (!include, !!python/object, !!str...).
    bool checkTag(const YAML::Node &node);

    // Scalar helpers usable on a node directly.
    bool scalarText(const YAML::Node &node, const std::string &what, std::string &out);
    bool toInt(const YAML::Node &node,
               const std::string &what,
               std::int64_t &out,
               std::int64_t min,
               std::int64_t max);
    bool toDouble(
        const YAML::Node &node, const std::string &what, double &out, double min, double max);

    static std::string unknownName(const std::string &key,
                                   const std::string &value,
                                   const char *const *names,
                                   int count);

private:
    std::string m_file;
    LoadError &m_error;
    // The text given to parse() (callers keep it alive while reading), or m_normalized.
    const std::string *m_text = nullptr;
    std::string m_normalized; // the text with lone CRs made LFs, when it had any
};

} // namespace membudget
