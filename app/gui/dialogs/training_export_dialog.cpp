// SPDX-License-Identifier: GPL-3.0-or-later
#include "dialogs/training_export_dialog.h"

#include <QApplication>
#include <QClipboard>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileDialog>
#include <QFontDatabase>
#include <QFormLayout>
#include <QGuiApplication>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSaveFile>
#include <QScreen>
#include <QVBoxLayout>

#include <algorithm>

namespace membudget {

namespace {

QString formatLabel(TrainingFormat f)
{
    switch (f) {
    case TrainingFormat::Trainer:
        return QObject::tr("Hugging Face Trainer (TrainingArguments, PEFT, bitsandbytes) — Python");
    case TrainingFormat::Sft:
        return QObject::tr("TRL SFTTrainer (SFTConfig) — Python");
    case TrainingFormat::Accelerate:
        return QObject::tr("accelerate launch config (FSDP / DeepSpeed / DDP) — YAML");
    case TrainingFormat::DeepSpeed:
        return QObject::tr("DeepSpeed config (ZeRO, offload, bf16) — JSON");
    }
    return {};
}

} // namespace

TrainingExportDialog::TrainingExportDialog(const Scenario &scenario,
                                           const PresetCatalog &catalog,
                                           const QString &directory,
                                           QWidget *parent)
    : QDialog(parent)
    , m_scenario(scenario)
    , m_catalog(catalog)
    , m_directory(directory)
{
    setObjectName(QStringLiteral("trainingExportDialog"));
    setWindowTitle(tr("Export Training Config"));
    auto *layout = new QVBoxLayout(this);
    auto *form = new QFormLayout;
    m_format = new QComboBox;
    m_format->setObjectName(QStringLiteral("exportFormat"));
    for (int i = 0; i < 4; ++i)
        m_format->addItem(formatLabel(static_cast<TrainingFormat>(i)), i);
    form->addRow(tr("&Format:"), m_format);
    layout->addLayout(form);

    m_preview = new QPlainTextEdit;
    m_preview->setObjectName(QStringLiteral("exportPreview"));
    m_preview->setReadOnly(true);
    m_preview->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_preview->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    // Room for the 100-column header and a screenful of lines, within small screens too.
    const QFontMetrics metrics(m_preview->font());
    const QRect screen
        = (parent ? parent->screen() : QGuiApplication::primaryScreen())->availableGeometry();
    m_preview->setMinimumSize(std::min(metrics.horizontalAdvance(QLatin1Char('m')) * 102,
                                       screen.width() * 8 / 10),
                              std::min(metrics.lineSpacing() * 30, screen.height() * 5 / 10));
    layout->addWidget(m_preview, 1);

    m_notes = new QLabel;
    m_notes->setObjectName(QStringLiteral("exportNotes"));
    m_notes->setWordWrap(true);
    m_notes->setTextFormat(Qt::PlainText);
    m_notes->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_notes);

    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    m_copy = buttons->addButton(tr("&Copy"), QDialogButtonBox::ActionRole);
    m_copy->setObjectName(QStringLiteral("exportCopy"));
    m_save = buttons->addButton(tr("&Save…"), QDialogButtonBox::ActionRole);
    m_save->setObjectName(QStringLiteral("exportSave"));
    layout->addWidget(buttons);

    connect(m_format, &QComboBox::currentIndexChanged, this, &TrainingExportDialog::regenerate);
    connect(m_copy, &QPushButton::clicked, this, &TrainingExportDialog::copy);
    connect(m_save, &QPushButton::clicked, this, &TrainingExportDialog::save);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    regenerate();
}

void TrainingExportDialog::setFormat(TrainingFormat format)
{
    m_format->setCurrentIndex(static_cast<int>(format));
}

TrainingFormat TrainingExportDialog::format() const
{
    return static_cast<TrainingFormat>(m_format->currentIndex());
}

QString TrainingExportDialog::text() const
{
    return m_export ? QString::fromStdString(m_export->text) : QString();
}

void TrainingExportDialog::regenerate()
{
    std::string problem;
    m_export = exportTrainingConfig(m_scenario, m_catalog, format(), problem);
    m_copy->setEnabled(m_export.has_value());
    m_save->setEnabled(m_export.has_value());
    if (!m_export) {
        m_preview->setPlainText(QString());
        m_notes->setText(tr("Nothing to export: %1").arg(QString::fromStdString(problem)));
        return;
    }
    m_preview->setPlainText(QString::fromStdString(m_export->text));
    // JSON carries no comments: its header is shown here instead. The other formats say it in
    // their first lines; here only the count.
    QStringList lines;
    if (format() == TrainingFormat::DeepSpeed) {
        for (const std::string &l : m_export->header)
            lines << QString::fromStdString(l);
    } else if (!m_export->notes.empty()) {
        lines << tr("%n setting(s) could not be expressed: see the comment at the top.",
                    "",
                    static_cast<int>(m_export->notes.size()));
    } else {
        lines << tr("Every setting MemBudget modelled is expressed.");
    }
    m_notes->setText(lines.join(QLatin1Char('\n')));
}

void TrainingExportDialog::copy()
{
    QApplication::clipboard()->setText(text());
}

bool TrainingExportDialog::saveTo(const QString &path, QString &error) const
{
    QSaveFile file(path);
    const QByteArray bytes = text().toUtf8();
    if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() || !file.commit()) {
        error = file.errorString();
        return false;
    }
    return true;
}

void TrainingExportDialog::save()
{
    if (!m_export)
        return;
    const QString suggested = QDir(m_directory.isEmpty() ? QDir::homePath() : m_directory)
                                  .filePath(QString::fromStdString(m_export->fileName));
    const QString path = m_askPath ? m_askPath(suggested)
                                   : QFileDialog::getSaveFileName(this,
                                                                  tr("Save Training Config"),
                                                                  suggested);
    if (path.isEmpty())
        return;
    QString error;
    if (!saveTo(path, error)) {
        m_notes->setText(tr("%1 could not be written: %2; nothing was changed")
                             .arg(QDir::toNativeSeparators(path), error));
        return;
    }
    m_savedPath = path;
    m_notes->setText(tr("Saved %1").arg(QDir::toNativeSeparators(path)));
    Q_EMIT saved(path);
}

} // namespace membudget
