// SPDX-License-Identifier: GPL-3.0-or-later
// The scenario's name (issue #16, item 2): made from its settings until the user names it; a
// bundled scenario's (or the default's) own name goes when its settings change; the window title,
// the Markdown header, the exported chart's title and the file name Save As suggests agree; file
// names end at a word.
#include "document/scenario_document.h"
#include "document/scenario_name.h"
#include "io/scenario_yaml.h"
#include "main_window.h"
#include "test_main_window.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

using namespace membudget;

namespace {

class FakePrompts : public UserPrompts
{
public:
    QString name;       // what askText answers
    QString suggested;  // the path Save As offered
    QString saveAnswer; // the path Save As is given
    SaveChoice askSaveChanges(QWidget *, const QString &) override { return SaveChoice::Discard; }
    void showError(QWidget *, const QString &, const QString &text) override
    {
        qWarning("unexpected error: %s", qPrintable(text));
    }
    QString saveFileName(QWidget *, const QString &, const QString &dir, const QString &) override
    {
        suggested = dir;
        return saveAnswer;
    }
    QString askText(QWidget *, const QString &, const QString &, const QString &, bool *ok) override
    {
        *ok = true;
        return name;
    }
};

} // namespace

class TestScenarioName : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void init();
    void cleanup();
    void theDefaultNameStandsUntilTheSettingsChange();
    void aBundledNameGoesWithItsSettings();
    void titleHeaderAndFileNameAgree();
    void aNameTheUserGivesStands();
    void fileNamesEndAtAWord();
    void commandLineExportIsNamedAfterTheSettings();

private:
    QString windowName() const;
    QString markdownHeader();

    QTemporaryDir *m_dir = nullptr;
    MainWindow *m_window = nullptr;
    FakePrompts *m_prompts = nullptr;
};

void TestScenarioName::init()
{
    m_dir = new QTemporaryDir;
    m_window = test::newTestMainWindow(*m_dir, m_prompts);
}

void TestScenarioName::cleanup()
{
    delete m_window;
    delete m_dir;
}

// The name part of "name[*] — MemBudget" or "file[*] — name — MemBudget".
QString TestScenarioName::windowName() const
{
    const QStringList parts = m_window->windowTitle().split(QStringLiteral(" — "));
    return parts.size() == 3 ? parts[1] : QString(parts[0]).remove(QStringLiteral("[*]"));
}

QString TestScenarioName::markdownHeader()
{
    m_window->action(QStringLiteral("actionCopyMarkdown"))->trigger();
    const QString text = QApplication::clipboard()->text();
    const QString first = text.section(QLatin1Char('\n'), 0, 0);
    return first.mid(2, first.size() - 4); // **name**
}

void TestScenarioName::theDefaultNameStandsUntilTheSettingsChange()
{
    ScenarioDocument *doc = m_window->document();
    const QString own = QString::fromStdString(defaultScenario().name);
    QCOMPARE(windowName(), own);
    doc->edit(QStringLiteral("method"), [](Scenario &s) { s.training.method = Method::Full; });
    QCOMPARE(windowName(), derivedScenarioName(doc->scenario(), doc->catalog()));
    QVERIFY(windowName().contains(QStringLiteral("full fine-tuning")));
    QVERIFY(!doc->hasOwnName());
    // Comparing against another GPU does not change what the scenario is.
    doc->undoStack()->undo();
    doc->edit(QStringLiteral("gpus"), [](Scenario &s) { s.gpus.push_back("h200"); });
    QCOMPARE(windowName(), own);
}

void TestScenarioName::aBundledNameGoesWithItsSettings()
{
    ScenarioDocument *doc = m_window->document();
    m_window->loadPresetScenario(QStringLiteral("lora-mistral-7b-a100-80gb"));
    const QString bundled = QString::fromStdString(
        doc->catalog().findScenario("lora-mistral-7b-a100-80gb")->scenario.name);
    QCOMPARE(windowName(), bundled); // not "Untitled"
    QCOMPARE(markdownHeader(), bundled);

    // Another model and method: the bundled name no longer says what this is.
    doc->edit(QStringLiteral("model"), [](Scenario &s) {
        s.model = ModelSpec{};
        s.model.preset = "qwen2.5-7b";
        s.training.method = Method::Full;
    });
    const QString derived = derivedScenarioName(doc->scenario(), doc->catalog());
    QVERIFY(derived.startsWith(QStringLiteral("Qwen2.5 7B full fine-tuning")));
    QCOMPARE(windowName(), derived);
    QCOMPARE(markdownHeader(), derived);
    QVERIFY(!QApplication::clipboard()->text().contains(QStringLiteral("Mistral")));

    // Saved: the file carries neither the bundled name nor its description, and reads back the same.
    const QString path = m_dir->filePath(QStringLiteral("qwen.yaml"));
    QVERIFY(m_window->saveTo(path));
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray saved = file.readAll();
    QVERIFY2(!saved.contains("name:") && !saved.contains("description:"), saved.constData());
    QVERIFY(m_window->openFile(path));
    QCOMPARE(windowName(), derived);
    QVERIFY(m_window->windowTitle().startsWith(QStringLiteral("qwen.yaml[*]")));
}

