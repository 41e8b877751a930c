// SPDX-License-Identifier: GPL-3.0-or-later
#include "dialogs/export_dialog.h"

#include <QCheckBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QToolButton>

namespace membudget {

ExportDialog::ExportDialog(const QString &path,
                           const AppSettings::ExportOptions &saved,
                           const QString &title,
                           const QString &caption,
                           QWidget *parent)
    : QDialog(parent)
    , m_path(new QLineEdit(path))
    , m_width(new QSpinBox)
    , m_height(new QSpinBox)
    , m_scale(new QDoubleSpinBox)
    , m_withTitle(new QCheckBox(tr("&Title:")))
    , m_title(new QLineEdit(title))
    , m_withCaption(new QCheckBox(tr("&Caption:")))
    , m_caption(new QPlainTextEdit(caption))
{
    setWindowTitle(tr("Export Chart"));
    setObjectName(QStringLiteral("exportDialog"));
    m_path->setToolTip(tr("The format follows the extension: .png, .svg or .pdf"));
    auto *browse = new QToolButton;
    browse->setText(tr("…"));
    browse->setToolTip(tr("Choose the file"));
    connect(browse, &QToolButton::clicked, this, &ExportDialog::browse);
    auto *pathRow = new QHBoxLayout;
    pathRow->addWidget(m_path, 1);
    pathRow->addWidget(browse);

    for (QSpinBox *spin : {m_width, m_height}) {
        spin->setRange(100, 20000);
        spin->setSuffix(tr(" px"));
        spin->setSingleStep(50);
    }
    m_width->setValue(saved.width);
    m_height->setValue(saved.height);
    m_width->setToolTip(tr("Width in pixels (PNG before scaling, SVG) or points (PDF)"));
    m_height->setToolTip(tr("Height in pixels (PNG before scaling, SVG) or points (PDF)"));
    auto *size = new QHBoxLayout;
    size->addWidget(m_width);
    size->addWidget(new QLabel(QStringLiteral("×")));
    size->addWidget(m_height);
    size->addStretch(1);

    m_scale->setRange(0.5, 8);
    m_scale->setDecimals(1);
    m_scale->setSingleStep(0.5);
    m_scale->setSuffix(QStringLiteral("×"));
    m_scale->setValue(saved.scale);
    m_scale->setToolTip(
        tr("PNG only: pixels per logical pixel (2× for high-DPI screens and print)"));

    m_withTitle->setChecked(saved.withTitle);
    m_withCaption->setChecked(saved.withCaption);
    m_caption->setTabChangesFocus(true);
    m_caption->setFixedHeight(m_caption->fontMetrics().lineSpacing() * 4 + 12);

    auto *form = new QFormLayout;
    auto *fileLabel = new QLabel(tr("&File:"));
    fileLabel->setBuddy(m_path);
    form->addRow(fileLabel, pathRow);
    auto *sizeLabel = new QLabel(tr("&Size:"));
    sizeLabel->setBuddy(m_width);
    form->addRow(sizeLabel, size);
    form->addRow(tr("PNG sc&ale:"), m_scale);
    form->addRow(m_withTitle, m_title);
    form->addRow(m_withCaption, m_caption);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel);
    m_ok = buttons->button(QDialogButtonBox::Ok);
    m_ok->setText(tr("Export"));
    auto *layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(m_path, &QLineEdit::textChanged, this, &ExportDialog::updateState);
    connect(m_withTitle, &QCheckBox::toggled, this, &ExportDialog::updateState);
    connect(m_withCaption, &QCheckBox::toggled, this, &ExportDialog::updateState);
    resize(560, sizeHint().height());
    updateState();
}

void ExportDialog::browse()
{
    QString selected;
    const QString file = QFileDialog::getSaveFileName(
        this,
        tr("Export Chart"),
        m_path->text(),
        tr("PNG image (*.png);;SVG drawing (*.svg);;PDF document (*.pdf)"),
        &selected);
    if (file.isEmpty())
        return;
    QString path = file;
    if (QFileInfo(path).suffix().isEmpty())
        path += selected.contains(QLatin1String("svg"))   ? QStringLiteral(".svg")
                : selected.contains(QLatin1String("pdf")) ? QStringLiteral(".pdf")
                                                          : QStringLiteral(".png");
    m_path->setText(path);
}

void ExportDialog::updateState()
{
    const auto format = exportFormatForPath(m_path->text());
    m_ok->setEnabled(format.has_value());
    m_scale->setEnabled(format == ExportFormat::Png);
    m_title->setEnabled(m_withTitle->isChecked());
    m_caption->setEnabled(m_withCaption->isChecked());
}

QString ExportDialog::path() const
{
    return m_path->text();
}

ExportOptions ExportDialog::options() const
{
    ExportOptions o;
    o.width = m_width->value();
    o.height = m_height->value();
    o.scale = m_scale->value();
    if (m_withTitle->isChecked())
        o.title = m_title->text();
    if (m_withCaption->isChecked())
        o.caption = m_caption->toPlainText();
    return o;
}

AppSettings::ExportOptions ExportDialog::savedOptions() const
{
    AppSettings::ExportOptions o;
    o.width = m_width->value();
    o.height = m_height->value();
    o.scale = m_scale->value();
    o.withTitle = m_withTitle->isChecked();
    o.withCaption = m_withCaption->isChecked();
    return o;
}

} // namespace membudget
