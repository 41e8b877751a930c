// SPDX-License-Identifier: GPL-3.0-or-later
#include "main_window.h"

#include "charts/chart_export.h"
#include "charts/chart_theme.h"
#include "charts/ladder_bars.h"
#include "charts/sweep_chart.h"
#include "dialogs/export_dialog.h"
#include "dialogs/hub_model_dialog.h"
#include "dialogs/training_export_dialog.h"
#include "dialogs/user_guide_window.h"
#include "document/file_writer.h"
#include "document/scenario_document.h"
#include "document/scenario_name.h"
#include "panels/breakdown_table.h"
#include "panels/breakdown_view.h"
#include "panels/controls_panel.h"
#include "panels/fit_panel.h"
#include "panels/timeline_view.h"
#include "panels/verdict_panel.h"
#include "widgets/steady_label.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QClipboard>
#include <QCloseEvent>
#include <QDir>
#include <QDockWidget>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QRegularExpression>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QStatusBar>
#include <QStyle>
#include <QStyleFactory>
#include <QTabWidget>
#include <QTimer>
#include <QToolBar>
#include <QToolButton>
#include <QUndoStack>

// Resources of a static library must be registered by hand (outside any namespace).
static void initMembudgetResources()
{
    Q_INIT_RESOURCE(membudget);
}

namespace membudget {

namespace {

const char *const kScenarioFilter
    = QT_TRANSLATE_NOOP("MainWindow", "MemBudget scenarios (*.yaml *.yml);;All files (*)");

bool isScenarioFile(const QString &path)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    return suffix == QLatin1String("yaml") || suffix == QLatin1String("yml");
}

bool isConfigFile(const QString &path)
{
    return QFileInfo(path).suffix().toLower() == QLatin1String("json");
}

bool isSnapshotFile(const QString &path)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    return suffix == QLatin1String("pickle") || suffix == QLatin1String("pkl");
}

QPalette darkPalette()
{
    QPalette p;
    const QColor window(45, 47, 51), base(32, 34, 37), text(230, 230, 230), disabled(128, 128, 128);
    p.setColor(QPalette::Window, window);
    p.setColor(QPalette::WindowText, text);
    p.setColor(QPalette::Base, base);
    p.setColor(QPalette::AlternateBase, window);
    p.setColor(QPalette::ToolTipBase, QColor(60, 63, 68));
    p.setColor(QPalette::ToolTipText, text);
    p.setColor(QPalette::PlaceholderText, QColor(150, 150, 150));
    p.setColor(QPalette::Text, text);
    p.setColor(QPalette::Button, window);
    p.setColor(QPalette::ButtonText, text);
    p.setColor(QPalette::BrightText, Qt::red);
    p.setColor(QPalette::Link, QColor(90, 160, 255));
    p.setColor(QPalette::Highlight, QColor(53, 120, 200));
    p.setColor(QPalette::HighlightedText, Qt::white);
    p.setColor(QPalette::Light, QColor(70, 72, 76));
    p.setColor(QPalette::Midlight, QColor(60, 62, 66));
    p.setColor(QPalette::Mid, QColor(40, 42, 45));
    p.setColor(QPalette::Dark, QColor(25, 26, 28));
    p.setColor(QPalette::Shadow, Qt::black);
    for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, disabled);
    return p;
}

} // namespace

void initGuiResources()
{
    initMembudgetResources();
}

// ---------------------------------------------------------------------------------------------
// UserPrompts

UserPrompts::SaveChoice UserPrompts::askSaveChanges(QWidget *parent, const QString &documentName)
{
    const auto answer = QMessageBox::warning(
        parent,
        QObject::tr("Unsaved Changes"),
        QObject::tr("The scenario \"%1\" has unsaved changes.\nDo you want to save them?")
            .arg(documentName),
        QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel,
        QMessageBox::Save);
    if (answer == QMessageBox::Save)
        return SaveChoice::Save;
    if (answer == QMessageBox::Discard)
        return SaveChoice::Discard;
    return SaveChoice::Cancel;
}

void UserPrompts::showError(QWidget *parent, const QString &title, const QString &text)
{
    QMessageBox::critical(parent, title, text);
}

QString UserPrompts::openFileName(QWidget *parent,
                                  const QString &caption,
                                  const QString &dir,
                                  const QString &filter)
{
    return QFileDialog::getOpenFileName(parent, caption, dir, filter);
}

QString UserPrompts::askText(
    QWidget *parent, const QString &title, const QString &label, const QString &text, bool *ok)
{
    return QInputDialog::getText(parent, title, label, QLineEdit::Normal, text, ok);
}

QString UserPrompts::saveFileName(QWidget *parent,
                                  const QString &caption,
                                  const QString &dir,
                                  const QString &filter)
{
    return QFileDialog::getSaveFileName(parent, caption, dir, filter);
}

// ---------------------------------------------------------------------------------------------
// MainWindow