void TestScenarioName::titleHeaderAndFileNameAgree()
{
    ScenarioDocument *doc = m_window->document();
    doc->edit(QStringLiteral("settings"), [](Scenario &s) {
        s.model.preset = "llama-3.1-70b";
        s.training.method = Method::Qlora;
        s.training.quantization = Quantization::Nf4;
        s.parallelism.gpus = 2;
        s.parallelism.sharding = Sharding::FsdpFull;
    });
    const QString name = doc->scenarioName();
    QCOMPARE(windowName(), name);
    QCOMPARE(markdownHeader(), name);
    m_prompts->saveAnswer.clear(); // cancel: only the suggestion is wanted
    m_window->saveAs();
    QCOMPARE(QFileInfo(m_prompts->suggested).fileName(),
             fileNameFor(name) + QStringLiteral(".yaml"));
    QVERIFY2(QFileInfo(m_prompts->suggested)
                 .fileName()
                 .startsWith(QStringLiteral("llama-3.1-70b-qlora")),
             qPrintable(m_prompts->suggested));
}

void TestScenarioName::aNameTheUserGivesStands()
{
    ScenarioDocument *doc = m_window->document();
    m_prompts->name = QStringLiteral("My 7B run");
    m_window->action(QStringLiteral("actionRename"))->trigger();
    QVERIFY(doc->hasOwnName());
    QCOMPARE(windowName(), QStringLiteral("My 7B run"));
    QCOMPARE(markdownHeader(), QStringLiteral("My 7B run"));
    doc->edit(QStringLiteral("seq"), [](Scenario &s) { s.training.sequence_length = 8192; });
    QCOMPARE(windowName(), QStringLiteral("My 7B run")); // the user's name stays
    m_prompts->saveAnswer.clear();
    m_window->saveAs();
    QCOMPARE(QFileInfo(m_prompts->suggested).fileName(), QStringLiteral("my-7b-run.yaml"));
    // Saved and opened again, it keeps its name; undoing the rename names it after its settings.
    const QString path = m_dir->filePath(QStringLiteral("mine.yaml"));
    QVERIFY(m_window->saveTo(path));
    QVERIFY(m_window->openFile(path));
    QCOMPARE(windowName(), QStringLiteral("My 7B run"));
    m_prompts->name.clear();
    m_window->renameScenario();
    QCOMPARE(windowName(), derivedScenarioName(doc->scenario(), doc->catalog()));
    doc->undoStack()->undo();
    QCOMPARE(windowName(), QStringLiteral("My 7B run"));
}

void TestScenarioName::fileNamesEndAtAWord()
{
    for (const ScenarioPreset &p : PresetCatalog::bundled().scenarios()) {
        const QString name = QString::fromStdString(p.scenario.name);
        const QString file = fileNameFor(name);
        const QString whole = fileNameFor(name, 1000);
        QVERIFY2(file.size() <= 48, qPrintable(file));
        QVERIFY2(whole.startsWith(file), qPrintable(file + " / " + whole));
        QVERIFY2(whole.size() == file.size() || whole[file.size()] == QLatin1Char('-'),
                 qPrintable(QStringLiteral("'%1' cut inside a word of '%2'").arg(file, whole)));
    }
    QCOMPARE(fileNameFor(QStringLiteral("Full fine-tuning of Llama-3.1-8B on 8x H100 with FSDP")),
             QStringLiteral("full-fine-tuning-of-llama-3.1-8b-on-8x-h100-with"));
    QCOMPARE(fileNameFor(QStringLiteral("  ")), QStringLiteral("scenario"));
}

void TestScenarioName::commandLineExportIsNamedAfterTheSettings()
{
    // An unnamed scenario file exported from the command line: its chart's title is the name the
    // window would show.
    const QString in = m_dir->filePath(QStringLiteral("unnamed.yaml"));
    QFile f(in);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("format: membudget/1\nmodel: {preset: mistral-7b-v0.1}\ntraining: {method: qlora, "
            "quantization: nf4, micro_batch_size: 2, sequence_length: 2048}\n");
    f.close();
    const QString out = m_dir->filePath(QStringLiteral("chart.svg"));
    QProcess p;
    p.start(QStringLiteral(MEMBUDGET_GUI_EXE),
            {QStringLiteral("--export"), in, QStringLiteral("-o"), out});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    QFile svg(out);
    QVERIFY(svg.open(QIODevice::ReadOnly));
    LoadError error;
    const auto scenario = loadScenarioFile(in.toStdString(), error, &PresetCatalog::bundled());
    QVERIFY(scenario);
    const QString title = derivedScenarioName(*scenario, PresetCatalog::bundled());
    QVERIFY2(QString::fromUtf8(svg.readAll())
                 .contains(QStringLiteral("<title>%1</title>").arg(title.toHtmlEscaped())),
             qPrintable(title));
}

QTEST_MAIN(TestScenarioName)
#include "tst_scenario_name.moc"
