// SPDX-License-Identifier: GPL-3.0-or-later
#include "io/hf_config_import.h"

#include "io/input_file.h"
#include "io/preset_catalog.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <vector>

namespace membudget {

namespace {

using nlohmann::json;

constexpr int kMaxJsonNesting = 64;

// Where each key of the top-level object (and of "text_config") starts, found by one pass over text
// that nlohmann::json has already accepted as well-formed. The same pass refuses duplicate keys
// (json::parse keeps the last silently) and nesting past kMaxJsonNesting, with their positions.
struct JsonKeyPositions
{
    std::map<std::string, std::size_t> root;
    std::map<std::string, std::size_t> textConfig;
};

// The string a quoted JSON token (already accepted by json::parse) stands for.
std::string decodedJsonString(const std::string &token)
{
    try {
        return json::parse(token).get<std::string>();
    } catch (const json::exception &) {
        return token;
    }
}

// json::parse, keeping the position of an error: the library reports a number it cannot hold
// (1e400) as out_of_range without one. Its SAX interface hands every error to parse_error with
// the position, so the DOM builder is wrapped to keep it.
class PositionedDomParser : public nlohmann::detail::json_sax_dom_parser<json>
{
public:
    explicit PositionedDomParser(json &result)
        : json_sax_dom_parser(result, false)
    {}
    template<class Exception>
    bool parse_error(std::size_t position, const std::string &token, const Exception &ex)
    {
        m_position = position;
        m_token = token;
        m_id = ex.id;
        m_what = ex.what();
        return false;
    }
    std::size_t m_position = 0; // bytes read when the error was found
    std::string m_token;        // the token being read
    int m_id = 0;               // the library's exception id (101 syntax, 406 number overflow)
    std::string m_what;
};

bool parseJson(const std::string &text, json &root, LoadError &error)
{
    PositionedDomParser parser(root);
    if (json::sax_parse(text, &parser) && !root.is_discarded())
        return true;
    if (parser.m_id == 406) {
        // The number token ends where the error was found.
        const std::size_t start = parser.m_position >= parser.m_token.size()
                                      ? parser.m_position - parser.m_token.size()
                                      : 0;
        positionOf(text, start, error.line, error.column);
        error.message = "the number " + parser.m_token
                        + " is out of range (larger than any double-precision value)";
        return false;
    }
    positionOf(text, parser.m_position > 0 ? parser.m_position - 1 : 0, error.line, error.column);
    error.message = "invalid JSON";
    const auto pos = parser.m_what.find("syntax error");
    if (pos != std::string::npos)
        error.message += ": " + parser.m_what.substr(pos);
    return false;
}

bool scanJsonKeys(const std::string &text,
                  JsonKeyPositions &out,
                  std::size_t &badAt,
                  std::string &problem)
{
    struct Level
    {
        bool object = false;
        bool expectKey = false;
        std::set<std::string> keys;
        std::map<std::string, std::size_t> *record = nullptr;
    };
    std::vector<Level> stack;
    std::string lastKey; // the key whose value comes next
    std::size_t i = 0;
    while (i < text.size()) {
        const char c = text[i];
        if (c == '"') {
            const std::size_t start = i++;
            while (i < text.size() && text[i] != '"')
                i += text[i] == '\\' ? 2 : 1;
            const std::size_t end = std::min(i + 1, text.size());
            ++i;
            if (!stack.empty() && stack.back().object && stack.back().expectKey) {
                // Keys are compared as json::parse decodes them: "text\u005fconfig" is
                // text_config, and a second num_hidden_layers written with an escape is a
                // duplicate.
                const std::string key = decodedJsonString(text.substr(start, end - start));
                Level &level = stack.back();
                level.expectKey = false;
                if (!level.keys.insert(key).second) {
                    badAt = start;
                    problem = "duplicate key \"" + key + "\"";
                    return false;
                }
                if (level.record)
                    level.record->emplace(key, start);
                lastKey = key;
            }
            continue;
        }
        if (c == '{' || c == '[') {
            if (static_cast<int>(stack.size()) >= kMaxJsonNesting) {
                badAt = i;
                problem = "nesting too deep (more than " + std::to_string(kMaxJsonNesting)
                          + " levels)";
                return false;
            }
            Level level;
            level.object = c == '{';
            level.expectKey = level.object;
            if (level.object && stack.empty())
                level.record = &out.root;
            else if (level.object && stack.size() == 1 && stack.back().object
                     && lastKey == "text_config")
                level.record = &out.textConfig;
            stack.push_back(std::move(level));
        } else if (c == '}' || c == ']') {
            if (!stack.empty())
                stack.pop_back();
        } else if (c == ',' && !stack.empty() && stack.back().object) {
            stack.back().expectKey = true;
        }
        ++i;
    }
    return true;
}

struct Reader
{
    const json &j;
    const std::string &text;
    const std::map<std::string, std::size_t> &keyAt; // where this object's keys start
    std::size_t objectStart;                         // where this object starts
    LoadError &error;

