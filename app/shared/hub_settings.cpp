// SPDX-License-Identifier: GPL-3.0-or-later
#include "hub_settings.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHostAddress>
#include <QStandardPaths>

namespace membudget {

namespace {

constexpr qint64 kMaxTokenFileBytes = 64 * 1024;

bool isTrue(const QByteArray &value)
{
    const QByteArray v = value.trimmed().toLower();
    return v == "1" || v == "true" || v == "yes" || v == "on";
}

// huggingface_hub utils/_auth.py _clean_token: line breaks removed, spaces trimmed. A token is
// visible ASCII only: anything else could not be a token and must not reach an HTTP header.
bool cleanToken(QByteArray raw, QByteArray &token)
{
    raw.replace('\r', QByteArray()).replace('\n', QByteArray());
    raw = raw.trimmed();
    if (raw.isEmpty() || raw.size() > 4096)
        return false;
    for (char c : raw)
        if (static_cast<unsigned char>(c) < 0x21 || static_cast<unsigned char>(c) > 0x7E)
            return false;
    token = raw;
    return true;
}

QString hfHome()
{
    const QByteArray home = qgetenv("HF_HOME");
    if (!home.isEmpty())
        return QString::fromLocal8Bit(home);
    const QByteArray xdg = qgetenv("XDG_CACHE_HOME");
    const QString cache = !xdg.isEmpty() ? QString::fromLocal8Bit(xdg)
                                         : QDir::homePath() + QStringLiteral("/.cache");
    return cache + QStringLiteral("/huggingface");
}

void readToken(HubSettings &s)
{
    for (const char *name : {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"}) {
        const QByteArray value = qgetenv(name);
        if (value.isEmpty())
            continue;
        if (cleanToken(value, s.token))
            s.tokenSource = QString::fromLatin1(name);
        else
            s.warnings << QStringLiteral("%1 is not a token (visible ASCII characters only); "
                                         "no token is sent")
                              .arg(QString::fromLatin1(name));
        return;
    }
    const QByteArray pathVar = qgetenv("HF_TOKEN_PATH");
    const QString path = !pathVar.isEmpty() ? QString::fromLocal8Bit(pathVar)
                                            : hfHome() + QStringLiteral("/token");
    const QFileInfo info(path);
    if (!info.exists())
        return;
    QFile file(path);
    // A regular file of a sensible size: never a FIFO or a device that could block the read.
    if (!info.isFile() || info.size() > kMaxTokenFileBytes || !file.open(QIODevice::ReadOnly)) {
        s.warnings << QStringLiteral("the token file %1 cannot be read; no token is sent")
                          .arg(QDir::toNativeSeparators(path));
        return;
    }
    if (cleanToken(file.read(kMaxTokenFileBytes), s.token))
        s.tokenSource = QDir::toNativeSeparators(path);
    else
        s.warnings << QStringLiteral("the token file %1 holds no usable token; no token is sent")
                          .arg(QDir::toNativeSeparators(path));
}

} // namespace

bool isLoopbackHost(const QString &host)
{
    if (host.compare(QLatin1String("localhost"), Qt::CaseInsensitive) == 0)
        return true;
    const QHostAddress address(host);
    return !address.isNull() && address.isLoopback();
}

QString HubSettings::endpointHost() const
{
    const QString host = endpoint.host().toLower();
    const QString shown = host.contains(QLatin1Char(':'))
                              ? QLatin1Char('[') + host + QLatin1Char(']')
                              : host;
    return endpoint.port() >= 0 ? shown + QLatin1Char(':') + QString::number(endpoint.port())
                                : shown;
}

std::vector<std::string> HubSettings::extraHosts() const
{
    // A pasted address may leave the port out.
    return {endpointHost().toStdString(), endpoint.host().toLower().toStdString()};
}

QString HubSettings::modelPage(const std::string &repoId) const
{
    QString base = endpoint.toString(QUrl::StripTrailingSlash);
    return base + QLatin1Char('/') + QString::fromStdString(repoId);
}

bool parseHubEndpoint(const QString &text, QUrl &endpoint, QString &problem)
{
    const QUrl url(text.trimmed(), QUrl::StrictMode);
    const QString scheme = url.scheme().toLower();
    if (!url.isValid() || url.host().isEmpty()
        || (scheme != QLatin1String("https") && scheme != QLatin1String("http"))) {
        problem
            = QStringLiteral("HF_ENDPOINT '%1' is not an http or https address").arg(text.left(200));
        return false;
    }
    if (!url.userInfo().isEmpty() || url.hasQuery() || url.hasFragment()) {
        problem = QStringLiteral("HF_ENDPOINT '%1' must be a plain address (no user name, query "
                                 "or fragment)")
                      .arg(url.toString(QUrl::RemoveUserInfo));
        return false;
    }
    if (scheme == QLatin1String("http") && !isLoopbackHost(url.host())) {
        problem = QStringLiteral("HF_ENDPOINT '%1' uses plain http: only https is allowed, except "
                                 "for a server on this machine")
                      .arg(url.toString());
        return false;
    }
    endpoint = url.adjusted(QUrl::StripTrailingSlash);
    if (endpoint.path() == QLatin1String("/"))
        endpoint.setPath(QString());
    return true;
}

bool hubSettingsFromEnvironment(HubSettings &settings, QString &problem)
{
    settings = HubSettings{};
    const QByteArray endpoint = qgetenv("HF_ENDPOINT");
    if (!endpoint.isEmpty()
        && !parseHubEndpoint(QString::fromLocal8Bit(endpoint), settings.endpoint, problem))
        return false;
    readToken(settings);
    settings.offline = isTrue(qgetenv("HF_HUB_OFFLINE")) || isTrue(qgetenv("TRANSFORMERS_OFFLINE"));
    const QString cache = QStandardPaths::writableLocation(QStandardPaths::GenericCacheLocation);
    if (!cache.isEmpty())
        settings.cacheDir = cache + QStringLiteral("/membudget/hub");
    return true;
}

} // namespace membudget