MainWindow::MainWindow(PresetCatalog catalog, std::unique_ptr<AppSettings> settings, QWidget *parent)
    : QMainWindow(parent)
    , m_settings(settings ? std::move(settings) : std::make_unique<AppSettings>())
    , m_prompts(std::make_unique<UserPrompts>())
    , m_doc(new ScenarioDocument(std::move(catalog), this))
{
    initGuiResources();
    setObjectName(QStringLiteral("mainWindow"));
    setWindowIcon(QIcon(QStringLiteral(":/membudget/membudget.svg")));
    setAcceptDrops(true);
    setDockOptions(QMainWindow::AnimatedDocks | QMainWindow::AllowNestedDocks);
    m_unit = m_settings->unit();

    // Start-up: the default scenario, compared against the GPUs chosen last time.
    Scenario start = defaultScenario();
    const QStringList gpus = m_settings->selectedGpus();
    if (!gpus.isEmpty()) {
        start.gpus.clear();
        for (const QString &id : gpus)
            if (m_doc->catalog().findGpu(id.toStdString()))
                start.gpus.push_back(id.toStdString());
    }
    m_doc->reset(start);

    m_views = new QTabWidget;
    m_views->setObjectName(QStringLiteral("views"));
    m_views->setDocumentMode(true);
    m_chart = new BudgetChart;
    m_chart->setObjectName(QStringLiteral("comparisonChart"));
    m_chart->setUnit(m_unit);
    m_ladder = new BudgetChart;
    m_ladder->setObjectName(QStringLiteral("ladderChart"));
    m_ladder->setUnit(m_unit);
    m_sweep = new SweepView;
    m_sweep->chart()->setUnit(m_unit);
    m_views->addTab(m_chart, tr("Comparison"));
    m_views->setTabToolTip(
        0, tr("One stacked bar per scenario: the current one and the ones you pinned"));
    m_views->addTab(m_ladder, tr("Technique ladder"));
    m_views->setTabToolTip(1,
                           tr("From the naive configuration, one memory-saving technique per bar: "
                              "the memory it saves and the time it costs or saves on the first "
                              "selected GPU"));
    m_views->addTab(m_sweep, tr("Sweep"));
    m_views->setTabToolTip(2, tr("Peak memory against micro-batch size or sequence length"));
    m_breakdown = new BreakdownView;
    m_views->addTab(m_breakdown, tr("Breakdown"));
    m_views->setTabToolTip(3,
                           tr("Each component at the end of forward, the backward peak and the "
                              "optimizer step"));
    m_timeline = new TimelineView(m_doc);
    m_timeline->setObjectName(QStringLiteral("timelineView"));
    m_views->addTab(m_timeline, tr("Timeline"));
    m_views->setTabToolTip(4,
                           tr("One step's memory over time, by component, with a PyTorch memory "
                              "snapshot drawn over it"));
    connect(m_timeline, &TimelineView::openSnapshotRequested, this, &MainWindow::openSnapshotDialog);
    setCentralWidget(m_views);

    // The controls take the window's whole height; verdict and suggestions sit under the chart.
    setCorner(Qt::TopLeftCorner, Qt::LeftDockWidgetArea);
    setCorner(Qt::BottomLeftCorner, Qt::LeftDockWidgetArea);
    createDocks();
    createActions();
    createMenus();
    m_controls->setUnit(m_unit);
    m_fit->setUnit(m_unit);
    m_controls->setCollapsedSections(m_settings->collapsedSections());
    connect(m_controls,
            &ControlsPanel::collapsedSectionsChanged,
            this,
            [this](const QStringList &s) { m_settings->setCollapsedSections(s); });
    statusBar()->setSizeGripEnabled(true);
    m_peakLabel = new QLabel;
    m_peakLabel->setObjectName(QStringLiteral("peakLabel"));
    statusBar()->addPermanentWidget(new SteadyLabel(m_peakLabel)); // new text at every value

    connect(m_doc, &ScenarioDocument::changed, this, &MainWindow::refresh);
    connect(m_doc, &ScenarioDocument::modifiedChanged, this, &MainWindow::updateTitle);
    connect(m_doc, &ScenarioDocument::changed, this, &MainWindow::updateTitle); // the name follows
    connect(m_doc, &ScenarioDocument::filePathChanged, this, &MainWindow::updateTitle);
    connect(m_controls, &ControlsPanel::dragStateChanged, this, [this](bool dragging) {
        m_chart->setAxisFrozen(dragging);
        m_ladder->setAxisFrozen(dragging);
        m_doc->setDragging(dragging);
    });
    connect(m_controls,
            &ControlsPanel::importConfigRequested,
            this,
            &MainWindow::importConfigDialog);
    connect(m_controls, &ControlsPanel::hubModelRequested, this, [this](const QString &text) {
        openHubModel(text, true);
    });
    connect(m_chart, &BudgetChart::barContextMenuRequested, this, &MainWindow::showBarMenu);
    connect(m_views, &QTabWidget::currentChanged, this, [this](int index) {
        m_settings->setCurrentView(index);
        refreshLazyViews();
    });

    // First start: the screen's room, up to 1920 x 1200 (a laptop gets the whole of it); later,
    // the size it had, within the screen it opens on.
    if (const QScreen *s = QGuiApplication::primaryScreen())
        resize(s->availableGeometry().size().boundedTo(QSize(1920, 1200)));
    if (!m_settings->windowGeometry().isEmpty())
        restoreGeometry(m_settings->windowGeometry());
    fitToScreen();
    if (!m_settings->windowState().isEmpty()) {
        restoreState(m_settings->windowState());
    } else {
        // First start: the chart gets most of the height, verdict and suggestions share the rest.
        QTimer::singleShot(0, this, [this] {
            auto *verdict = findChild<QDockWidget *>(QStringLiteral("verdictDock"));
            auto *fit = findChild<QDockWidget *>(QStringLiteral("fitDock"));
            resizeDocks({verdict, fit}, {52, 48}, Qt::Horizontal);
            resizeDocks({verdict}, {height() / 4}, Qt::Vertical);
        });
    }
    m_views->setCurrentIndex(qBound(0, m_settings->currentView(), m_views->count() - 1));
    if (m_settings->logAxis())
        setLogScale(true);
    if (m_settings->theme() != AppSettings::Theme::System)
        setTheme(static_cast<int>(m_settings->theme()));
    refresh();
    updateTitle();
    statusBar()->showMessage(tr("Drag the sliders on the left; hover a segment for its formula."),
                             8000);
}

MainWindow::~MainWindow()
{
    // Hidden while still whole: hiding a spin box that holds typed text commits it, which edits
    // the document and reaches this window's slots. Left to QWidget's destructor, the hide would
    // come after this window's members are gone (found by the random-input test under UBSan).
    hide();
}

void MainWindow::showEvent(QShowEvent *event)
{
    QMainWindow::showEvent(event);
    // The window frame is known once the window exists: fit again, title bar and borders included.
    if (!m_shownOnce) {
        m_shownOnce = true;
        fitToScreen();
    }
}

void MainWindow::fitToScreen()
{
    // The size it opens at (or had on a larger screen last time), never more than the screen
    // it opens on has room for: on a 1366 x 768 laptop the whole window is in view.
    const QScreen *s = screen() ? screen() : QGuiApplication::primaryScreen();
    if (!s)
        return;
    const QRect available = s->availableGeometry();
    if (isMaximized() || isFullScreen())
        return;
    const QMargins frame(geometry().left() - frameGeometry().left(),
                         geometry().top() - frameGeometry().top(),
                         frameGeometry().right() - geometry().right(),
                         frameGeometry().bottom() - geometry().bottom());
    const QSize room(available.width() - frame.left() - frame.right(),
                     available.height() - frame.top() - frame.bottom());
    const QSize size = this->size().boundedTo(room);
    if (size != this->size())
        resize(size);
    // Inside the screen, title bar included.
    QRect placed = frameGeometry();
    if (!available.contains(placed)) {
        placed.moveLeft(std::clamp(placed.left(),
                                   available.left(),
                                   std::max(available.left(), available.right() - placed.width())));
        placed.moveTop(std::clamp(placed.top(),
                                  available.top(),
                                  std::max(available.top(), available.bottom() - placed.height())));
        move(placed.topLeft());
    }
}

void MainWindow::setPrompts(std::unique_ptr<UserPrompts> prompts)
{
    m_prompts = std::move(prompts);
}

QAction *MainWindow::action(const QString &name) const
{
    return findChild<QAction *>(name);
}

