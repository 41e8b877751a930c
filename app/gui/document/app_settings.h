// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Typed access to the application's settings (QSettings underneath). The only place in the app
// that knows setting keys; the core never sees any of it.

#include "base/byte_format.h"

#include <QByteArray>
#include <QSettings>
#include <QString>
#include <QStringList>

namespace membudget {

class AppSettings
{
public:
    // Uses the application's organisation and name (QSettings default constructor).
    AppSettings();
    // A specific file, for tests.
    explicit AppSettings(const QString &iniFile);

    QByteArray windowGeometry() const;
    void setWindowGeometry(const QByteArray &geometry);
    QByteArray windowState() const;
    void setWindowState(const QByteArray &state);
    QByteArray splitterState() const;
    void setSplitterState(const QByteArray &state);

    ByteUnit unit() const; // GiB unless GB was chosen
    void setUnit(ByteUnit unit);

    // The GPUs a new scenario compares against: at most kMaxScenarioGpus distinct ids, whatever the
    // settings file or the caller holds.
    QStringList selectedGpus() const;
    void setSelectedGpus(const QStringList &ids);

    QString lastDirectory() const;
    void setLastDirectory(const QString &dir);

    static constexpr int kMaxRecentFiles = 8;
    QStringList recentFiles() const;
    void setRecentFiles(const QStringList &files);
    // Moves `file` to the front of the list (removing duplicates, keeping at most kMaxRecentFiles).
    void addRecentFile(const QString &file);

    struct ExportOptions
    {
        int width = 1200;
        int height = 700;
        double scale = 2.0;
        bool withTitle = true;
        bool withCaption = true;
    };
    ExportOptions exportOptions() const;
    void setExportOptions(const ExportOptions &options);

    enum class Theme { System, Light, Dark };
    Theme theme() const;
    void setTheme(Theme theme);

    int currentView() const; // 0 chart, 1 ladder, 2 sweep, 3 breakdown
    void setCurrentView(int index);

    bool logAxis() const; // the comparison and ladder charts' memory axis
    void setLogAxis(bool on);

    // The controls panel's folded sections, by object name.
    QStringList collapsedSections() const;
    void setCollapsedSections(const QStringList &sections);

    void sync();

private:
    QSettings m_settings;
};

} // namespace membudget
