// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Where Hugging Face requests go and what they carry, from the environment variables that the
// Hugging Face libraries themselves read (huggingface_hub constants.py and utils/_auth.py):
//   HF_ENDPOINT        the Hub's address (default https://huggingface.co), for mirrors
//   HF_TOKEN           access token for gated and private models (HUGGING_FACE_HUB_TOKEN, older)
//   HF_TOKEN_PATH      the token file; default $HF_HOME/token
//   HF_HOME            default $XDG_CACHE_HOME/huggingface, else ~/.cache/huggingface
//   HF_HUB_OFFLINE     1/true/yes/on: no request at all, only the cached copy (also TRANSFORMERS_OFFLINE)
// MemBudget keeps its own copies of the config.json files it fetched in
// $XDG_CACHE_HOME/membudget/hub (default ~/.cache/membudget/hub).

#include <QByteArray>
#include <QString>
#include <QStringList>
#include <QUrl>

#include <string>
#include <vector>

namespace membudget {

struct HubSettings
{
    QUrl endpoint{QStringLiteral("https://huggingface.co")};
    QByteArray token;    // sent as "Authorization: Bearer <token>" to the endpoint only
    QString tokenSource; // "HF_TOKEN", or the token file it came from (for messages)
    QString cacheDir;    // empty: no cache
    bool offline = false;
    int timeoutMs = 20000;
    qint64 maxBytes = 1024 * 1024; // a config.json is a few kilobytes (kMaxInputFileBytes)
    int maxRedirects = 5;
    QStringList warnings; // a token file that could not be used, and why

    // The endpoint's host, with ":port" when it names one ("huggingface.co", "127.0.0.1:8080").
    QString endpointHost() const;
    // Hosts accepted in pasted addresses besides huggingface.co and hf.co: the endpoint's.
    std::vector<std::string> extraHosts() const;
    // The model page, for messages: <endpoint>/<id>.
    QString modelPage(const std::string &repoId) const;
};

// Checks an HF_ENDPOINT value: http or https, a host, no user name, query or fragment; plain http
// only for a server on this machine (the token must not cross the network unencrypted).
bool parseHubEndpoint(const QString &text, QUrl &endpoint, QString &problem);

// The settings from the environment; false (with `problem`) when HF_ENDPOINT is unusable.
bool hubSettingsFromEnvironment(HubSettings &settings, QString &problem);

bool isLoopbackHost(const QString &host);

} // namespace membudget
