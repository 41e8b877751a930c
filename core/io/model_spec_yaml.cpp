// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/model_spec_yaml.h"

#include "base/utf8.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace membudget {

namespace {
const char *const kFamilyList[] = {"llama", "gemma", "gpt2", "bigcode", "falcon"};
const char *const kMlpList[] = {"gated-silu", "gated-gelu", "gelu", "gelu-tanh-python"};
const char *const kNormList[] = {"rmsnorm", "rmsnorm-fp32", "layernorm", "layernorm-no-params"};
const char *const kPositionList[] = {"rotary", "learned"};
constexpr std::int64_t kMaxDim = 10'000'000;

bool readKeys(YamlReader &r, const YAML::Node &m, ModelSpec &s)
{
    return r.getEnum(m, "family", s.family, parseFamily, kFamilyList, 5)
           && r.getDouble(m, "parameters", s.parameters, 1e3, 1e14)
           && r.getInt(m, "layers", s.layers, 1, 100'000)
           && r.getInt(m, "hidden_size", s.hidden_size, 1, kMaxDim)
           && r.getInt(m, "intermediate_size", s.intermediate_size, 1, kMaxDim)
           && r.getInt(m, "attention_heads", s.attention_heads, 1, 100'000)
           && r.getInt(m, "kv_heads", s.kv_heads, 1, 100'000)
           && r.getInt(m, "head_dim", s.head_dim, 1, 100'000)
           && r.getInt(m, "vocab_size", s.vocab_size, 1, 100'000'000)
           && r.getInt(m, "max_position_embeddings", s.max_position_embeddings, 1, 100'000'000)
           && r.getBool(m, "tied_embeddings", s.tied_embeddings)
           && r.getEnum(m, "mlp", s.mlp, parseMlp, kMlpList, 4)
           && r.getEnum(m, "norm", s.norm, parseNorm, kNormList, 4)
           && r.getEnum(m, "positions", s.positions, parsePosition, kPositionList, 2)
           && r.getBool(m, "qkv_bias", s.qkv_bias) && r.getBool(m, "o_bias", s.o_bias)
           && r.getBool(m, "mlp_bias", s.mlp_bias) && r.getBool(m, "qk_norm", s.qk_norm)
           && r.getInt(m, "norms_per_layer", s.norms_per_layer, 0, 16)
           && r.getBool(m, "parallel_attention", s.parallel_attention)
           && r.getInt(m, "experts", s.experts, 1, 100'000)
           && r.getInt(m, "experts_per_token", s.experts_per_token, 1, 100'000)
           && r.getDouble(m, "attention_dropout", s.attention_dropout, 0.0, 0.999)
           && r.getDouble(m, "hidden_dropout", s.hidden_dropout, 0.0, 0.999);
}

} // namespace

bool readArchitectureKeys(YamlReader &r, const YAML::Node &m, ModelSpec &s)
{
    if (!readKeys(r, m, s))
        return false;
    // Quick mode sizes a model from its parameter count alone; with layers or hidden_size given
    // the count would be silently ignored.
    if (s.parameters && (s.layers || s.hidden_size))
        return r.fail(m["parameters"],
                      std::string("'parameters' is quick mode and would be ignored: ")
                          + (s.layers ? "layers" : "hidden_size")
                          + " is given too; remove 'parameters' or the shape");
    return true;
}

std::string formatYamlNumber(double value)
{
    if (std::isfinite(value) && value == std::floor(value) && std::fabs(value) < 1e15)
        return std::to_string(static_cast<long long>(value));
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof buf, value);
    std::string s(buf, res.ptr);
    if (s.find_first_of(".e") == std::string::npos)
        s += ".0";
    return s;
}

std::string yamlString(const std::string &text)
{
    bool plain = !text.empty() && text.size() < 200;
    for (char c : text) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                        || c == '-' || c == '_' || c == '.' || c == '/';
        plain = plain && ok;
    }
    // Words YAML would read as something other than a string stay quoted.
    static const char *const special[] = {"true", "false", "True", "False", "TRUE", "FALSE", "yes",
                                          "no",   "Yes",   "No",   "on",    "off",  "On",    "Off",
                                          "null", "Null",  "NULL", "~",     "y",    "n"};
    for (const char *w : special)
        plain = plain && text != w;
    if (plain) {
        double d = 0;
        auto res = std::from_chars(text.data(), text.data() + text.size(), d);
        plain = !(res.ec == std::errc() && res.ptr == text.data() + text.size()) && text[0] != '-'
                && text[0] != '.';
    }
    if (plain)
        return text;
    return yamlDoubleQuoted(text);
}

std::string yamlDoubleQuoted(const std::string &text)
{
    // What the reader refuses raw is written as an escape (YAML 1.2, section 5.7): C0 and C1
    // controls and DEL (refused by checkInputText; NEL, U+0085, as \x85: yaml-cpp decodes \N to
    // a lone byte), LS and PS (line breaks to YAML 1.1 and so to yaml-cpp, which folds them inside
    // quotes: \L, \P), the BOM and the two non-characters outside YAML's printable set. Bytes that
    // are not UTF-8 cannot be in a YAML file at all; they become U+FFFD so the file still loads.
    std::string out = "\"";
    std::size_t i = 0;
    while (i < text.size()) {
        char32_t cp = 0;
        const std::size_t n = utf8SequenceLength(text, i, cp);
        if (n == 0) {
            out += "\\uFFFD";
            ++i;
            continue;
        }
        char buf[16];
        switch (cp) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\t':
            out += "\\t";
            break;
        case '\r':
            out += "\\r";
            break;
        case 0x2028:
            out += "\\L";
            break;
        case 0x2029:
            out += "\\P";
            break;
        default:
            if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)) {
                std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(cp));
                out += buf;
            } else if (cp == 0xFEFF || cp == 0xFFFE || cp == 0xFFFF) {
                std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(cp));
                out += buf;
            } else {
                out.append(text, i, n);
            }
        }
        i += n;
    }
    out += '"';
    return out;
}

