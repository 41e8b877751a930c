// SPDX-License-Identifier: GPL-3.0-or-later
#include "dialogs/hub_model_dialog.h"

#include <QDialogButtonBox>
#include <QDir>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QVBoxLayout>

#include <algorithm>

namespace membudget {

HubModelDialog::HubModelDialog(const HubSettings &settings, QWidget *parent)
    : QDialog(parent)
    , m_fetch(new HubConfigFetch(settings, this))
{
    setObjectName(QStringLiteral("hubModelDialog"));
    setWindowTitle(tr("Open Model from Hugging Face"));
    auto *layout = new QVBoxLayout(this);

    auto *intro = new QLabel(tr("Type a model id such as <b>meta-llama/Llama-3.1-8B</b>, or paste "
                                "the address of the model's page. MemBudget reads the model's "
                                "config.json; no weights are downloaded."));
    intro->setWordWrap(true);
    layout->addWidget(intro);

    m_id = new QLineEdit;
    m_id->setObjectName(QStringLiteral("hubModelId"));
    m_id->setPlaceholderText(QStringLiteral("owner/name or https://huggingface.co/owner/name"));
    m_id->setClearButtonEnabled(true);
    m_id->setMinimumWidth(fontMetrics().horizontalAdvance(QLatin1Char('m')) * 44);
    layout->addWidget(m_id);

    // Where the request goes and what it carries, so that nothing happens behind the user's back.
    const HubSettings &s = m_fetch->settings();
    QString where = tr("From %1").arg(s.endpoint.toString().toHtmlEscaped());
    where += s.token.isEmpty() ? tr(", without a token (set HF_TOKEN for gated models)")
                               : tr(", with the token from %1").arg(s.tokenSource.toHtmlEscaped());
    if (s.offline)
        where += tr("; HF_HUB_OFFLINE is set, so only cached copies are used");
    else if (!s.cacheDir.isEmpty())
        where += tr("; copies kept in %1 for offline use")
                     .arg(QDir::toNativeSeparators(s.cacheDir).toHtmlEscaped());
    for (const QString &w : s.warnings)
        where += QStringLiteral("<br>") + w.toHtmlEscaped();
    auto *whereLabel = new QLabel(QStringLiteral("<small>%1</small>").arg(where));
    whereLabel->setObjectName(QStringLiteral("hubWhere"));
    whereLabel->setWordWrap(true);
    layout->addWidget(whereLabel);

    m_progress = new QProgressBar;
    m_progress->setObjectName(QStringLiteral("hubProgress"));
    m_progress->setTextVisible(false);
    m_progress->setRange(0, 0);
    m_progress->hide();
    layout->addWidget(m_progress);

    m_status = new QLabel;
    m_status->setObjectName(QStringLiteral("hubStatus"));
    m_status->setWordWrap(true);
    m_status->setTextFormat(Qt::PlainText); // messages quote what servers and files said
    m_status->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_status->setMinimumHeight(fontMetrics().lineSpacing() * 3);
    m_status->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    layout->addWidget(m_status, 1);

    auto *buttons = new QDialogButtonBox;
    m_fetchButton = buttons->addButton(tr("&Fetch"), QDialogButtonBox::AcceptRole);
    m_fetchButton->setObjectName(QStringLiteral("hubFetch"));
    m_fetchButton->setDefault(true);
    m_cancelButton = buttons->addButton(QDialogButtonBox::Cancel);
    layout->addWidget(buttons);

    connect(m_id, &QLineEdit::textChanged, this, &HubModelDialog::validate);
    connect(m_fetchButton, &QPushButton::clicked, this, &HubModelDialog::startFetch);
    connect(m_cancelButton, &QPushButton::clicked, this, &HubModelDialog::reject);
    connect(m_fetch, &HubConfigFetch::progress, this, &HubModelDialog::onProgress);
    connect(m_fetch, &HubConfigFetch::finished, this, &HubModelDialog::onFinished);
    validate();
}

void HubModelDialog::setText(const QString &text)
{
    m_id->setText(text.trimmed());
}

void HubModelDialog::validate()
{
    if (m_fetch->isRunning())
        return;
    std::string problem;
    m_ref = parseHubModelRef(m_id->text().toStdString(), m_fetch->settings().extraHosts(), problem);
    m_fetchButton->setEnabled(m_ref.has_value());
    if (m_id->text().trimmed().isEmpty())
        showStatus(QString(), false);
    else if (!m_ref)
        showStatus(QString::fromStdString(problem), true);
    else
        showStatus(tr("Ready to fetch %1").arg(QString::fromStdString(m_ref->toString())), false);
}

void HubModelDialog::startFetch()
{
    validate();
    if (!m_ref || m_fetch->isRunning())
        return;
    setBusy(true);
    showStatus(tr("Asking %1 for the config.json of %2…")
                   .arg(m_fetch->settings().endpointHost(),
                        QString::fromStdString(m_ref->toString())),
               false);
    m_fetch->start(*m_ref);
}

void HubModelDialog::reject()
{
    if (m_fetch->isRunning()) {
        // The answer to the cancelled request closes the dialog.
        m_closeAfterCancel = true;
        m_fetch->cancel();
        return;
    }
    QDialog::reject();
}

void HubModelDialog::onProgress(qint64 received, qint64 total)
{
    if (total > 0) {
        m_progress->setRange(0, 1000);
        m_progress->setValue(static_cast<int>(1000 * std::min(received, total) / total));
    }
}

void HubModelDialog::onFinished(const HubFetchResult &result)
{
    setBusy(false);
    if (result.ok()) {
        m_result = result;
        accept();
        return;
    }
    if (m_closeAfterCancel) {
        QDialog::reject();
        return;
    }
    showStatus(result.message, result.outcome != HubFetchOutcome::Cancelled);
}

void HubModelDialog::setBusy(bool busy)
{
    m_progress->setVisible(busy);
    m_progress->setRange(0, 0); // busy indicator until the size is known
    m_id->setReadOnly(busy);
    m_fetchButton->setEnabled(!busy && m_ref.has_value());
}

void HubModelDialog::showStatus(const QString &text, bool problem)
{
    m_status->setProperty("problem", problem);
    // In the theme's own text colour with a marker, readable in light and dark themes alike.
    m_status->setText(problem ? QStringLiteral("⚠ ") + text : text);
}

} // namespace membudget
