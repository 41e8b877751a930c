// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// A Hugging Face model named the way people name one: "meta-llama/Llama-3.1-70B", "hf:gpt2",
// "hf://Qwen/Qwen3-8B@refs/pr/3", or a pasted page address such as
// "https://huggingface.co/mistralai/Mistral-7B-v0.1/tree/main". Everything is checked here, before
// any request: the id follows the Hub's own rules (huggingface_hub utils/_validators.py,
// validate_repo_id: one or two names of [A-Za-z0-9._-], at most 96 characters each, no "--" or
// "..", no leading or trailing '-' or '.', not ending in ".git"), the revision is a plain git ref
// name, and an address must be on a Hub host. Nothing the user typed ever becomes a path outside the
// model's own folder or a request to another server.

#include <optional>
#include <string>
#include <vector>

namespace membudget {

struct HubModelRef
{
    std::string repoId;            // "owner/name" or a legacy single "name" (gpt2)
    std::string revision = "main"; // branch, tag, commit or refs/pr/N

    // "owner/name", or "owner/name@revision" when the revision is not main.
    std::string toString() const;
    bool operator==(const HubModelRef &) const = default;
};

// Hosts whose page addresses name Hub models: huggingface.co, www.huggingface.co, hf.co.
const std::vector<std::string> &defaultHubHosts();

// True when `text` is meant as a Hub model rather than a file or a preset name: it has the hf:
// prefix, is an address (http://, https://, or a Hub host followed by '/'), or is exactly
// "owner/name" with Hub characters. Used by the app's preset search and the command line.
bool looksLikeHubReference(const std::string &text);

// Parses what the user typed. `extraHosts` are further hosts (with ":port" when not the default)
// accepted in addresses: the HF_ENDPOINT host. On failure returns nullopt and says why in
// `problem` (one line, quoting the input escaped).
std::optional<HubModelRef> parseHubModelRef(const std::string &text,
                                            const std::vector<std::string> &extraHosts,
                                            std::string &problem);

bool isValidHubRepoId(const std::string &id, std::string *problem = nullptr);
bool isValidHubRevision(const std::string &revision, std::string *problem = nullptr);

// "<repo id>/resolve/<revision, '/' as %2F>/config.json": the path below the endpoint that serves
// the file (huggingface_hub constants.HUGGINGFACE_CO_URL_TEMPLATE; file_download.hf_hub_url quotes
// the revision with no safe characters).
std::string hubConfigPath(const HubModelRef &ref);

// Where the cached copy of the model's config.json lives below the cache folder, one folder per
// endpoint host: "<host>/models--<owner>--<name>/<revision, '/' as %2F>/config.json" ("--" cannot
// occur in an id, so distinct models never share a folder).
std::string hubCacheRelativePath(const std::string &host, const HubModelRef &ref);

} // namespace membudget