void MainWindow::createDocks()
{
    m_controls = new ControlsPanel(m_doc);
    auto *scroll = new QScrollArea;
    scroll->setWidget(m_controls);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scroll->setMinimumWidth(m_controls->sizeHint().width()
                            + scroll->verticalScrollBar()->sizeHint().width() + 4);
    auto *controlsDock = new QDockWidget(tr("Controls"), this);
    controlsDock->setObjectName(QStringLiteral("controlsDock"));
    controlsDock->setWidget(scroll);
    controlsDock->setFeatures(QDockWidget::DockWidgetMovable | QDockWidget::DockWidgetClosable);
    addDockWidget(Qt::LeftDockWidgetArea, controlsDock);

    m_verdict = new VerdictPanel;
    connect(m_verdict, &VerdictPanel::verdictsSettled, this, &MainWindow::updatePeakLabel);
    auto *verdictDock = new QDockWidget(tr("Verdict"), this);
    verdictDock->setObjectName(QStringLiteral("verdictDock"));
    verdictDock->setWidget(m_verdict);
    addDockWidget(Qt::BottomDockWidgetArea, verdictDock);

    m_fit = new FitPanel(m_doc);
    auto *fitDock = new QDockWidget(tr("Make It Fit"), this);
    fitDock->setObjectName(QStringLiteral("fitDock"));
    fitDock->setWidget(m_fit);
    addDockWidget(Qt::BottomDockWidgetArea, fitDock);
    splitDockWidget(verdictDock, fitDock, Qt::Horizontal);
}

void MainWindow::createActions()
{
    auto make = [this](const char *name,
                       const QString &text,
                       QKeySequence shortcut,
                       const QString &tip,
                       QStyle::StandardPixmap pixmap = QStyle::SP_CustomBase,
                       const QString &themeIcon = QString()) {
        auto *a = new QAction(text, this);
        a->setObjectName(QLatin1String(name));
        if (!shortcut.isEmpty())
            a->setShortcut(shortcut);
        a->setStatusTip(tip);
        a->setToolTip(tip);
        if (pixmap != QStyle::SP_CustomBase)
            a->setIcon(QIcon::fromTheme(themeIcon, style()->standardIcon(pixmap)));
        return a;
    };
    QAction *a = make("actionNew",
                      tr("&New"),
                      QKeySequence::New,
                      tr("Start from the default scenario"),
                      QStyle::SP_FileIcon,
                      QStringLiteral("document-new"));
    connect(a, &QAction::triggered, this, &MainWindow::newScenario);
    a = make("actionOpen",
             tr("&Open…"),
             QKeySequence::Open,
             tr("Open a scenario file"),
             QStyle::SP_DialogOpenButton,
             QStringLiteral("document-open"));
    connect(a, &QAction::triggered, this, &MainWindow::openDialog);
    a = make("actionOpenSnapshot",
             tr("Open S&napshot…"),
             QKeySequence(),
             tr("Draw a PyTorch memory snapshot over the estimated step (Timeline tab)"),
             QStyle::SP_CustomBase,
             QString());
    connect(a, &QAction::triggered, this, &MainWindow::openSnapshotDialog);
    a = make("actionSave",
             tr("&Save"),
             QKeySequence::Save,
             tr("Save the scenario"),
             QStyle::SP_DialogSaveButton,
             QStringLiteral("document-save"));
    connect(a, &QAction::triggered, this, &MainWindow::save);
    a = make("actionSaveAs",
             tr("Save &As…"),
             QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S),
             tr("Save the scenario under a new name"));
    connect(a, &QAction::triggered, this, &MainWindow::saveAs);
    a = make("actionRename",
             tr("&Rename Scenario…"),
             QKeySequence(Qt::Key_F2),
             tr("Give the scenario a name of your own (otherwise it is named after its settings)"));
    connect(a, &QAction::triggered, this, &MainWindow::renameScenario);
    a = make("actionImportConfig",
             tr("&Import config.json…"),
             QKeySequence(Qt::CTRL | Qt::Key_I),
             tr("Take the model architecture from a Hugging Face config.json"));
    connect(a, &QAction::triggered, this, &MainWindow::importConfigDialog);
    a = make("actionOpenHub",
             tr("Open Model from &Hugging Face…"),
             QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_I),
             tr("Fetch a model's config.json from the Hugging Face Hub by its id or address"));
    connect(a, &QAction::triggered, this, [this] { openHubModel(); });
    a = make("actionExport",
             tr("&Export Chart…"),
             QKeySequence(Qt::CTRL | Qt::Key_E),
             tr("Export the chart as PNG, SVG or PDF"));
    a->setIcon(QIcon::fromTheme(QStringLiteral("document-export"),
                                QIcon(QStringLiteral(":/membudget/export.svg"))));
    a->setIconText(tr("Export"));
    connect(a, &QAction::triggered, this, &MainWindow::showExportDialog);
    a = make(
        "actionExportTraining",
        tr("Export &Training Config…"),
        QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E),
        tr("Write this setup as a Trainer/SFTConfig snippet, accelerate YAML or DeepSpeed JSON"));
    connect(a, &QAction::triggered, this, [this] { showTrainingExport(); });
    a = make("actionUserGuide",
             tr("&User Guide"),
             QKeySequence::HelpContents,
             tr("Will my run fit, and what does a fine-tune take: the guide, step by step"));
    connect(a, &QAction::triggered, this, [this] { showUserGuide(); });
    a = make("actionQuit", tr("&Quit"), QKeySequence(), tr("Quit MemBudget"));
    // Ctrl+Q everywhere: some platform themes give QKeySequence::Quit no key at all.
    QList<QKeySequence> quitKeys = QKeySequence::keyBindings(QKeySequence::Quit);
    if (!quitKeys.contains(QKeySequence(Qt::CTRL | Qt::Key_Q)))
        quitKeys.prepend(QKeySequence(Qt::CTRL | Qt::Key_Q));
    a->setShortcuts(quitKeys);
    a->setMenuRole(QAction::QuitRole);
    connect(a, &QAction::triggered, this, &QWidget::close);

    QAction *undo = m_doc->undoStack()->createUndoAction(this, tr("&Undo"));
    undo->setObjectName(QStringLiteral("actionUndo"));
    undo->setShortcuts({QKeySequence::Undo});
    undo->setIcon(
        QIcon::fromTheme(QStringLiteral("edit-undo"), style()->standardIcon(QStyle::SP_ArrowBack)));
    QAction *redo = m_doc->undoStack()->createRedoAction(this, tr("&Redo"));
    redo->setObjectName(QStringLiteral("actionRedo"));
    redo->setShortcuts(
        {QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_Z), QKeySequence(Qt::CTRL | Qt::Key_Y)});
    redo->setIcon(QIcon::fromTheme(QStringLiteral("edit-redo"),
                                   style()->standardIcon(QStyle::SP_ArrowForward)));
    a = make("actionCopyImage",
             tr("Copy Chart &Image"),
             QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C),
             tr("Copy the chart to the clipboard as an image"));
    connect(a, &QAction::triggered, this, &MainWindow::copyChartImage);
    a = make("actionCopyMarkdown",
             tr("Copy Breakdown as &Markdown"),
             QKeySequence(Qt::CTRL | Qt::ALT | Qt::Key_C),
             tr("Copy the component-by-phase table as Markdown"));
    connect(a, &QAction::triggered, this, [this] { copyBreakdown(true); });
    a = make("actionCopyCsv",
             tr("Copy Breakdown as &CSV"),
             QKeySequence(),
             tr("Copy the component-by-phase table as CSV (bytes)"));
    connect(a, &QAction::triggered, this, [this] { copyBreakdown(false); });

    a = make("actionPin",
             tr("&Pin Current Scenario"),
             QKeySequence(Qt::CTRL | Qt::Key_P),
             tr("Keep a copy of the current scenario as a bar to compare against"));
    a->setIcon(QIcon(QStringLiteral(":/membudget/pin.svg")));
    a->setIconText(tr("Pin"));
    connect(a, &QAction::triggered, this, &MainWindow::pinCurrent);
    a = make("actionClearPins",
             tr("&Remove All Pins"),
             QKeySequence(),
             tr("Remove every pinned scenario"),
             QStyle::SP_DialogResetButton);
    a->setIconText(tr("Unpin All"));
    a->setEnabled(false); // nothing pinned yet
    connect(a, &QAction::triggered, this, &MainWindow::clearPins);

    m_unitGroup = new QActionGroup(this);
    QAction *gb = make("actionUnitGB",
                       tr("Decimal &GB (10⁹ bytes)"),
                       QKeySequence(),
                       tr("Show sizes in GB (10⁹ bytes)"));
    gb->setIconText(tr("GB"));
    QAction *gib = make("actionUnitGiB",
                        tr("Binary G&iB (2³⁰ bytes)"),
                        QKeySequence(),
                        tr("Show sizes in GiB (2³⁰ bytes), as nvidia-smi and PyTorch count them"));
    gib->setIconText(tr("GiB"));
    for (QAction *u : {gb, gib}) {
        u->setCheckable(true);
        m_unitGroup->addAction(u);
    }
    (m_unit == ByteUnit::GiB ? gib : gb)->setChecked(true);
    connect(gb, &QAction::triggered, this, [this] { setUnit(ByteUnit::GB); });
    connect(gib, &QAction::triggered, this, [this] { setUnit(ByteUnit::GiB); });
    a = make("actionToggleUnit",
             tr("Switch &Unit (GB / GiB)"),
             QKeySequence(Qt::CTRL | Qt::Key_U),
             tr("Switch between GB and GiB"));
    a->setShortcutContext(Qt::WindowShortcut);
    addAction(a); // its shortcut works whether or not a menu shows it
    connect(a, &QAction::triggered, this, [this] {
        setUnit(m_unit == ByteUnit::GB ? ByteUnit::GiB : ByteUnit::GB);
    });
    a = make("actionLogAxis",
             tr("&Logarithmic Memory Axis"),
             QKeySequence(Qt::CTRL | Qt::Key_L),
             tr("A logarithmic memory axis keeps small components visible beside large ones"));
    a->setCheckable(true);
    connect(a, &QAction::toggled, this, &MainWindow::setLogScale);

    a = make("actionAbout", tr("&About MemBudget"), QKeySequence(), tr("Version and licence"));
    a->setMenuRole(QAction::AboutRole);
    connect(a, &QAction::triggered, this, &MainWindow::showAbout);
    a = make("actionAboutQt", tr("About &Qt"), QKeySequence(), tr("The Qt version in use"));
    a->setMenuRole(QAction::AboutQtRole);
    connect(a, &QAction::triggered, qApp, &QApplication::aboutQt);
}