void writeArchitectureKeys(const ModelSpec &s, const std::string &indent, std::string &out)
{
    auto num = [&](const char *key, const std::optional<std::int64_t> &v) {
        if (v)
            out += indent + key + ": " + std::to_string(*v) + "\n";
    };
    auto dbl = [&](const char *key, const std::optional<double> &v) {
        if (v)
            out += indent + key + ": " + formatYamlNumber(*v) + "\n";
    };
    auto flag = [&](const char *key, const std::optional<bool> &v) {
        if (v)
            out += indent + key + ": " + (*v ? "true" : "false") + "\n";
    };
    if (s.family)
        out += indent + "family: " + familyName(*s.family) + "\n";
    dbl("parameters", s.parameters);
    num("layers", s.layers);
    num("hidden_size", s.hidden_size);
    num("intermediate_size", s.intermediate_size);
    num("attention_heads", s.attention_heads);
    num("kv_heads", s.kv_heads);
    num("head_dim", s.head_dim);
    num("vocab_size", s.vocab_size);
    num("max_position_embeddings", s.max_position_embeddings);
    flag("tied_embeddings", s.tied_embeddings);
    if (s.mlp)
        out += indent + "mlp: " + mlpName(*s.mlp) + "\n";
    if (s.norm)
        out += indent + "norm: " + normName(*s.norm) + "\n";
    if (s.positions)
        out += indent + "positions: " + positionName(*s.positions) + "\n";
    flag("qkv_bias", s.qkv_bias);
    flag("o_bias", s.o_bias);
    flag("mlp_bias", s.mlp_bias);
    flag("qk_norm", s.qk_norm);
    num("norms_per_layer", s.norms_per_layer);
    flag("parallel_attention", s.parallel_attention);
    num("experts", s.experts);
    num("experts_per_token", s.experts_per_token);
    dbl("attention_dropout", s.attention_dropout);
    dbl("hidden_dropout", s.hidden_dropout);
}

} // namespace membudget
