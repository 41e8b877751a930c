// SPDX-License-Identifier: GPL-3.0-or-later
#include "hub_config_fetch.h"

#include "io/hf_config_import.h"
#include "io/input_file.h"

#include <QDir>
#include <QEventLoop>
#include <QFileInfo>
#include <QLocale>
#include <QNetworkAccessManager>
#include <QNetworkProxy>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QSaveFile>

namespace membudget {

namespace {

bool sameOrigin(const QUrl &a, const QUrl &b)
{
    return a.scheme().compare(b.scheme(), Qt::CaseInsensitive) == 0
           && a.host().compare(b.host(), Qt::CaseInsensitive) == 0
           && a.port(a.scheme() == QLatin1String("https") ? 443 : 80)
                  == b.port(b.scheme() == QLatin1String("https") ? 443 : 80);
}

QString seconds(int ms)
{
    return QString::number(ms / 1000.0, 'g', 3) + QStringLiteral(" s");
}

QString sizeText(qint64 bytes)
{
    return QLocale::c().formattedDataSize(bytes, 1, QLocale::DataSizeIecFormat);
}

// What a server says (its reason phrase) reaches a terminal and a dialog: printable ASCII only.
QString printable(const QString &text)
{
    QString out;
    for (QChar c : text.left(80))
        out += (c.unicode() >= 0x20 && c.unicode() < 0x7F) ? c : QLatin1Char('?');
    return out;
}

QString reasonOf(QNetworkReply *reply)
{
    return printable(reply->attribute(QNetworkRequest::HttpReasonPhraseAttribute).toString());
}

} // namespace

HubConfigFetch::HubConfigFetch(HubSettings settings, QObject *parent)
    : QObject(parent)
    , m_settings(std::move(settings))
    , m_network(new QNetworkAccessManager(this))
{
    // A server on this machine (a mirror, a test) is never reached through a proxy; elsewhere the
    // system's proxy settings (http_proxy, https_proxy, no_proxy) apply.
    if (isLoopbackHost(m_settings.endpoint.host()))
        m_network->setProxy(QNetworkProxy::NoProxy);
    else
        QNetworkProxyFactory::setUseSystemConfiguration(true);
    m_deadline.setSingleShot(true);
    connect(&m_deadline, &QTimer::timeout, this, &HubConfigFetch::onDeadline);
}

HubConfigFetch::~HubConfigFetch()
{
    if (m_reply) {
        m_reply->disconnect(this);
        m_reply->abort();
    }
}

QString HubConfigFetch::cachePath(const HubModelRef &ref) const
{
    if (m_settings.cacheDir.isEmpty())
        return {};
    return QDir(m_settings.cacheDir)
        .filePath(QString::fromStdString(
            hubCacheRelativePath(m_settings.endpointHost().toStdString(), ref)));
}

void HubConfigFetch::start(const HubModelRef &ref)
{
    if (m_running)
        return;
    m_running = true;
    m_result = HubFetchResult{};
    m_result.ref = ref;
    m_body.clear();
    m_redirects = 0;
    m_stop = Stop::None;
    QUrl url = m_settings.endpoint;
    url.setPath(url.path() + QLatin1Char('/') + QString::fromStdString(hubConfigPath(ref)),
                QUrl::TolerantMode);
    m_firstUrl = url;
    m_result.url = url.toString();
    if (m_settings.offline) {
        // No request at all; answer from the event loop like a network reply would.
        QTimer::singleShot(0, this, [this] {
            useCacheOr(QStringLiteral("HF_HUB_OFFLINE is set, so the Hub was not asked"));
        });
        return;
    }
    m_deadline.start(m_settings.timeoutMs);
    send(url);
}

void HubConfigFetch::cancel()
{
    if (m_running && m_reply)
        abortReply(Stop::Cancelled);
}

void HubConfigFetch::send(const QUrl &url)
{
    QNetworkRequest request(url);
    // Redirects are followed here, one at a time: counted, https only, and the token goes to the
    // endpoint alone (a redirect elsewhere, such as a CDN, gets no Authorization header).
    request.setAttribute(QNetworkRequest::RedirectPolicyAttribute,
                         QNetworkRequest::ManualRedirectPolicy);
    request.setTransferTimeout(m_settings.timeoutMs);
    request.setHeader(QNetworkRequest::UserAgentHeader,
                      QStringLiteral("MemBudget/%1").arg(QStringLiteral(MEMBUDGET_VERSION)));
    if (!m_settings.token.isEmpty() && sameOrigin(url, m_settings.endpoint))
        request.setRawHeader("Authorization", "Bearer " + m_settings.token);
    m_body.clear();
    QNetworkReply *reply = m_network->get(request);
    m_reply = reply;
    connect(reply, &QNetworkReply::metaDataChanged, this, &HubConfigFetch::onMetaData);
    connect(reply, &QNetworkReply::readyRead, this, &HubConfigFetch::onReadyRead);
    connect(reply, &QNetworkReply::finished, this, &HubConfigFetch::onReplyFinished);
    connect(reply, &QNetworkReply::downloadProgress, this, &HubConfigFetch::progress);
}

void HubConfigFetch::onMetaData()
{
    if (!m_reply)
        return;
    const int status = m_reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    const QVariant length = m_reply->header(QNetworkRequest::ContentLengthHeader);
    if (status == 200 && length.isValid() && length.toLongLong() > m_settings.maxBytes)
        abortReply(Stop::Oversized);
}

void HubConfigFetch::onReadyRead()
{
    if (!m_reply)
        return;
    // Read at most one byte past the limit, whatever the server claims.
    m_body += m_reply->read(m_settings.maxBytes + 1 - m_body.size());
    if (m_body.size() > m_settings.maxBytes)
        abortReply(Stop::Oversized);
}

void HubConfigFetch::abortReply(Stop why)
{
    if (m_stop == Stop::None)
        m_stop = why;
    if (m_reply)
        m_reply->abort(); // finished() follows, which reports `why`
}

void HubConfigFetch::onDeadline()
{
    abortReply(Stop::TimedOut);
}

void HubConfigFetch::onReplyFinished()
{
    auto *reply = qobject_cast<QNetworkReply *>(sender());
    if (!reply || reply != m_reply)
        return;
    m_reply = nullptr;
    reply->deleteLater();
    if (m_stop == Stop::None && m_body.size() <= m_settings.maxBytes)
        m_body += reply->read(m_settings.maxBytes + 1 - m_body.size());
    if (m_stop == Stop::None && m_body.size() > m_settings.maxBytes
        && reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt() == 200)
        m_stop = Stop::Oversized;
    const QString host = m_settings.endpointHost();
    m_result.httpStatus = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    const QNetworkReply::NetworkError error = reply->error();
    switch (m_stop) {
    case Stop::Cancelled:
        m_result.outcome = HubFetchOutcome::Cancelled;
        m_result.message = tr("Cancelled; nothing was imported");
        finish();
        return;
    case Stop::TimedOut:
        useCacheOr(tr("No answer from %1 within %2").arg(host, seconds(m_settings.timeoutMs)));
        return;
    case Stop::Oversized:
        m_result.message = tr("The answer for %1 is larger than %2, so it is not a config.json; "
                              "nothing was imported")
                               .arg(QString::fromStdString(m_result.ref.toString()),
                                    sizeText(m_settings.maxBytes));
        finish();
        return;
    case Stop::None:
        break;
    }
    const int status = m_result.httpStatus;
    if (status == 0) {
        if (error == QNetworkReply::TimeoutError || error == QNetworkReply::OperationCanceledError)
            useCacheOr(tr("No answer from %1 within %2").arg(host, seconds(m_settings.timeoutMs)));
        else
            useCacheOr(
                tr("Offline: cannot reach %1 (%2)").arg(host, printable(reply->errorString())));
        return;
    }
    if (status >= 300 && status < 400) {
        if (!followRedirect(reply))
            finish();
        return;
    }
    if (status == 200)
        handleAnswer(reply);
    else
        handleHttpError(reply, status);
}

bool HubConfigFetch::followRedirect(QNetworkReply *reply)
{
    const QByteArray location = reply->rawHeader("Location");
    const QUrl target = reply->url().resolved(QUrl::fromEncoded(location, QUrl::StrictMode));
    if (location.isEmpty() || !target.isValid() || target.host().isEmpty()) {
        m_result.message = tr("%1 answered HTTP %2 without a usable address to go to; nothing was "
                              "imported")
                               .arg(m_settings.endpointHost())
                               .arg(m_result.httpStatus);
        return false;
    }
    const bool secure = target.scheme() == QLatin1String("https")
                        || (target.scheme() == QLatin1String("http")
                            && isLoopbackHost(target.host()));
    if (!secure) {
        m_result.message = tr("%1 redirected to %2, which is not an https address; nothing was "
                              "imported")
                               .arg(m_settings.endpointHost(),
                                    target.toString(QUrl::RemoveUserInfo));
        return false;
    }
    if (++m_redirects > m_settings.maxRedirects) {
        m_result.message = tr("More than %1 redirects for %2 (last to %3); nothing was imported")
                               .arg(m_settings.maxRedirects)
                               .arg(QString::fromStdString(m_result.ref.toString()),
                                    target.toString(QUrl::RemoveUserInfo));
        return false;
    }
    m_result.url = target.toString();
    send(target);
    return true;
}

void HubConfigFetch::handleAnswer(QNetworkReply *reply)
{
    const QString type = reply->header(QNetworkRequest::ContentTypeHeader).toString().toLower();
    const QString id = QString::fromStdString(m_result.ref.toString());
    if (type.contains(QLatin1String("text/html"))) {
        m_result.message = tr("%1 answered with a web page, not a config.json, for %2; nothing was "
                              "imported (is HF_ENDPOINT right?)")
                               .arg(m_settings.endpointHost(), id);
        finish();
        return;
    }
    if (!importText(m_body, m_result.url, m_result)) {
        m_result.message
            = tr("The downloaded file is not a usable config.json: %1").arg(m_result.message);
        finish();
        return;
    }
    m_result.outcome = HubFetchOutcome::Downloaded;
    m_result.message = tr("Fetched the config.json of %1 from %2 (%3)")
                           .arg(id, m_settings.endpointHost(), sizeText(m_body.size()));
    writeCache(m_body);
    finish();
}

void HubConfigFetch::handleHttpError(QNetworkReply *reply, int status)
{
    const QByteArray code = reply->rawHeader("X-Error-Code");
    const QString id = QString::fromStdString(m_result.ref.repoId);
    const QString page = m_settings.modelPage(m_result.ref.repoId);
    const QString host = m_settings.endpointHost();
    const bool token = !m_settings.token.isEmpty();
    const QString getAccess
        = token ? tr("accept its licence at %1 with the account of the token from %2")
                      .arg(page, m_settings.tokenSource)
                : tr("accept its licence at %1, then set HF_TOKEN to an access token of that "
                     "account (or log in with `hf auth login`)")
                      .arg(page);
    // huggingface_hub utils/_http.py hf_raise_for_status: the Hub names the reason in X-Error-Code;
    // an unauthenticated request for a private, gated or missing model gets 401 alike.
    if (code == "GatedRepo") {
        m_result.message
            = tr("%1 is a gated model (HTTP %2): %3").arg(id).arg(status).arg(getAccess);
    } else if (status == 401 && token) {
        m_result.message = tr("%1 refused the token from %2 for %3 (HTTP 401): the token may have "
                              "expired, or the model is private or does not exist")
                               .arg(host, m_settings.tokenSource, id);
    } else if (status == 401) {
        m_result.message = tr("%1 says %2 is private, gated or does not exist (HTTP 401): check "
                              "the id; for a gated model, %3")
                               .arg(host, id, getAccess);
    } else if (status == 403) {
        m_result.message = tr("Access to %1 is forbidden (HTTP 403): %2").arg(id, getAccess);
    } else if (status == 404 && code == "RevisionNotFound") {
        m_result.message = tr("%1 has no revision '%2' (HTTP 404)")
                               .arg(id, QString::fromStdString(m_result.ref.revision));
    } else if (status == 404 && code == "EntryNotFound") {
        m_result.message
            = tr("%1 has no config.json (HTTP 404): it is not a transformers model").arg(id);
    } else if (status == 404) {
        m_result.message = tr("No model %1 on %2 (HTTP 404): check the id, owner/name as in the "
                              "address of the model's page")
                               .arg(id, host);
    } else if (status == 429 || status >= 500) {
        useCacheOr(tr("%1 answered HTTP %2 %3").arg(host).arg(status).arg(reasonOf(reply)));
        return;
    } else {
        m_result.message
            = tr("%1 answered HTTP %2 %3 for %4").arg(host).arg(status).arg(reasonOf(reply), id);
    }
    m_result.message += tr("; nothing was imported");
    finish();
}

bool HubConfigFetch::importText(const QByteArray &text,
                                const QString &source,
                                HubFetchResult &result) const
{
    LoadError error;
    auto spec = importHfConfig(text.toStdString(), source.toStdString(), error);
    if (!spec) {
        result.message = QString::fromStdString(error.toString());
        return false;
    }
    result.spec = std::move(spec);
    return true;
}

void HubConfigFetch::useCacheOr(const QString &why)
{
    const QString id = QString::fromStdString(m_result.ref.toString());
    const QString path = cachePath(m_result.ref);
    if (path.isEmpty() || !QFileInfo::exists(path)) {
        m_result.outcome = HubFetchOutcome::Failed;
        m_result.message = tr("%1, and no copy of %2 is cached; nothing was imported").arg(why, id);
        finish();
        return;
    }
    std::string text;
    LoadError error;
    HubFetchResult cached;
    if (!readInputFile(path.toStdString(), "config.json", text, error)
        || !importText(QByteArray::fromStdString(text), path, cached)) {
        m_result.outcome = HubFetchOutcome::Failed;
        m_result.message = tr("%1, and the cached copy of %2 cannot be used: %3")
                               .arg(why,
                                    id,
                                    cached.message.isEmpty()
                                        ? QString::fromStdString(error.toString())
                                        : cached.message);
        finish();
        return;
    }
    m_result.outcome = HubFetchOutcome::FromCache;
    m_result.spec = std::move(cached.spec);
    m_result.cachePath = path;
    m_result.message = tr("%1: used the copy of %2 cached on %3")
                           .arg(why,
                                id,
                                QFileInfo(path).lastModified().toString(
                                    QStringLiteral("yyyy-MM-dd HH:mm")));
    finish();
}

void HubConfigFetch::writeCache(const QByteArray &text)
{
    const QString path = cachePath(m_result.ref);
    if (path.isEmpty())
        return;
    QString problem;
    if (!QDir().mkpath(QFileInfo(path).absolutePath())) {
        problem
            = tr("cannot create %1").arg(QDir::toNativeSeparators(QFileInfo(path).absolutePath()));
    } else {
        QSaveFile file(path);
        // The configs of gated and private models are the user's business: owner-only.
        if (!file.open(QIODevice::WriteOnly) || file.write(text) != text.size()
            || !file.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner)
            || !file.commit())
            problem = file.errorString();
    }
    if (problem.isEmpty())
        m_result.cachePath = path;
    else
        m_result.message += tr(" (not cached: %1)").arg(problem);
}

void HubConfigFetch::finish()
{
    m_deadline.stop();
    m_running = false;
    Q_EMIT finished(m_result);
}

HubFetchResult fetchHubConfig(const HubSettings &settings, const HubModelRef &ref)
{
    HubConfigFetch fetch(settings);
    HubFetchResult result;
    bool done = false;
    QEventLoop loop;
    QObject::connect(&fetch, &HubConfigFetch::finished, &loop, [&](const HubFetchResult &r) {
        result = r;
        done = true;
        loop.quit();
    });
    fetch.start(ref);
    if (!done)
        loop.exec();
    return result;
}

} // namespace membudget