void MainWindow::createMenus()
{
    QMenu *file = menuBar()->addMenu(tr("&File"));
    file->addAction(action(QStringLiteral("actionNew")));
    file->addAction(action(QStringLiteral("actionOpen")));
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    m_recentMenu->setObjectName(QStringLiteral("recentMenu"));
    file->addAction(action(QStringLiteral("actionSave")));
    file->addAction(action(QStringLiteral("actionSaveAs")));
    file->addAction(action(QStringLiteral("actionRename")));
    file->addSeparator();
    file->addAction(action(QStringLiteral("actionImportConfig")));
    file->addAction(action(QStringLiteral("actionOpenHub")));
    file->addAction(action(QStringLiteral("actionOpenSnapshot")));
    file->addAction(action(QStringLiteral("actionExport")));
    file->addAction(action(QStringLiteral("actionExportTraining")));
    file->addSeparator();
    file->addAction(action(QStringLiteral("actionQuit")));

    QMenu *edit = menuBar()->addMenu(tr("&Edit"));
    edit->addAction(action(QStringLiteral("actionUndo")));
    edit->addAction(action(QStringLiteral("actionRedo")));
    edit->addSeparator();
    edit->addAction(action(QStringLiteral("actionCopyImage")));
    edit->addAction(action(QStringLiteral("actionCopyMarkdown")));
    edit->addAction(action(QStringLiteral("actionCopyCsv")));

    m_scenariosMenu = menuBar()->addMenu(tr("&Scenarios"));
    m_scenariosMenu->setObjectName(QStringLiteral("scenariosMenu"));
    updateScenariosMenu();

    QMenu *compare = menuBar()->addMenu(tr("&Compare"));
    compare->addAction(action(QStringLiteral("actionPin")));
    compare->addAction(action(QStringLiteral("actionClearPins")));

    m_viewMenu = menuBar()->addMenu(tr("&View"));
    for (int i = 0; i < m_views->count(); ++i) {
        QAction *a = m_viewMenu->addAction(m_views->tabText(i).remove(QLatin1Char('&')));
        a->setShortcut(QKeySequence(Qt::CTRL | (Qt::Key_1 + i)));
        connect(a, &QAction::triggered, this, [this, i] { m_views->setCurrentIndex(i); });
    }
    m_viewMenu->addSeparator();
    m_viewMenu->addActions(m_unitGroup->actions());
    m_viewMenu->addAction(action(QStringLiteral("actionToggleUnit")));
    m_viewMenu->addAction(action(QStringLiteral("actionLogAxis")));
    m_viewMenu->addSeparator();
    QMenu *theme = m_viewMenu->addMenu(tr("&Theme"));
    auto *themes = new QActionGroup(this);
    const QStringList names = {tr("Follow the &system"), tr("&Light"), tr("&Dark")};
    for (int i = 0; i < names.size(); ++i) {
        QAction *a = theme->addAction(names[i]);
        a->setCheckable(true);
        a->setChecked(i == static_cast<int>(m_settings->theme()));
        themes->addAction(a);
        connect(a, &QAction::triggered, this, [this, i] {
            m_settings->setTheme(static_cast<AppSettings::Theme>(i));
            setTheme(i);
        });
    }
    m_viewMenu->addSeparator();
    for (QDockWidget *dock : findChildren<QDockWidget *>())
        m_viewMenu->addAction(dock->toggleViewAction());

    QMenu *help = menuBar()->addMenu(tr("&Help"));
    help->addAction(action(QStringLiteral("actionUserGuide")));
    help->addSeparator();
    help->addAction(action(QStringLiteral("actionAbout")));
    help->addAction(action(QStringLiteral("actionAboutQt")));

    createToolBar();
    updateRecentMenu();
}

