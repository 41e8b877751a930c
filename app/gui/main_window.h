// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The main window: controls on the left, the chart views in the middle (comparison, technique
// ladder, sweep), verdict and "make it fit" below; file handling, export, settings.

#include "charts/budget_chart.h"
#include "charts/chart_export.h"
#include "document/app_settings.h"
#include "hub_settings.h"

#include <QMainWindow>
#include <QPointer>

#include <memory>
#include <optional>
#include <vector>

class QAction;
class QDialog;
class QActionGroup;
class QLabel;
class QMenu;
class QTabWidget;

namespace membudget {

class BreakdownView;
class ControlsPanel;
class FitPanel;
class ScenarioDocument;
class SweepView;
class TimelineView;
class VerdictPanel;

// Registers the application's resources (icon); safe to call more than once.
void initGuiResources();

// Dialogs that ask the user something; tests replace them.
class UserPrompts
{
public:
    enum class SaveChoice { Save, Discard, Cancel };
    virtual ~UserPrompts() = default;
    virtual SaveChoice askSaveChanges(QWidget *parent, const QString &documentName);
    virtual void showError(QWidget *parent, const QString &title, const QString &text);
    virtual QString openFileName(QWidget *parent,
                                 const QString &caption,
                                 const QString &dir,
                                 const QString &filter);
    virtual QString saveFileName(QWidget *parent,
                                 const QString &caption,
                                 const QString &dir,
                                 const QString &filter);
    // A line of text; `ok` false when cancelled.
    virtual QString askText(
        QWidget *parent, const QString &title, const QString &label, const QString &text, bool *ok);
};

class MainWindow : public QMainWindow
{
    Q_OBJECT
public:
    enum View { ComparisonView, LadderView, SweepViewIndex, BreakdownViewIndex, TimelineViewIndex };

    // `settings` may be null (the default QSettings); tests pass an ini file of their own.
    explicit MainWindow(PresetCatalog catalog,
                        std::unique_ptr<AppSettings> settings = nullptr,
                        QWidget *parent = nullptr);
    ~MainWindow() override;

    ScenarioDocument *document() const { return m_doc; }
    ControlsPanel *controls() const { return m_controls; }
    BudgetChart *chart() const { return m_chart; }
    BudgetChart *ladderChart() const { return m_ladder; }
    SweepView *sweepView() const { return m_sweep; }
    VerdictPanel *verdictPanel() const { return m_verdict; }
    BreakdownView *breakdownView() const { return m_breakdown; }
    TimelineView *timelineView() const { return m_timeline; }
    FitPanel *fitPanel() const { return m_fit; }
    QTabWidget *views() const { return m_views; }
    void setPrompts(std::unique_ptr<UserPrompts> prompts);

    // File operations (the menu actions call these). Each asks before discarding changes.
    void newScenario();
    bool openFile(const QString &path);
    bool openNativeFile(const std::string &path); // the bytes of a name that may not be UTF-8
    // Opens a PyTorch memory snapshot on the Timeline tab (and shows the tab).
    bool openSnapshot(const QString &path);
    void openSnapshotDialog();
    bool save();
    bool saveAs();
    bool saveTo(const QString &path);
    bool saveToNative(const std::string &path);
    // False (after telling the user why) when the scenario cannot be estimated.
    bool canSave();
    bool importModelConfig(const QString &path);
    // Opens "Open Model from Hugging Face" with `text` filled in; `fetchNow` starts the download at
    // once (the preset search does this for an id typed there). Returns the dialog (deletes itself).
    // File > Export Training Config: the preview dialog (deletes itself); null when the scenario
    // cannot be estimated.
    QDialog *showTrainingExport();
    // Help > User Guide (one window, raised when already open).
    QDialog *showUserGuide();
    QDialog *openHubModel(const QString &text = QString(), bool fetchNow = false);
    // Where Hugging Face requests go: the environment's settings unless a test sets its own.
    void setHubSettings(const HubSettings &settings) { m_hubSettings = settings; }
    void loadPresetScenario(const QString &id);
    // Asks for a name for the scenario (undoable; empty: named after its settings again).
    void renameScenario();
    // Asks to save unsaved changes: true when it is fine to go on.
    bool maybeSave();

    // Comparisons. Pinning refuses a scenario pinned already.
    void pinCurrent();
    void removePin(int index);
    void clearPins();
    int pinCount() const { return static_cast<int>(m_pins.size()); }

    void setUnit(ByteUnit unit);
    ByteUnit unit() const { return m_unit; }
    void setLogScale(bool on);

    // Exports the current view; `options` as the export dialog gives them.
    bool exportCurrentView(const QString &path,
                           const ExportOptions &options,
                           QString *error = nullptr);
    // A fresh chart of `view` (not shown), in export colours, for files and the clipboard.
    std::unique_ptr<QCustomPlot> makeExportPlot(View view) const;
    QString defaultCaption() const;

    QAction *action(const QString &name) const;

protected:
    void closeEvent(QCloseEvent *event) override;
    void showEvent(QShowEvent *event) override;
    void dragEnterEvent(QDragEnterEvent *event) override;
    void dropEvent(QDropEvent *event) override;

private:
    struct Pin
    {
        QString letter;
        Scenario scenario;
        ChartBar bar;
    };

    void createActions();
    void createMenus();
    void createDocks();
    void refresh();
    void updatePeakLabel(); // the status bar's peak and verdicts
    void refreshLazyViews();
    void updateTitle();
    void updateRecentMenu();
    void updateScenariosMenu();
    void rememberFile(const QString &path);
    void openRecentFile(const QString &path);
    void showExportDialog();
    void copyChartImage();
    void copyBreakdown(bool markdown);
    void showBarMenu(int index, const QPoint &globalPos);
    void showAbout();
    void importConfigDialog();
    void openDialog();
    void setTheme(int theme);
    void fitToScreen();
    void createToolBar();
    std::vector<ChartBar> comparisonBars() const;

    std::unique_ptr<AppSettings> m_settings;
    std::unique_ptr<UserPrompts> m_prompts;
    ScenarioDocument *m_doc;
    ControlsPanel *m_controls = nullptr;
    QTabWidget *m_views = nullptr;
    BudgetChart *m_chart = nullptr;
    BudgetChart *m_ladder = nullptr;
    SweepView *m_sweep = nullptr;
    BreakdownView *m_breakdown = nullptr;
    TimelineView *m_timeline = nullptr;
    VerdictPanel *m_verdict = nullptr;
    FitPanel *m_fit = nullptr;
    QLabel *m_peakLabel = nullptr;
    QMenu *m_recentMenu = nullptr;
    QMenu *m_scenariosMenu = nullptr;
    QMenu *m_viewMenu = nullptr;
    QActionGroup *m_unitGroup = nullptr;
    std::optional<HubSettings> m_hubSettings;
    QPointer<QDialog> m_userGuide;
    std::vector<Pin> m_pins;
    ByteUnit m_unit = ByteUnit::GiB;
    bool m_ladderDirty = true;
    bool m_sweepDirty = true;
    bool m_breakdownDirty = true;
    bool m_timelineDirty = true;
    bool m_shownOnce = false;
};

} // namespace membudget
