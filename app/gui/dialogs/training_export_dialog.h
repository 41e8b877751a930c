// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// File > Export Training Config: the scenario as a Trainer / SFTConfig snippet, an accelerate YAML
// or a DeepSpeed JSON (core/export), previewed as it will be written, with what the settings cannot
// express listed beside it; Copy puts it on the clipboard, Save writes it through QSaveFile.

#include "export/training_export.h"

#include <QDialog>

#include <functional>
#include <optional>

class QComboBox;
class QLabel;
class QPlainTextEdit;
class QPushButton;

namespace membudget {

class TrainingExportDialog : public QDialog
{
    Q_OBJECT
public:
    TrainingExportDialog(const Scenario &scenario,
                         const PresetCatalog &catalog,
                         const QString &directory,
                         QWidget *parent = nullptr);

    void setFormat(TrainingFormat format);
    TrainingFormat format() const;
    QString text() const; // what Copy and Save take
    QPlainTextEdit *preview() const { return m_preview; }
    QLabel *notesLabel() const { return m_notes; }
    // Writes the text atomically (QSaveFile); false with `error` set on failure (the old file is
    // kept).
    bool saveTo(const QString &path, QString &error) const;
    QString lastSavedPath() const { return m_savedPath; }
    // How Save asks for the file (a file dialog unless the window's prompts, or a test, say so).
    void setPathPrompt(std::function<QString(const QString &suggested)> prompt)
    {
        m_askPath = std::move(prompt);
    }
    QPushButton *saveButton() const { return m_save; }

Q_SIGNALS:
    void saved(const QString &path);

private:
    void regenerate();
    void copy();
    void save();

    const Scenario m_scenario;
    const PresetCatalog &m_catalog;
    QString m_directory;
    QString m_savedPath;
    std::function<QString(const QString &)> m_askPath;
    std::optional<TrainingExport> m_export;
    QComboBox *m_format;
    QPlainTextEdit *m_preview;
    QLabel *m_notes;
    QPushButton *m_copy;
    QPushButton *m_save;
};

} // namespace membudget