void MainWindow::createToolBar()
{
    QToolBar *tools = addToolBar(tr("Main"));
    tools->setObjectName(QStringLiteral("mainToolBar"));
    tools->setToolButtonStyle(Qt::ToolButtonTextBesideIcon);
    tools->setMovable(false);
    for (const char *name : {"actionNew",
                             "actionOpen",
                             "actionSave",
                             "",
                             "actionUndo",
                             "actionRedo",
                             "",
                             "actionPin",
                             "actionClearPins",
                             "",
                             "actionUnitGB",
                             "actionUnitGiB",
                             "",
                             "actionExport"}) {
        if (!*name)
            tools->addSeparator();
        else
            tools->addAction(action(QLatin1String(name)));
    }
    // Undo and redo name the step in their text; on the toolbar the icon (and tooltip) is enough.
    for (const char *name : {"actionUndo", "actionRedo"})
        if (auto *button = qobject_cast<QToolButton *>(
                tools->widgetForAction(action(QLatin1String(name)))))
            button->setToolButtonStyle(Qt::ToolButtonIconOnly);
    // The GB / GiB buttons keep one size whatever is checked: wide enough for either short text.
    int unitWidth = 0;
    for (QAction *u : m_unitGroup->actions())
        if (QWidget *w = tools->widgetForAction(u))
            unitWidth = std::max(unitWidth, w->sizeHint().width());
    for (QAction *u : m_unitGroup->actions()) {
        if (QWidget *w = tools->widgetForAction(u)) {
            w->setFixedWidth(unitWidth);
            w->setToolTip(u->toolTip());
        }
    }
}

void MainWindow::updateScenariosMenu()
{
    m_scenariosMenu->clear();
    const auto &scenarios = m_doc->catalog().scenarios();
    if (scenarios.empty()) {
        m_scenariosMenu->addAction(tr("No bundled scenarios"))->setEnabled(false);
        return;
    }
    for (const ScenarioPreset &preset : scenarios) {
        const QString name = preset.scenario.name.empty()
                                 ? QString::fromStdString(preset.id)
                                 : QString::fromStdString(preset.scenario.name);
        QAction *a = m_scenariosMenu->addAction(name);
        a->setObjectName(QStringLiteral("scenario_") + QString::fromStdString(preset.id));
        a->setStatusTip(QString::fromStdString(preset.scenario.description));
        a->setToolTip(QString::fromStdString(preset.scenario.description));
        const QString id = QString::fromStdString(preset.id);
        connect(a, &QAction::triggered, this, [this, id] { loadPresetScenario(id); });
    }
    m_scenariosMenu->setToolTipsVisible(true);
}

void MainWindow::updateRecentMenu()
{
    m_recentMenu->clear();
    const QStringList files = m_settings->recentFiles();
    for (int i = 0; i < files.size(); ++i) {
        const QString path = files[i];
        QAction *a = m_recentMenu->addAction(
            QStringLiteral("&%1 %2").arg(i + 1).arg(QFileInfo(path).fileName()));
        a->setStatusTip(QDir::toNativeSeparators(path));
        connect(a, &QAction::triggered, this, [this, path] { openRecentFile(path); });
    }
    if (!files.isEmpty()) {
        m_recentMenu->addSeparator();
        connect(m_recentMenu->addAction(tr("&Clear List")), &QAction::triggered, this, [this] {
            m_settings->setRecentFiles({});
            updateRecentMenu();
        });
    }
    m_recentMenu->setEnabled(!files.isEmpty());
}

void MainWindow::openRecentFile(const QString &path)
{
    // A file that has gone is said so at once (before any question about unsaved changes) and
    // leaves the list.
    if (!QFileInfo::exists(path)) {
        QStringList files = m_settings->recentFiles();
        files.removeAll(path);
        m_settings->setRecentFiles(files);
        updateRecentMenu();
        m_prompts->showError(this,
                             tr("Cannot Open Scenario"),
                             tr("%1 no longer exists; it was removed from the recent files.")
                                 .arg(QDir::toNativeSeparators(path)));
        return;
    }
    openFile(path);
}

void MainWindow::rememberFile(const QString &path)
{
    m_settings->addRecentFile(QFileInfo(path).absoluteFilePath());
    m_settings->setLastDirectory(QFileInfo(path).absolutePath());
    updateRecentMenu();
}

void MainWindow::updateTitle()
{
    // "file.yaml[*] — its name — MemBudget", or the name alone before it is saved.
    const QString name = m_doc->scenarioName();
    const QString title = m_doc->filePath().isEmpty()
                              ? QStringLiteral("%1[*] — MemBudget").arg(name)
                              : QStringLiteral("%1[*] — %2 — MemBudget")
                                    .arg(QFileInfo(m_doc->filePath()).fileName(), name);
    if (title != windowTitle())
        setWindowTitle(title);
    setWindowModified(m_doc->isModified());
    setWindowFilePath(m_doc->filePath());
}

std::vector<ChartBar> MainWindow::comparisonBars() const
{
    std::vector<ChartBar> bars;
    ChartBar current;
    current.label = m_pins.empty() ? tr("Current") : tr("Current ▸");
    current.detail = shortSummary(m_doc->scenario());
    current.valid = m_doc->valid();
    current.error = m_doc->error();
    if (current.valid) {
        current.input = m_doc->input();
        current.estimate = m_doc->estimate();
    }
    current.tooltip = scenarioCaption(m_doc->scenario(), m_doc->catalog(), m_doc->estimate());
    bars.push_back(current);
    for (const Pin &pin : m_pins) {
        ChartBar bar = pin.bar;
        // Under a pinned bar: what it does differently from the current scenario (all of it; the
        // chart wraps it to the bar's width and the hover text has every difference).
        bar.detail = scenarioDifferences(pin.scenario, m_doc->scenario(), 4);
        bar.tooltip = tr("Differs from the current scenario in: %1")
                          .arg(scenarioDifferences(pin.scenario, m_doc->scenario(), 100))
                      + QLatin1Char('\n') + pin.bar.tooltip;
        bars.push_back(bar);
    }
    return bars;
}

void MainWindow::updatePeakLabel()
{
    if (m_doc->valid()) {
        const MemoryEstimate &est = m_doc->estimate();
        // "≈" while a drag's estimate waits for its replay (ScenarioDocument::setDragging).
        QString text = tr("Peak %1%2 per GPU (%3)")
                           .arg(m_doc->isProvisional() ? QStringLiteral("≈") : QString(),
                                QString::fromStdString(formatBytes(est.device_total, m_unit)),
                                QString::fromUtf8(phaseLabel(est.peak_phase)).toLower());
        int over = 0, tight = 0; // by the verdict table's three-way verdicts
        for (const GpuVerdict &v : m_verdict->verdicts()) {
            over += v.verdict == FitVerdict::DoesNotFit ? 1 : 0;
            tight += v.verdict == FitVerdict::Tight ? 1 : 0;
        }
        if (!m_verdict->verdicts().empty())
            text += over > 0    ? tr(" · does not fit %n GPU(s)", "", over)
                    : tight > 0 ? tr(" · tight on %n GPU(s)", "", tight)
                                : tr(" · fits every selected GPU");
        m_peakLabel->setText(text);
    } else {
        m_peakLabel->setText(tr("Cannot estimate: %1").arg(m_doc->error()));
    }
}