    // Errors point at the key they are about, or at the object that lacks it.
    bool fail(const std::string &key, const std::string &message)
    {
        const auto it = keyAt.find(key);
        positionOf(text, it != keyAt.end() ? it->second : objectStart, error.line, error.column);
        error.message = message;
        return false;
    }

    // The first of `keys` that is present; null when none is.
    const json *find(std::initializer_list<const char *> names, std::string *found = nullptr) const
    {
        for (const char *k : names) {
            auto it = j.find(k);
            if (it != j.end() && !it->is_null()) {
                if (found)
                    *found = k;
                return &*it;
            }
        }
        return nullptr;
    }

    bool integer(std::initializer_list<const char *> names,
                 std::optional<std::int64_t> &out,
                 bool required,
                 std::int64_t min = 1,
                 std::int64_t max = 100'000'000)
    {
        std::string key = *names.begin();
        const json *v = find(names, &key);
        if (!v) {
            if (required)
                return fail(key, "config.json has no '" + key + "'; expected a whole number");
            return true;
        }
        // Whole numbers may be written as 4096 or 4096.0; anything past int64 is out of range
        // (checked before converting: a double-to-integer cast out of range is undefined).
        std::int64_t n = 0;
        if (v->is_number_integer()
            && !(v->is_number_unsigned()
                 && v->get<std::uint64_t>() > static_cast<std::uint64_t>(max))) {
            n = v->get<std::int64_t>();
        } else if (v->is_number_float()) {
            const double d = v->get<double>();
            if (!(d == std::floor(d)) || !std::isfinite(d))
                return fail(key, "'" + key + "' must be a whole number, not " + v->dump());
            if (d < static_cast<double>(min) || d > static_cast<double>(max))
                return fail(key,
                            "'" + key + "' must be between " + std::to_string(min) + " and "
                                + std::to_string(max) + ", not " + v->dump());
            n = static_cast<std::int64_t>(d);
        } else if (v->is_number_unsigned()) {
            n = max
                + (max < std::numeric_limits<std::int64_t>::max()
                       ? 1
                       : 0); // reported as out of range below
        } else {
            return fail(key, "'" + key + "' must be a whole number, not " + v->dump());
        }
        if (n < min || n > max)
            return fail(key,
                        "'" + key + "' must be between " + std::to_string(min) + " and "
                            + std::to_string(max) + ", not " + v->dump());
        out = n;
        return true;
    }

    bool boolean(const char *key, std::optional<bool> &out)
    {
        auto it = j.find(key);
        if (it == j.end() || it->is_null())
            return true;
        if (!it->is_boolean())
            return fail(key, std::string("'") + key + "' must be true or false, not " + it->dump());
        out = it->get<bool>();
        return true;
    }

