// SPDX-License-Identifier: GPL-3.0-or-later
#include "hub/hub_model_ref.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

namespace membudget {

namespace {

constexpr std::size_t kMaxInputLength = 2048;
constexpr std::size_t kMaxNameLength = 96; // huggingface_hub validate_repo_id
constexpr std::size_t kMaxRevisionLength = 256;

bool isNameChar(char c)
{
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
}

bool startsWith(const std::string &s, const std::string &prefix)
{
    return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

std::string lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) {
        return static_cast<char>(std::tolower(c));
    });
    return s;
}

// The input quoted in messages: printable ASCII as is, everything else as \xNN, cut when long.
std::string quoted(const std::string &text)
{
    std::string out = "'";
    for (std::size_t i = 0; i < text.size() && i < 120; ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c >= 0x20 && c < 0x7F && c != '\'') {
            out += static_cast<char>(c);
        } else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", c);
            out += buf;
        }
    }
    return out + (text.size() > 120 ? "...'" : "'");
}

std::string trimmed(const std::string &s)
{
    const auto first = s.find_first_not_of(" \t\r\n");
    if (first == std::string::npos)
        return {};
    const auto last = s.find_last_not_of(" \t\r\n");
    return s.substr(first, last - first + 1);
}

bool fail(std::string *problem, std::string message)
{
    if (problem)
        *problem = std::move(message);
    return false;
}

// %XX decoding of one path segment of an address; false on a malformed escape.
bool percentDecode(const std::string &in, std::string &out)
{
    out.clear();
    for (std::size_t i = 0; i < in.size(); ++i) {
        if (in[i] != '%') {
            out += in[i];
            continue;
        }
        if (i + 2 >= in.size() || !std::isxdigit(static_cast<unsigned char>(in[i + 1]))
            || !std::isxdigit(static_cast<unsigned char>(in[i + 2])))
            return false;
        out += static_cast<char>(std::stoi(in.substr(i + 1, 2), nullptr, 16));
        i += 2;
    }
    return true;
}

std::vector<std::string> splitPath(const std::string &path)
{
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (start <= path.size()) {
        const auto slash = path.find('/', start);
        const std::string part = path.substr(start,
                                             slash == std::string::npos ? std::string::npos
                                                                        : slash - start);
        if (!part.empty())
            parts.push_back(part);
        if (slash == std::string::npos)
            break;
        start = slash + 1;
    }
    return parts;
}

bool isRepoTypePrefix(const std::string &segment)
{
    return segment == "datasets" || segment == "spaces" || segment == "buckets"
           || segment == "kernels";
}

std::optional<HubModelRef> refFrom(const std::string &id,
                                   const std::string &revision,
                                   const std::string &input,
                                   std::string &problem)
{
    std::string why;
    if (!isValidHubRepoId(id, &why)) {
        problem = "not a Hugging Face model id: " + quoted(input) + ": " + why;
        return std::nullopt;
    }
    if (!isValidHubRevision(revision, &why)) {
        problem = "not a usable revision in " + quoted(input) + ": " + why;
        return std::nullopt;
    }
    return HubModelRef{id, revision};
}

// "owner/name", "name", "models/owner/name", each with an optional "@revision".
std::optional<HubModelRef> parsePlain(std::string text,
                                      const std::string &input,
                                      std::string &problem)
{
    std::string revision = "main";
    if (const auto at = text.find('@'); at != std::string::npos) {
        revision = text.substr(at + 1);
        text.resize(at);
    }
    const auto slash = text.find('/');
    if (slash != std::string::npos) {
        const std::string first = text.substr(0, slash);
        if (isRepoTypePrefix(first)) {
            problem = quoted(input) + " names a Hugging Face " + first.substr(0, first.size() - 1)
                      + ", not a model";
            return std::nullopt;
        }
        if (first == "models")
            text = text.substr(slash + 1);
    }
    return refFrom(text, revision, input, problem);
}