void MainWindow::refresh()
{
    m_chart->setContents(comparisonBars(), m_doc->selectedGpus());
    m_ladderDirty = true;
    m_sweepDirty = true;
    m_breakdownDirty = true;
    m_timelineDirty = true;
    refreshLazyViews();
    m_verdict->update(*m_doc, m_unit);
    action(QStringLiteral("actionClearPins"))->setEnabled(!m_pins.empty());

    updatePeakLabel();
    // Only GPUs the catalog knows, as many as a scenario may list (AppSettings bounds them).
    QStringList ids;
    for (const std::string &id : m_doc->scenario().gpus)
        if (m_doc->catalog().findGpu(id))
            ids << QString::fromStdString(id);
    m_settings->setSelectedGpus(ids);
}

void MainWindow::refreshLazyViews()
{
    const int view = m_views->currentIndex();
    if (view == LadderView && m_ladderDirty) {
        const std::vector<GpuSpec> gpus = m_doc->selectedGpus();
        m_ladder->setContents(m_doc->valid() ? ladderBars(m_doc->input(),
                                                          m_unit,
                                                          gpus.empty() ? nullptr : &gpus.front())
                                             : std::vector<ChartBar>{},
                              gpus);
        m_ladderDirty = false;
    }
    if (view == SweepViewIndex && m_sweepDirty) {
        m_sweep->chart()->setGpus(m_doc->selectedGpus());
        m_sweep->chart()->setInput(m_doc->input(), m_doc->valid());
        m_sweepDirty = false;
    }
    if (view == BreakdownViewIndex && m_breakdownDirty) {
        m_breakdown->update(*m_doc, m_unit);
        m_breakdownDirty = false;
    }
    if (view == TimelineViewIndex && m_timelineDirty) {
        m_timeline->update(m_unit);
        m_timelineDirty = false;
    }
}

void MainWindow::setUnit(ByteUnit unit)
{
    m_unit = unit;
    m_settings->setUnit(unit);
    const auto actions = m_unitGroup->actions();
    actions[unit == ByteUnit::GiB ? 1 : 0]->setChecked(true);
    m_chart->setUnit(unit);
    m_ladder->setUnit(unit);
    m_sweep->chart()->setUnit(unit);
    m_fit->setUnit(unit);
    m_controls->setUnit(unit);
    m_ladderDirty = true;
    refresh();
}

void MainWindow::setLogScale(bool on)
{
    m_settings->setLogAxis(on);
    if (QAction *a = action(QStringLiteral("actionLogAxis")); a && a->isChecked() != on)
        a->setChecked(on);
    m_chart->setLogScale(on);
    m_ladder->setLogScale(on);
}

void MainWindow::renameScenario()
{
    bool ok = false;
    const QString name = m_prompts->askText(this,
                                            tr("Rename Scenario"),
                                            tr("Name (leave empty to name it after its settings):"),
                                            m_doc->hasOwnName() ? m_doc->scenarioName() : QString(),
                                            &ok);
    if (ok)
        m_doc->rename(name);
}

void MainWindow::setTheme(int theme)
{
    static const QPalette system = QApplication::palette();
    static const QString systemStyle = QApplication::style()->name();
    if (theme == static_cast<int>(AppSettings::Theme::System)) {
        QApplication::setStyle(systemStyle);
        QApplication::setPalette(system);
    } else {
        QApplication::setStyle(QStringLiteral("Fusion"));
        QApplication::setPalette(theme == static_cast<int>(AppSettings::Theme::Dark)
                                     ? darkPalette()
                                     : QApplication::style()->standardPalette());
    }
}

// --- files ------------------------------------------------------------------------------------

bool MainWindow::maybeSave()
{
    if (!m_doc->isModified())
        return true;
    switch (m_prompts->askSaveChanges(this, m_doc->displayName())) {
    case UserPrompts::SaveChoice::Save:
        return save();
    case UserPrompts::SaveChoice::Discard:
        return true;
    case UserPrompts::SaveChoice::Cancel:
        return false;
    }
    return false;
}

void MainWindow::newScenario()
{
    if (!maybeSave())
        return;
    Scenario s = defaultScenario();
    s.gpus = m_doc->scenario().gpus;
    m_doc->reset(s);
    m_chart->resetAxis();
    statusBar()->showMessage(tr("New scenario"), 3000);
}

void MainWindow::openDialog()
{
    if (!maybeSave())
        return;
    const QString path = m_prompts->openFileName(this,
                                                 tr("Open Scenario"),
                                                 m_settings->lastDirectory(),
                                                 tr(kScenarioFilter));
    if (!path.isEmpty())
        openFile(path);
}

void MainWindow::openSnapshotDialog()
{
    const QString path
        = m_prompts->openFileName(this,
                                  tr("Open Memory Snapshot"),
                                  m_settings->lastDirectory(),
                                  tr("PyTorch memory snapshots (*.pickle *.pkl);;All files (*)"));
    if (!path.isEmpty())
        openSnapshot(path);
}

bool MainWindow::openSnapshot(const QString &path)
{
    QString error;
    if (!m_timeline->openSnapshot(nativePath(path), error)) {
        m_prompts->showError(this, tr("Cannot Open Snapshot"), error);
        return false;
    }
    m_views->setCurrentWidget(m_timeline);
    m_timelineDirty = true;
    refreshLazyViews();
    return true;
}

bool MainWindow::openFile(const QString &path)
{
    return openNativeFile(nativePath(path));
}

bool MainWindow::openNativeFile(const std::string &native)
{
    const QString path = displayPath(native);
    if (!maybeSave())
        return false;
    LoadError error;
    if (!m_doc->openNative(native, error)) {
        m_prompts->showError(this,
                             tr("Cannot Open Scenario"),
                             tr("The scenario could not be opened; the current one is kept.\n\n%1")
                                 .arg(QString::fromStdString(error.toString())));
        return false;
    }
    rememberFile(path);
    m_chart->resetAxis();
    m_ladder->resetAxis();
    statusBar()->showMessage(tr("Opened %1").arg(QDir::toNativeSeparators(path)), 4000);
    return true;
}

bool MainWindow::canSave()
{
    // A scenario the core cannot estimate would be refused when opened again (the loader checks
    // the same combinations), so it is not written: files the app writes always load back.
    if (m_doc->valid())
        return true;
    m_prompts->showError(
        this,
        tr("Cannot Save Scenario"),
        tr("This scenario cannot be estimated, so it could not be opened again:\n\n%1\n\n"
           "Change the setting (or undo) and save again.")
            .arg(m_doc->error()));
    return false;
}

bool MainWindow::save()
{
    if (!canSave())
        return false;
    if (m_doc->nativeFilePath().empty())
        return saveAs();
    return saveToNative(m_doc->nativeFilePath());
}

