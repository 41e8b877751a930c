// SPDX-License-Identifier: GPL-3.0-or-later
#include "document/app_settings.h"

#include "io/scenario_yaml.h"

namespace membudget {

namespace {
constexpr auto kGeometry = "window/geometry";
constexpr auto kState = "window/state";
constexpr auto kSplitter = "window/splitter";
constexpr auto kView = "window/view";
constexpr auto kTheme = "window/theme";
constexpr auto kUnit = "chart/unit";
constexpr auto kLogAxis = "chart/logAxis";
constexpr auto kCollapsed = "controls/collapsed";
constexpr auto kGpus = "scenario/gpus";
constexpr auto kLastDir = "files/lastDirectory";
constexpr auto kRecent = "files/recent";
constexpr auto kExportWidth = "export/width";
constexpr auto kExportHeight = "export/height";
constexpr auto kExportScale = "export/scale";
constexpr auto kExportTitle = "export/title";
constexpr auto kExportCaption = "export/caption";
} // namespace

AppSettings::AppSettings() = default;

AppSettings::AppSettings(const QString &iniFile)
    : m_settings(iniFile, QSettings::IniFormat)
{}

QByteArray AppSettings::windowGeometry() const
{
    return m_settings.value(kGeometry).toByteArray();
}
void AppSettings::setWindowGeometry(const QByteArray &geometry)
{
    m_settings.setValue(kGeometry, geometry);
}
QByteArray AppSettings::windowState() const
{
    return m_settings.value(kState).toByteArray();
}
void AppSettings::setWindowState(const QByteArray &state)
{
    m_settings.setValue(kState, state);
}
QByteArray AppSettings::splitterState() const
{
    return m_settings.value(kSplitter).toByteArray();
}
void AppSettings::setSplitterState(const QByteArray &state)
{
    m_settings.setValue(kSplitter, state);
}

ByteUnit AppSettings::unit() const
{
    // GiB unless GB was chosen: what GPU names, nvidia-smi and PyTorch mean by "80 GB".
    return m_settings.value(kUnit).toString() == QLatin1String("GB") ? ByteUnit::GB : ByteUnit::GiB;
}

void AppSettings::setUnit(ByteUnit unit)
{
    m_settings.setValue(kUnit, unit == ByteUnit::GiB ? QStringLiteral("GiB") : QStringLiteral("GB"));
}

namespace {

// At most kMaxScenarioGpus ids, each once, none empty: what a scenario file may hold. A settings
// file is read on every start, so nothing unbounded may reach it (an earlier version stored a
// scenario's 350,000-entry list there, and every start took a minute).
QStringList boundedGpuIds(const QStringList &ids)
{
    QStringList out;
    for (const QString &id : ids) {
        if (static_cast<std::size_t>(out.size()) == kMaxScenarioGpus)
            break;
        if (!id.isEmpty() && id.size() <= 200 && !out.contains(id))
            out << id;
    }
    return out;
}

} // namespace

QStringList AppSettings::selectedGpus() const
{
    return boundedGpuIds(m_settings.value(kGpus).toStringList());
}
void AppSettings::setSelectedGpus(const QStringList &ids)
{
    // Called after every edit (each slider step): only a real change may make QSettings rewrite
    // its file, which it does (lock, write, fsync, rename) on the next pass of the event loop.
    const QStringList bounded = boundedGpuIds(ids);
    if (bounded != m_settings.value(kGpus).toStringList())
        m_settings.setValue(kGpus, bounded);
}

QString AppSettings::lastDirectory() const
{
    return m_settings.value(kLastDir).toString();
}
void AppSettings::setLastDirectory(const QString &dir)
{
    m_settings.setValue(kLastDir, dir);
}

QStringList AppSettings::recentFiles() const
{
    return m_settings.value(kRecent).toStringList();
}

void AppSettings::setRecentFiles(const QStringList &files)
{
    m_settings.setValue(kRecent, files.mid(0, kMaxRecentFiles));
}

void AppSettings::addRecentFile(const QString &file)
{
    QStringList files = recentFiles();
    files.removeAll(file);
    files.prepend(file);
    setRecentFiles(files);
}

AppSettings::ExportOptions AppSettings::exportOptions() const
{
    ExportOptions o;
    o.width = qBound(100, m_settings.value(kExportWidth, o.width).toInt(), 20000);
    o.height = qBound(100, m_settings.value(kExportHeight, o.height).toInt(), 20000);
    o.scale = qBound(0.5, m_settings.value(kExportScale, o.scale).toDouble(), 8.0);
    o.withTitle = m_settings.value(kExportTitle, o.withTitle).toBool();
    o.withCaption = m_settings.value(kExportCaption, o.withCaption).toBool();
    return o;
}

void AppSettings::setExportOptions(const ExportOptions &o)
{
    m_settings.setValue(kExportWidth, o.width);
    m_settings.setValue(kExportHeight, o.height);
    m_settings.setValue(kExportScale, o.scale);
    m_settings.setValue(kExportTitle, o.withTitle);
    m_settings.setValue(kExportCaption, o.withCaption);
}

AppSettings::Theme AppSettings::theme() const
{
    const QString t = m_settings.value(kTheme).toString();
    return t == QLatin1String("dark")    ? Theme::Dark
           : t == QLatin1String("light") ? Theme::Light
                                         : Theme::System;
}

void AppSettings::setTheme(Theme theme)
{
    m_settings.setValue(kTheme,
                        theme == Theme::Dark    ? QStringLiteral("dark")
                        : theme == Theme::Light ? QStringLiteral("light")
                                                : QStringLiteral("system"));
}

int AppSettings::currentView() const
{
    return m_settings.value(kView, 0).toInt();
}
void AppSettings::setCurrentView(int index)
{
    m_settings.setValue(kView, index);
}

bool AppSettings::logAxis() const
{
    return m_settings.value(kLogAxis, false).toBool();
}
void AppSettings::setLogAxis(bool on)
{
    if (on != logAxis())
        m_settings.setValue(kLogAxis, on);
}

QStringList AppSettings::collapsedSections() const
{
    return m_settings.value(kCollapsed).toStringList();
}
void AppSettings::setCollapsedSections(const QStringList &sections)
{
    if (sections != collapsedSections())
        m_settings.setValue(kCollapsed, sections);
}

void AppSettings::sync()
{
    m_settings.sync();
}

} // namespace membudget
