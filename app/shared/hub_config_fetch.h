// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Fetches a model's config.json from the Hugging Face Hub (Qt Network, asynchronous: the app's
// window never waits) and imports it with the same core function as a file (importHfConfig), so
// the downloaded text meets the same untrusted-input rules: at most 1 MiB, UTF-8, JSON without
// duplicate keys or deep nesting. A config.json that imported is kept in the cache and used, saying
// so, when the Hub cannot be reached. Every outcome ends in one line that says what happened.

#include "hub_settings.h"

#include "hub/hub_model_ref.h"
#include "model/scenario.h"

#include <QDateTime>
#include <QObject>
#include <QPointer>
#include <QTimer>

#include <optional>

class QNetworkAccessManager;
class QNetworkReply;

namespace membudget {

enum class HubFetchOutcome {
    Downloaded, // fetched now (and cached)
    FromCache,  // the Hub could not be reached (or HF_HUB_OFFLINE): the cached copy was used
    Failed,     // nothing usable: `message` says why
    Cancelled,
};

struct HubFetchResult
{
    HubFetchOutcome outcome = HubFetchOutcome::Failed;
    HubModelRef ref;
    std::optional<ModelSpec> spec; // set for Downloaded and FromCache
    QString message;               // one line: what happened, and what to do about a failure
    QString url;                   // the config.json address asked for
    QString cachePath;             // the cached copy (written or read); empty when none
    int httpStatus = 0;            // the last HTTP status, 0 when no answer came

    bool ok() const { return spec.has_value(); }
};

class HubConfigFetch : public QObject
{
    Q_OBJECT
public:
    explicit HubConfigFetch(HubSettings settings, QObject *parent = nullptr);
    ~HubConfigFetch() override;

    const HubSettings &settings() const { return m_settings; }
    // Starts a fetch; finished() follows exactly once, also after cancel(). Ignored while running.
    void start(const HubModelRef &ref);
    void cancel();
    bool isRunning() const { return m_running; }

    // Where the cached copy of `ref` lives (empty without a cache folder).
    QString cachePath(const HubModelRef &ref) const;

Q_SIGNALS:
    void progress(qint64 received, qint64 total);
    void finished(const membudget::HubFetchResult &result);

private:
    enum class Stop { None, Cancelled, TimedOut, Oversized };

    void send(const QUrl &url);
    void onMetaData();
    void onReadyRead();
    void onReplyFinished();
    void onDeadline();
    void abortReply(Stop why);
    bool followRedirect(QNetworkReply *reply);
    void handleAnswer(QNetworkReply *reply);
    void handleHttpError(QNetworkReply *reply, int status);
    // Imports `text`; on success fills result.spec.
    bool importText(const QByteArray &text, const QString &source, HubFetchResult &result) const;
    // After a failure to reach the Hub: the cached copy, or a failure naming both problems.
    void useCacheOr(const QString &why);
    void writeCache(const QByteArray &text);
    void finish();

    HubSettings m_settings;
    QNetworkAccessManager *m_network = nullptr;
    QPointer<QNetworkReply> m_reply;
    QTimer m_deadline;
    QByteArray m_body;
    QUrl m_firstUrl;
    int m_redirects = 0;
    Stop m_stop = Stop::None;
    bool m_running = false;
    HubFetchResult m_result;
};

// Fetches and waits (a local event loop): for the command line. Needs a QCoreApplication.
HubFetchResult fetchHubConfig(const HubSettings &settings, const HubModelRef &ref);

} // namespace membudget

Q_DECLARE_METATYPE(membudget::HubFetchResult)