bool MainWindow::saveAs()
{
    if (!canSave())
        return false;
    QString suggested = m_doc->filePath();
    if (suggested.isEmpty()) {
        // Named as the scenario is (whole words), so that title and file agree.
        const QString base = fileNameFor(m_doc->scenarioName());
        const QString dir = m_settings->lastDirectory().isEmpty() ? QDir::homePath()
                                                                  : m_settings->lastDirectory();
        suggested = QDir(dir).filePath(base + QStringLiteral(".yaml"));
    }
    QString path
        = m_prompts->saveFileName(this, tr("Save Scenario"), suggested, tr(kScenarioFilter));
    if (path.isEmpty())
        return false;
    if (QFileInfo(path).suffix().isEmpty())
        path += QStringLiteral(".yaml");
    return saveTo(path);
}

bool MainWindow::saveTo(const QString &path)
{
    return saveToNative(nativePath(path));
}

bool MainWindow::saveToNative(const std::string &native)
{
    if (!canSave())
        return false;
    const QString path = displayPath(native);
    QString error;
    if (!m_doc->saveAsNative(native, error)) {
        m_prompts
            ->showError(this,
                        tr("Cannot Save Scenario"),
                        tr("The scenario was not saved; the file is as it was.\n\n%1").arg(error));
        return false;
    }
    rememberFile(path);
    statusBar()->showMessage(tr("Saved %1").arg(QDir::toNativeSeparators(path)), 4000);
    return true;
}

void MainWindow::importConfigDialog()
{
    const QString path = m_prompts->openFileName(this,
                                                 tr("Import config.json"),
                                                 m_settings->lastDirectory(),
                                                 tr("Hugging Face config (*.json);;All files (*)"));
    if (!path.isEmpty())
        importModelConfig(path);
}

bool MainWindow::importModelConfig(const QString &path)
{
    LoadError error;
    if (!m_doc->importModelConfig(path, error)) {
        m_prompts->showError(this,
                             tr("Cannot Import config.json"),
                             tr("The model was not changed.\n\n%1")
                                 .arg(QString::fromStdString(error.toString())));
        return false;
    }
    m_settings->setLastDirectory(QFileInfo(path).absolutePath());
    statusBar()
        ->showMessage(tr("Imported the architecture from %1").arg(QDir::toNativeSeparators(path)),
                      4000);
    return true;
}

QDialog *MainWindow::showUserGuide()
{
    if (!m_userGuide) {
        m_userGuide = new UserGuideWindow(this);
        m_userGuide->setAttribute(Qt::WA_DeleteOnClose);
    }
    m_userGuide->show();
    m_userGuide->raise();
    m_userGuide->activateWindow();
    return m_userGuide;
}