// An address: [scheme://]host[:port]/path[?query][#fragment] on a Hub host.
std::optional<HubModelRef> parseAddress(const std::string &address,
                                        const std::vector<std::string> &hosts,
                                        const std::string &input,
                                        std::string &problem)
{
    std::string rest = address;
    const auto scheme = rest.find("://");
    if (scheme != std::string::npos)
        rest = rest.substr(scheme + 3);
    const auto slash = rest.find('/');
    const std::string authority = lower(rest.substr(0, slash));
    if (authority.find('@') != std::string::npos) {
        problem = quoted(input) + " has a user name in it; paste the model page's address";
        return std::nullopt;
    }
    if (std::find(hosts.begin(), hosts.end(), authority) == hosts.end()) {
        problem = quoted(input) + " is not a Hugging Face address (expected huggingface.co";
        if (hosts.size() > defaultHubHosts().size()) // the HF_ENDPOINT host
            problem += " or " + hosts[defaultHubHosts().size()];
        problem += ")";
        return std::nullopt;
    }
    std::string path = slash == std::string::npos ? std::string() : rest.substr(slash);
    path = path.substr(0, path.find_first_of("?#"));
    std::vector<std::string> parts;
    for (const std::string &raw : splitPath(path)) {
        std::string decoded;
        if (!percentDecode(raw, decoded)) {
            problem = quoted(input) + " has a malformed %-escape";
            return std::nullopt;
        }
        parts.push_back(decoded);
    }
    if (!parts.empty() && isRepoTypePrefix(parts.front())) {
        problem = quoted(input) + " is a Hugging Face "
                  + parts.front().substr(0, parts.front().size() - 1) + " page, not a model";
        return std::nullopt;
    }
    if (!parts.empty() && parts.front() == "models")
        parts.erase(parts.begin());
    if (parts.empty()) {
        problem = quoted(input) + " names no model; paste the model page's address";
        return std::nullopt;
    }
    // owner/name[/tree|blob|resolve|raw|blame|commits/<revision>[/file...]], or a legacy single name.
    static const char *const actions[] = {"tree", "blob", "resolve", "raw", "blame", "commits"};
    auto isAction = [](const std::string &s) {
        return std::any_of(std::begin(actions), std::end(actions), [&](const char *a) {
            return s == a;
        });
    };
    std::size_t nameParts = 2;
    if (parts.size() == 1 || isAction(parts[1]))
        nameParts = 1;
    std::string id = parts[0];
    if (nameParts == 2)
        id += "/" + parts[1];
    std::string revision = "main";
    if (parts.size() > nameParts + 1 && isAction(parts[nameParts]))
        revision = parts[nameParts + 1];
    return refFrom(id, revision, input, problem);
}

bool startsWithHost(const std::string &text, const std::vector<std::string> &hosts)
{
    const std::string l = lower(text);
    return std::any_of(hosts.begin(), hosts.end(), [&](const std::string &h) {
        return startsWith(l, h + "/");
    });
}

} // namespace

std::string HubModelRef::toString() const
{
    return revision == "main" ? repoId : repoId + "@" + revision;
}

const std::vector<std::string> &defaultHubHosts()
{
    static const std::vector<std::string> hosts = {"huggingface.co", "www.huggingface.co", "hf.co"};
    return hosts;
}

bool isValidHubRepoId(const std::string &id, std::string *problem)
{
    if (id.empty())
        return fail(problem, "the id is empty");
    const auto slash = id.find('/');
    if (slash != std::string::npos && id.find('/', slash + 1) != std::string::npos)
        return fail(problem, "an id is 'owner/name', with one '/'");
    const std::string parts[2] = {id.substr(0, slash),
                                  slash == std::string::npos ? std::string() : id.substr(slash + 1)};
    for (int i = 0; i < (slash == std::string::npos ? 1 : 2); ++i) {
        const std::string &p = parts[i];
        if (p.empty())
            return fail(problem, "the owner and the name must not be empty");
        if (p.size() > kMaxNameLength)
            return fail(problem, "a name has at most 96 characters");
        if (!std::all_of(p.begin(), p.end(), isNameChar))
            return fail(problem, "names use only letters, digits, '-', '_' and '.'");
        if (p.front() == '-' || p.front() == '.' || p.back() == '-' || p.back() == '.')
            return fail(problem, "a name cannot start or end with '-' or '.'");
    }
    // The Hub's addresses put a repository type before the owner (huggingface.co/datasets/...), so
    // these words name no owner; accepting one would make "models/x" mean two different models.
    if (slash != std::string::npos && (isRepoTypePrefix(parts[0]) || parts[0] == "models"))
        return fail(problem, "'" + parts[0] + "' is not an owner name");
    if (id.find("--") != std::string::npos || id.find("..") != std::string::npos)
        return fail(problem, "'--' and '..' are not allowed");
    if (id.size() >= 4 && id.compare(id.size() - 4, 4, ".git") == 0)
        return fail(problem, "an id cannot end in '.git'");
    return true;
}