    bool number(const char *key, std::optional<double> &out)
    {
        auto it = j.find(key);
        if (it == j.end() || it->is_null())
            return true;
        if (!it->is_number())
            return fail(key, std::string("'") + key + "' must be a number, not " + it->dump());
        const double v = it->get<double>();
        if (!(v >= 0 && v < 1))
            return fail(key,
                        std::string("'") + key + "' must be a probability in [0, 1), not "
                            + it->dump());
        out = v;
        return true;
    }

    std::string string(const char *key) const
    {
        auto it = j.find(key);
        return (it != j.end() && it->is_string()) ? it->get<std::string>() : std::string();
    }
};

constexpr const char *kSupported
    = "llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, gemma, gemma2, gemma3, "
      "gemma3_text, phi3, olmo, olmo2, starcoder2, gpt2, gpt_bigcode, falcon";

} // namespace

std::optional<ModelSpec> importHfConfig(const std::string &text,
                                        const std::string &fileName,
                                        LoadError &error)
{
    error = LoadError{};
    error.file = fileName;
    if (!checkInputText(text, fileName, error))
        return std::nullopt;
    json root;
    try {
        if (!parseJson(text, root, error))
            return std::nullopt;
    } catch (const json::exception &e) {
        error.line = error.column = 1;
        error.message = std::string("invalid JSON: ") + e.what();
        return std::nullopt;
    }
    JsonKeyPositions keys;
    std::size_t badAt = 0;
    std::string problem;
    if (!scanJsonKeys(text, keys, badAt, problem)) {
        positionOf(text, badAt, error.line, error.column);
        error.message = problem;
        return std::nullopt;
    }
    const std::size_t rootStart = text.find_first_of("{[");
    if (!root.is_object()) {
        positionOf(text, text.find_first_not_of(" \t\r\n\xEF\xBB\xBF"), error.line, error.column);
        error.message = std::string("a config.json must be a JSON object ({...}), not ")
                        + root.type_name();
        return std::nullopt;
    }
    const json *cfg = &root;
    const std::map<std::string, std::size_t> *cfgKeys = &keys.root;
    std::size_t cfgStart = rootStart;
    if (auto tc = root.find("text_config");
        tc != root.end() && tc->is_object() && !root.contains("num_hidden_layers")) {
        cfg = &*tc; // multimodal wrappers (Gemma 3, Llama 3.2 Vision...) keep the decoder here
        cfgKeys = &keys.textConfig;
        const auto at = keys.root.find("text_config");
        cfgStart = text.find('{', at != keys.root.end() ? at->second : 0);
    }
    Reader r{*cfg, text, *cfgKeys, cfgStart, error};
    Reader top{root, text, keys.root, rootStart, error};
    std::string type = r.string("model_type");
    if (type.empty() && cfg != &root)
        type = top.string("model_type");
    if (type.empty()) {
        (cfg->contains("model_type") ? r : top)
            .fail("model_type",
                  "config.json has no 'model_type' string; supported: " + std::string(kSupported));
        return std::nullopt;
    }

    ModelSpec s;
    ModelFamily family = ModelFamily::Llama;
    const bool llamaLike = type == "llama" || type == "mistral" || type == "mixtral"
                           || type == "qwen2" || type == "qwen3" || type == "qwen3_moe"
                           || type == "phi3" || type == "olmo" || type == "olmo2"
                           || type == "starcoder2";
    const bool gemma = type == "gemma" || type == "gemma2" || type == "gemma3"
                       || type == "gemma3_text";
    if (gemma)
        family = ModelFamily::Gemma;
    else if (type == "gpt2")
        family = ModelFamily::Gpt2;
    else if (type == "gpt_bigcode")
        family = ModelFamily::BigCode;
    else if (type == "falcon" || type == "RefinedWeb" || type == "RefinedWebModel")
        family = ModelFamily::Falcon;
    else if (!llamaLike) {
        (cfg->contains("model_type") ? r : top)
            .fail("model_type",
                  "model_type '" + type
                      + "' is not supported; supported: " + std::string(kSupported));
        return std::nullopt;
    }
    s.family = family;

    if (!r.integer({"num_hidden_layers", "n_layer", "num_layers"}, s.layers, true, 1, 100'000)
        || !r.integer({"hidden_size", "n_embd", "d_model"}, s.hidden_size, true, 1, 10'000'000)
        || !r.integer({"num_attention_heads", "n_head"}, s.attention_heads, true, 1, 100'000)
        || !r.integer({"vocab_size"}, s.vocab_size, true, 1, 100'000'000)
        || !r.integer({"max_position_embeddings", "n_positions", "n_ctx"},
                      s.max_position_embeddings,
                      false,
                      1,
                      100'000'000)
        || !r.integer({"head_dim"}, s.head_dim, false, 1, 100'000))
        return std::nullopt;
    const std::int64_t h = *s.hidden_size;
    if (!s.head_dim) {
        // transformers divides hidden_size among the heads when head_dim is not given, and
        // refuses a width that does not divide (the attention modules check it).
        if (h % *s.attention_heads != 0) {
            std::string headsKey = "num_attention_heads";
            r.find({"num_attention_heads", "n_head"}, &headsKey);
            r.fail(headsKey,
                   "hidden_size (" + std::to_string(h) + ") is not a multiple of " + headsKey + " ("
                       + std::to_string(*s.attention_heads) + ") and config.json gives no head_dim");
            return std::nullopt;
        }
        s.head_dim = h / *s.attention_heads;
    }

    // MLP width.
    if (type == "qwen3_moe" || type == "mixtral") {
        if (type == "qwen3_moe") {
            if (!r.integer({"moe_intermediate_size"}, s.intermediate_size, true, 1, 10'000'000)
                || !r.integer({"num_experts"}, s.experts, true, 1, 100'000))
                return std::nullopt;
        } else if (!r.integer({"intermediate_size"}, s.intermediate_size, true, 1, 10'000'000)
                   || !r.integer({"num_local_experts"}, s.experts, true, 1, 100'000)) {
            return std::nullopt;
        }
        if (!r.integer({"num_experts_per_tok"}, s.experts_per_token, true, 1, 100'000))
            return std::nullopt;
    } else if (family == ModelFamily::Gpt2 || family == ModelFamily::BigCode) {
        if (!r.integer({"n_inner"}, s.intermediate_size, false, 1, 10'000'000))
            return std::nullopt;
        if (!s.intermediate_size)
            s.intermediate_size = 4 * h;
    } else if (family == ModelFamily::Falcon) {
        if (!r.integer({"ffn_hidden_size"}, s.intermediate_size, false, 1, 10'000'000))
            return std::nullopt;
        if (!s.intermediate_size)
            s.intermediate_size = 4 * h;
    } else if (!r.integer({"intermediate_size"}, s.intermediate_size, true, 1, 10'000'000)) {
        return std::nullopt;
    }

    // Key/value heads.
    if (family == ModelFamily::BigCode) {
        std::optional<bool> mq;
        if (!r.boolean("multi_query", mq))
            return std::nullopt;
        s.kv_heads = mq.value_or(true) ? 1 : *s.attention_heads;
    } else if (family == ModelFamily::Falcon) {
        std::optional<bool> newArch, mq, parallel, bias;
        if (!r.boolean("new_decoder_architecture", newArch) || !r.boolean("multi_query", mq)
            || !r.boolean("parallel_attn", parallel) || !r.boolean("bias", bias))
            return std::nullopt;
        if (newArch.value_or(false)) {
            if (!r.integer({"num_kv_heads", "n_head_kv"}, s.kv_heads, false, 1, 100'000))
                return std::nullopt;
            s.norms_per_layer = 2; // separate ln_attn and ln_mlp
        } else {
            s.kv_heads = mq.value_or(true) ? 1 : *s.attention_heads;
            s.norms_per_layer = 1;
        }
        s.parallel_attention = parallel.value_or(true);
        if (bias.value_or(false))
            s.qkv_bias = s.o_bias = s.mlp_bias = true;
    } else if (!r.integer({"num_key_value_heads"}, s.kv_heads, false, 1, 100'000)) {
        return std::nullopt;
    }
    if (!s.kv_heads)
        s.kv_heads = *s.attention_heads;

    // Embedding tying: HF's PretrainedConfig default is true; Llama-family configs default to false.
    std::optional<bool> tied;
    if (!r.boolean("tie_word_embeddings", tied))
        return std::nullopt;
    s.tied_embeddings = tied.value_or(
        !(llamaLike && type != "starcoder2" && type != "olmo" && type != "olmo2"));

    // Biases and norms per family.
    std::optional<bool> attnBias, mlpBias;
    if (!r.boolean("attention_bias", attnBias) || !r.boolean("mlp_bias", mlpBias))
        return std::nullopt;
    if (type == "qwen2")
        s.qkv_bias = true;
    if (attnBias.value_or(false))
        s.qkv_bias = s.o_bias = true;
    if (mlpBias.value_or(false))
        s.mlp_bias = true;
    if (type == "qwen3" || type == "qwen3_moe" || type == "gemma3" || type == "gemma3_text"
        || type == "olmo2")
        s.qk_norm = true;
    if (type == "gemma2" || type == "gemma3" || type == "gemma3_text")
        s.norms_per_layer = 4;
    if (type == "olmo")
        s.norm = NormKind::LayerNormNoParams;
    if (type == "starcoder2") {
        std::optional<bool> useBias;
        if (!r.boolean("use_bias", useBias))
            return std::nullopt;
        s.norm = NormKind::LayerNorm;
        s.mlp = MlpKind::Gelu;
        if (useBias.value_or(true))
            s.qkv_bias = s.o_bias = s.mlp_bias = true;
    }
    if (family == ModelFamily::Gpt2) {
        const std::string act = r.string("activation_function");
        if (!act.empty() && act != "gelu_new")
            s.mlp = MlpKind::Gelu;
        if (!r.number("attn_pdrop", s.attention_dropout)
            || !r.number("resid_pdrop", s.hidden_dropout))
            return std::nullopt;
    }
    if (family == ModelFamily::BigCode) {
        if (!r.number("attn_pdrop", s.attention_dropout)
            || !r.number("resid_pdrop", s.hidden_dropout))
            return std::nullopt;
    }
    if (llamaLike || gemma) {
        if (!r.number("attention_dropout", s.attention_dropout))
            return std::nullopt;
        if (!s.attention_dropout)
            s.attention_dropout = 0.0;
        s.hidden_dropout = 0.0;
    }

    // The architecture must make sense on its own (heads divisible by KV heads and so on): an
    // imported model that no scenario could use is an error here, not in the saved scenario.
    Scenario probe = defaultScenario();
    probe.model = s;
    std::string modelProblem, where;
    if (!resolveScenario(probe, PresetCatalog::bundled(), modelProblem, &where)) {
        static const std::map<std::string, const char *> jsonKey
            = {{"model.kv_heads", "num_key_value_heads"},
               {"model.experts_per_token", "num_experts_per_tok"}};
        const auto it = jsonKey.find(where);
        r.fail(it != jsonKey.end() ? it->second : "",
               "config.json describes a model MemBudget cannot use: " + modelProblem);
        return std::nullopt;
    }
    return s;
}

std::optional<ModelSpec> importHfConfigFile(const std::string &path, LoadError &error)
{
    std::string text;
    if (!readInputFile(path, "config.json", text, error))
        return std::nullopt;
    return importHfConfig(text, path, error);
}

} // namespace membudget
