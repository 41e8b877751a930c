// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Asks where and how to export the chart: file (PNG, SVG or PDF by extension), size, PNG scale
// factor, optional title and caption.

#include "charts/chart_export.h"
#include "document/app_settings.h"

#include <QDialog>

class QCheckBox;
class QDoubleSpinBox;
class QLineEdit;
class QPlainTextEdit;
class QSpinBox;

namespace membudget {

class ExportDialog : public QDialog
{
    Q_OBJECT
public:
    ExportDialog(const QString &path,
                 const AppSettings::ExportOptions &saved,
                 const QString &title,
                 const QString &caption,
                 QWidget *parent = nullptr);

    QString path() const;
    ExportOptions options() const;
    AppSettings::ExportOptions savedOptions() const;

private:
    void browse();
    void updateState();

    QLineEdit *m_path;
    QSpinBox *m_width;
    QSpinBox *m_height;
    QDoubleSpinBox *m_scale;
    QCheckBox *m_withTitle;
    QLineEdit *m_title;
    QCheckBox *m_withCaption;
    QPlainTextEdit *m_caption;
    QPushButton *m_ok = nullptr;
};

} // namespace membudget