bool isValidHubRevision(const std::string &revision, std::string *problem)
{
    if (revision.empty())
        return fail(problem, "the revision after '@' is empty");
    if (revision.size() > kMaxRevisionLength)
        return fail(problem, "a revision has at most 256 characters");
    for (char c : revision)
        if (!isNameChar(c) && c != '/')
            return fail(problem, "a revision uses only letters, digits, '-', '_', '.' and '/'");
    for (const std::string &segment : splitPath(revision))
        if (segment == "." || segment.find("..") != std::string::npos)
            return fail(problem, "'.' and '..' are not allowed in a revision");
    if (revision.front() == '/' || revision.back() == '/'
        || revision.find("//") != std::string::npos)
        return fail(problem, "a revision cannot start or end with '/' or hold '//'");
    return true;
}

bool looksLikeHubReference(const std::string &input)
{
    const std::string text = trimmed(input);
    if (startsWith(text, "hf:"))
        return true;
    const std::string l = lower(text);
    if (startsWith(l, "http://") || startsWith(l, "https://") || startsWith(l, "huggingface.co/")
        || startsWith(l, "hf.co/") || startsWith(l, "www.huggingface.co/"))
        return true;
    const std::string id = text.substr(0, text.find('@'));
    return std::count(id.begin(), id.end(), '/') == 1 && isValidHubRepoId(id);
}

std::optional<HubModelRef> parseHubModelRef(const std::string &input,
                                            const std::vector<std::string> &extraHosts,
                                            std::string &problem)
{
    problem.clear();
    const std::string text = trimmed(input);
    if (text.empty()) {
        problem = "no model given: type an id such as meta-llama/Llama-3.1-8B";
        return std::nullopt;
    }
    if (text.size() > kMaxInputLength) {
        problem = "the model id or address is too long (more than 2048 characters)";
        return std::nullopt;
    }
    for (char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (u <= 0x20 || u >= 0x7F) {
            problem = "not a Hugging Face model id: " + quoted(text)
                      + ": ids and addresses have no spaces, control or non-ASCII characters";
            return std::nullopt;
        }
    }
    std::vector<std::string> hosts = defaultHubHosts();
    for (const std::string &h : extraHosts)
        if (!h.empty())
            hosts.push_back(lower(h));
    if (startsWith(text, "hf://"))
        return parsePlain(text.substr(5), text, problem);
    if (startsWith(text, "hf:"))
        return parsePlain(text.substr(3), text, problem);
    const std::string l = lower(text);
    if (l.find("://") != std::string::npos) {
        if (!startsWith(l, "https://") && !startsWith(l, "http://")) {
            problem = quoted(text) + " is not a Hugging Face address (only http and https)";
            return std::nullopt;
        }
        return parseAddress(text, hosts, text, problem);
    }
    if (startsWithHost(text, hosts))
        return parseAddress(text, hosts, text, problem);
    return parsePlain(text, text, problem);
}

std::string hubConfigPath(const HubModelRef &ref)
{
    std::string revision;
    for (char c : ref.revision)
        revision += c == '/' ? std::string("%2F") : std::string(1, c);
    return ref.repoId + "/resolve/" + revision + "/config.json";
}

std::string hubCacheRelativePath(const std::string &host, const HubModelRef &ref)
{
    std::string folder;
    for (char c : lower(host))
        folder += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-') ? c : '_';
    if (folder.empty() || folder.find_first_not_of('.') == std::string::npos)
        folder.assign(1, '_'); // not "." or ".."
    std::string model = "models--";
    for (char c : ref.repoId)
        model += c == '/' ? std::string("--") : std::string(1, c);
    std::string revision;
    for (char c : ref.revision)
        revision += c == '/' ? std::string("%2F") : std::string(1, c);
    return folder + "/" + model + "/" + revision + "/config.json";
}

} // namespace membudget
