// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// "Open Model from Hugging Face": the user types an id (meta-llama/Llama-3.1-70B) or pastes a model
// page's address; the id is checked as it is typed (nothing is asked of a server until it is valid),
// Fetch downloads its config.json in the background with a progress bar and a Cancel button, and
// the dialog closes with the imported architecture, or stays open saying what went wrong.

#include "hub_config_fetch.h"

#include <QDialog>

class QLabel;
class QLineEdit;
class QProgressBar;
class QPushButton;

namespace membudget {

class HubModelDialog : public QDialog
{
    Q_OBJECT
public:
    explicit HubModelDialog(const HubSettings &settings, QWidget *parent = nullptr);

    void setText(const QString &text);
    // Starts fetching what the line holds (when it is a valid model); the Fetch button does this.
    void startFetch();
    // The fetched model: valid after the dialog was accepted.
    const HubFetchResult &result() const { return m_result; }

    QLineEdit *lineEdit() const { return m_id; }
    QLabel *statusLabel() const { return m_status; }
    QPushButton *fetchButton() const { return m_fetchButton; }
    bool isFetching() const { return m_fetch->isRunning(); }

public Q_SLOTS:
    void reject() override; // cancels a running fetch first

private:
    void validate();
    void onProgress(qint64 received, qint64 total);
    void onFinished(const HubFetchResult &result);
    void setBusy(bool busy);
    void showStatus(const QString &text, bool problem);

    HubConfigFetch *m_fetch;
    QLineEdit *m_id;
    QLabel *m_status;
    QProgressBar *m_progress;
    QPushButton *m_fetchButton;
    QPushButton *m_cancelButton;
    std::optional<HubModelRef> m_ref;
    HubFetchResult m_result;
    bool m_closeAfterCancel = false;
};

} // namespace membudget