QDialog *MainWindow::showTrainingExport()
{
    if (!m_doc->valid()) {
        m_prompts->showError(this,
                             tr("Cannot Export Training Config"),
                             tr("This scenario cannot be estimated:\n\n%1").arg(m_doc->error()));
        return nullptr;
    }
    auto *dialog = new TrainingExportDialog(m_doc->scenario(),
                                            m_doc->catalog(),
                                            m_settings->lastDirectory(),
                                            this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setPathPrompt([this, dialog](const QString &suggested) {
        return m_prompts->saveFileName(dialog, tr("Save Training Config"), suggested, QString());
    });
    connect(dialog, &TrainingExportDialog::saved, this, [this](const QString &path) {
        m_settings->setLastDirectory(QFileInfo(path).absolutePath());
        statusBar()->showMessage(tr("Saved %1").arg(QDir::toNativeSeparators(path)), 5000);
    });
    dialog->open();
    return dialog;
}

QDialog *MainWindow::openHubModel(const QString &text, bool fetchNow)
{
    HubSettings settings;
    if (m_hubSettings) {
        settings = *m_hubSettings;
    } else if (QString problem; !hubSettingsFromEnvironment(settings, problem)) {
        m_prompts->showError(this, tr("Cannot Reach Hugging Face"), problem);
        return nullptr;
    }
    auto *dialog = new HubModelDialog(settings, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setText(text);
    connect(dialog, &QDialog::accepted, this, [this, dialog] {
        const HubFetchResult &r = dialog->result();
        m_doc->useHubModel(r.ref, *r.spec);
        m_chart->resetAxis();
        m_ladder->resetAxis();
        statusBar()->showMessage(r.message, 10000);
    });
    dialog->open();
    if (fetchNow)
        dialog->startFetch();
    return dialog;
}

void MainWindow::loadPresetScenario(const QString &id)
{
    const ScenarioPreset *preset = m_doc->catalog().findScenario(id.toStdString());
    if (!preset || !maybeSave())
        return;
    m_doc->reset(preset->scenario);
    m_chart->resetAxis();
    m_ladder->resetAxis();
    statusBar()->showMessage(tr("Loaded the bundled scenario \"%1\"")
                                 .arg(QString::fromStdString(preset->scenario.name)),
                             4000);
}

void MainWindow::closeEvent(QCloseEvent *event)
{
    if (!maybeSave()) {
        event->ignore();
        return;
    }
    m_settings->setWindowGeometry(saveGeometry());
    m_settings->setWindowState(saveState());
    m_settings->sync();
    event->accept();
}

void MainWindow::dragEnterEvent(QDragEnterEvent *event)
{
    const QList<QUrl> urls = event->mimeData()->urls();
    if (urls.size() == 1 && urls.front().isLocalFile()) {
        const QString path = urls.front().toLocalFile();
        if (isScenarioFile(path) || isConfigFile(path) || isSnapshotFile(path)) {
            event->acceptProposedAction();
            return;
        }
    }
    event->ignore();
}

void MainWindow::dropEvent(QDropEvent *event)
{
    const QList<QUrl> urls = event->mimeData()->urls();
    if (urls.isEmpty())
        return;
    const QString path = urls.front().toLocalFile();
    event->acceptProposedAction();
    // Open after the drop returns, so that a dialog does not block the drag source.
    QMetaObject::invokeMethod(
        this,
        [this, path] {
            if (isConfigFile(path))
                importModelConfig(path);
            else if (isSnapshotFile(path))
                openSnapshot(path);
            else
                openFile(path);
        },
        Qt::QueuedConnection);
}

// --- comparisons ------------------------------------------------------------------------------

void MainWindow::pinCurrent()
{
    static const QString letters = QStringLiteral("ABCDEFGHIJKLMNOPQRSTUVWXYZ");
    if (m_pins.size() >= 12) {
        statusBar()->showMessage(tr("At most 12 pinned scenarios"), 4000);
        return;
    }
    for (const Pin &p : m_pins) {
        if (sameSettings(p.scenario, m_doc->scenario())) {
            statusBar()->showMessage(tr("Already pinned as %1; change something, then pin again")
                                         .arg(p.letter),
                                     4000);
            return;
        }
    }
    // The first letter not in use.
    QString letter;
    for (QChar c : letters) {
        bool used = false;
        for (const Pin &p : m_pins)
            used = used || p.letter == c;
        if (!used) {
            letter = c;
            break;
        }
    }
    Pin pin;
    pin.letter = letter;
    pin.scenario = m_doc->scenario();
    pin.bar = chartBarFor(letter, shortSummary(pin.scenario), pin.scenario, m_doc->catalog());
    pin.bar.tooltip = scenarioCaption(pin.scenario, m_doc->catalog(), pin.bar.estimate);
    m_pins.push_back(pin);
    refresh();
    statusBar()->showMessage(tr("Pinned as %1; keep editing to compare").arg(letter), 4000);
}

void MainWindow::removePin(int index)
{
    if (index < 0 || index >= static_cast<int>(m_pins.size()))
        return;
    m_pins.erase(m_pins.begin() + index);
    refresh();
}

void MainWindow::clearPins()
{
    m_pins.clear();
    refresh();
    m_chart->resetAxis();
}

void MainWindow::showBarMenu(int index, const QPoint &globalPos)
{
    QMenu menu(this);
    if (index >= 1 && index <= static_cast<int>(m_pins.size())) {
        const Pin pin = m_pins[static_cast<std::size_t>(index - 1)];
        menu.addAction(tr("Make %1 the Current Scenario").arg(pin.letter), this, [this, pin] {
            m_doc->setScenario(pin.scenario, tr("Restore pinned scenario %1").arg(pin.letter));
        });
        menu.addAction(tr("Remove Pin %1").arg(pin.letter), this, [this, index] {
            removePin(index - 1);
        });
        menu.addSeparator();
    }
    menu.addAction(action(QStringLiteral("actionPin")));
    menu.addAction(action(QStringLiteral("actionClearPins")));
    menu.addSeparator();
    menu.addAction(action(QStringLiteral("actionCopyImage")));
    menu.addAction(action(QStringLiteral("actionExport")));
    menu.exec(globalPos);
}

// --- export -----------------------------------------------------------------------------------

QString MainWindow::defaultCaption() const
{
    QString caption = scenarioCaption(m_doc->scenario(), m_doc->catalog(), m_doc->estimate());
    if (!m_pins.empty() && m_views->currentIndex() == ComparisonView) {
        QStringList pins;
        for (const Pin &p : m_pins)
            pins << QStringLiteral("%1: %2").arg(p.letter, shortSummary(p.scenario));
        caption += QLatin1Char(' ') + tr("Pinned: %1.").arg(pins.join(QStringLiteral("; ")));
    }
    return caption;
}

std::unique_ptr<QCustomPlot> MainWindow::makeExportPlot(View view) const
{
    if (view == SweepViewIndex) {
        auto sweep = std::make_unique<SweepChart>();
        useExportPalette(sweep.get());
        sweep->setUnit(m_unit);
        sweep->setGpus(m_doc->selectedGpus());
        sweep->setAxis(m_sweep->chart()->axis());
        sweep->setInput(m_doc->input(), m_doc->valid());
        return sweep;
    }
    auto chart = std::make_unique<BudgetChart>();
    useExportPalette(chart.get());
    chart->setUnit(m_unit);
    chart->setLogScale(m_chart->logScale());
    if (view == LadderView) {
        const std::vector<GpuSpec> gpus = m_doc->selectedGpus();
        chart->setContents(m_doc->valid() ? ladderBars(m_doc->input(),
                                                       m_unit,
                                                       gpus.empty() ? nullptr : &gpus.front())
                                          : std::vector<ChartBar>{},
                           gpus);
    } else
        chart->setContents(comparisonBars(), m_doc->selectedGpus());
    return chart;
}

bool MainWindow::exportCurrentView(const QString &path, const ExportOptions &options, QString *error)
{
    auto plot = makeExportPlot(static_cast<View>(m_views->currentIndex()));
    return exportPlot(plot.get(), path, options, error);
}

void MainWindow::showExportDialog()
{
    const QString dir = m_settings->lastDirectory().isEmpty() ? QDir::homePath()
                                                              : m_settings->lastDirectory();
    // Title, caption and file name say what the scenario is now (its name, else its settings).
    const QString title = m_doc->scenarioName();
    const QString base = m_doc->filePath().isEmpty()
                             ? fileNameFor(title)
                             : QFileInfo(m_doc->filePath()).completeBaseName();
    ExportDialog dialog(QDir(dir).filePath(base + QStringLiteral(".png")),
                        m_settings->exportOptions(),
                        title,
                        defaultCaption(),
                        this);
    if (dialog.exec() != QDialog::Accepted)
        return;
    m_settings->setExportOptions(dialog.savedOptions());
    QString error;
    if (!exportCurrentView(dialog.path(), dialog.options(), &error)) {
        m_prompts->showError(this, tr("Cannot Export Chart"), error);
        return;
    }
    m_settings->setLastDirectory(QFileInfo(dialog.path()).absolutePath());
    statusBar()->showMessage(tr("Exported %1").arg(QDir::toNativeSeparators(dialog.path())), 5000);
}

void MainWindow::copyChartImage()
{
    auto plot = makeExportPlot(static_cast<View>(m_views->currentIndex()));
    ExportOptions o;
    o.width = std::max(400, m_views->currentWidget()->width());
    o.height = std::max(300, m_views->currentWidget()->height());
    o.scale = devicePixelRatioF();
    QApplication::clipboard()->setImage(renderPlot(plot.get(), o));
    statusBar()->showMessage(tr("Chart copied to the clipboard"), 3000);
}

void MainWindow::copyBreakdown(bool markdown)
{
    if (!m_doc->valid()) {
        statusBar()->showMessage(tr("Nothing to copy: %1").arg(m_doc->error()), 4000);
        return;
    }
    if (markdown) {
        Scenario named = m_doc->scenario();
        named.name = m_doc->scenarioName().toStdString(); // the header says what the title says
        QApplication::clipboard()->setText(breakdownMarkdown(named,
                                                             m_doc->catalog(),
                                                             m_doc->stepModel(),
                                                             m_doc->estimate(),
                                                             m_doc->selectedGpus(),
                                                             m_unit));
    } else {
        const QString csv = breakdownCsv(m_doc->estimate());
        auto *mime = new QMimeData;
        mime->setText(csv);
        mime->setData(QStringLiteral("text/csv"), csv.toUtf8());
        QApplication::clipboard()->setMimeData(mime);
    }
    statusBar()->showMessage(markdown ? tr("Breakdown copied as Markdown")
                                      : tr("Breakdown copied as CSV"),
                             3000);
}

void MainWindow::showAbout()
{
    QMessageBox box(this);
    box.setWindowTitle(tr("About MemBudget"));
    box.setIconPixmap(QIcon(QStringLiteral(":/membudget/membudget.svg")).pixmap(64, 64));
    box.setText(
        tr("<h3>MemBudget %1</h3>"
           "<p>GPU memory budgets for training, fine-tuning and running large language models: "
           "weights, gradients, optimizer states, activations and overheads, phase by phase, "
           "against the GPUs you have.</p>")
            .arg(QStringLiteral(MEMBUDGET_VERSION)));
    box.setInformativeText(
        tr("<p>Licensed under the GNU General Public License, version 3 or later.</p>"
           "<p>Built with Qt %1 and QCustomPlot %2.</p>")
            .arg(QString::fromLatin1(qVersion()), QStringLiteral(QCUSTOMPLOT_VERSION_STR)));
    box.exec();
}

} // namespace membudget
