// SPDX-License-Identifier: GPL-3.0-or-later
// ScenarioDocument: undo/redo and merging of slider drags, the modified flag, save -> open
// round-trips, bad files, config.json import.
#include "document/scenario_document.h"

#include "io/scenario_yaml.h"

#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

using namespace membudget;

class TestScenarioDocument : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void startsWithTheDefaultScenario();
    void editUndoRedo();
    void mergeTokensFoldSliderDrags();
    void dragBackToTheStartLeavesNoStep();
    void saveOpenRoundTrip();
    void saveIsAtomicAndKeepsPath();
    void badFileKeepsTheScenario();
    void unknownPresetIsInvalidNotFatal();
    void importConfigIsUndoable();
    void anyNameSavesAndReopens();

private:
    static PresetCatalog catalog() { return PresetCatalog::bundled(); }
};

void TestScenarioDocument::startsWithTheDefaultScenario()
{
    ScenarioDocument doc(catalog());
    QCOMPARE(doc.scenario(), defaultScenario());
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    QVERIFY(!doc.isModified());
    QVERIFY(doc.filePath().isEmpty());
    QCOMPARE(doc.displayName(), QString::fromStdString(defaultScenario().name));
    // The estimate is the core's, byte for byte.
    std::string error;
    const auto input = resolveScenario(doc.scenario(), doc.catalog(), error);
    QVERIFY(input);
    QCOMPARE(doc.estimate().device_total, estimateMemory(*input).device_total);
    QCOMPARE(doc.selectedGpus().size(), defaultScenario().gpus.size());
}

void TestScenarioDocument::editUndoRedo()
{
    ScenarioDocument doc(catalog());
    QSignalSpy changed(&doc, &ScenarioDocument::changed);
    QSignalSpy modified(&doc, &ScenarioDocument::modifiedChanged);
    const Bytes before = doc.estimate().device_total;

    doc.edit(QStringLiteral("Change sequence length"),
             [](Scenario &s) { s.training.sequence_length = 16384; });
    QCOMPARE(doc.scenario().training.sequence_length, 16384);
    QVERIFY(doc.isModified());
    QCOMPARE(changed.count(), 1);
    QCOMPARE(modified.count(), 1);
    QVERIFY(doc.estimate().device_total > before);
    QCOMPARE(doc.undoStack()->undoText(), QStringLiteral("Change sequence length"));

    doc.undoStack()->undo();
    QCOMPARE(doc.scenario(), defaultScenario());
    QCOMPARE(doc.estimate().device_total, before);
    QVERIFY(!doc.isModified());

    doc.undoStack()->redo();
    QCOMPARE(doc.scenario().training.sequence_length, 16384);
    QVERIFY(doc.isModified());

    // An edit that changes nothing is not a step.
    const int count = doc.undoStack()->count();
    doc.edit(QStringLiteral("Nothing"), [](Scenario &) {});
    QCOMPARE(doc.undoStack()->count(), count);
}

void TestScenarioDocument::mergeTokensFoldSliderDrags()
{
    ScenarioDocument doc(catalog());
    const int token = doc.newMergeToken();
    for (std::int64_t seq : {1024, 2048, 8192, 32768})
        doc.edit(
            QStringLiteral("Change sequence length"),
            [seq](Scenario &s) { s.training.sequence_length = seq; },
            token);
    QCOMPARE(doc.undoStack()->count(), 1);
    QCOMPARE(doc.scenario().training.sequence_length, 32768);

    // A new drag is a new step; plain edits never merge.
    const int second = doc.newMergeToken();
    QVERIFY(second != token);
    doc.edit(
        QStringLiteral("Change sequence length"),
        [](Scenario &s) { s.training.sequence_length = 512; },
        second);
    doc.edit(QStringLiteral("Change micro-batch"),
             [](Scenario &s) { s.training.micro_batch_size = 2; });
    doc.edit(QStringLiteral("Change micro-batch"),
             [](Scenario &s) { s.training.micro_batch_size = 3; });
    QCOMPARE(doc.undoStack()->count(), 4);

    doc.undoStack()->undo();
    doc.undoStack()->undo();
    doc.undoStack()->undo();
    QCOMPARE(doc.scenario().training.sequence_length, 32768);
    doc.undoStack()->undo();
    QCOMPARE(doc.scenario(), defaultScenario());
}

void TestScenarioDocument::dragBackToTheStartLeavesNoStep()
{
    ScenarioDocument doc(catalog());
    const std::int64_t start = doc.scenario().training.micro_batch_size;
    const int token = doc.newMergeToken();
    doc.edit(
        QStringLiteral("Change micro-batch"),
        [](Scenario &s) { s.training.micro_batch_size = 64; },
        token);
    doc.edit(
        QStringLiteral("Change micro-batch"),
        [start](Scenario &s) { s.training.micro_batch_size = start; },
        token);
    QCOMPARE(doc.undoStack()->count(), 0);
    QVERIFY(!doc.isModified());
}

void TestScenarioDocument::saveOpenRoundTrip()
{
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath(QStringLiteral("round-trip.yaml"));

    ScenarioDocument doc(catalog());
    doc.edit(QStringLiteral("Edit"), [](Scenario &s) {
        s.name = "Round trip: 70B QLoRA, 2 GPUs";
        s.description = "Every kind of field.";
        s.model = ModelSpec{};
        s.model.preset = "llama-3.1-70b";
        s.training.method = Method::Qlora;
        s.training.quantization = Quantization::Nf4Double;
        s.training.optimizer = Optimizer::PagedAdamW8bit;
        s.training.sequence_length = 12288;
        s.training.micro_batch_size = 3;
        s.training.lora.rank = 64;
        s.training.lora.dropout = 0.1;
        s.training.loss = LossImplementation::Chunked;
        s.parallelism.gpus = 2;
        s.parallelism.sharding = Sharding::FsdpFull;
        s.overheads.allocator_reserve_fraction = 0.07;
        s.gpus = {"a100-40gb", "rtx-4090", "h100-80gb"};
    });
    QVERIFY(doc.isModified());
    QString error;
    QVERIFY2(doc.saveAs(path, error), qPrintable(error));
    QVERIFY(!doc.isModified());
    QCOMPARE(doc.filePath(), QFileInfo(path).absoluteFilePath());
    QCOMPARE(doc.displayName(), QStringLiteral("round-trip.yaml"));

    ScenarioDocument reopened(catalog());
    LoadError loadError;
    QVERIFY2(reopened.open(path, loadError), loadError.toString().c_str());
    QCOMPARE(reopened.scenario(), doc.scenario());
    QVERIFY(!reopened.isModified());
    QCOMPARE(reopened.estimate().device_total, doc.estimate().device_total);
    QCOMPARE(reopened.estimate().components.bytes, doc.estimate().components.bytes);
    QCOMPARE(reopened.undoStack()->count(), 0);
}

void TestScenarioDocument::saveIsAtomicAndKeepsPath()
{
    ScenarioDocument doc(catalog());
    QString error;
    QVERIFY(!doc.saveAs(QStringLiteral("/nonexistent-folder/x/y.yaml"), error));
    QVERIFY(!error.isEmpty());
    QVERIFY(doc.filePath().isEmpty());

    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("s.yaml"));
    QVERIFY(doc.saveAs(path, error));
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray text = file.readAll();
    QVERIFY(text.startsWith("format: membudget/1"));
    // No temporary file is left beside it.
    QCOMPARE(QDir(dir.path()).entryList(QDir::Files).size(), 1);
}

void TestScenarioDocument::badFileKeepsTheScenario()
{
    ScenarioDocument doc(catalog());
    doc.edit(QStringLiteral("Edit"), [](Scenario &s) { s.training.micro_batch_size = 7; });
    const Scenario before = doc.scenario();
    QSignalSpy changed(&doc, &ScenarioDocument::changed);
    LoadError error;
    QVERIFY(!doc.open(QStringLiteral(MEMBUDGET_TEST_DATA "/bad-precision.yaml"), error));
    QCOMPARE(error.line, 6);
    QVERIFY(error.column > 0);
    QVERIFY2(QString::fromStdString(error.message).contains(QStringLiteral("bf8")),
             error.message.c_str());
    QCOMPARE(doc.scenario(), before);
    QVERIFY(doc.isModified());
    QCOMPARE(changed.count(), 0);
    QVERIFY(!doc.open(QStringLiteral(MEMBUDGET_TEST_DATA "/does-not-exist.yaml"), error));
    QCOMPARE(doc.scenario(), before);
}

void TestScenarioDocument::unknownPresetIsInvalidNotFatal()
{
    ScenarioDocument doc(catalog());
    doc.edit(QStringLiteral("Edit"), [](Scenario &s) { s.model.preset = "no-such-model"; });
    QVERIFY(!doc.valid());
    QVERIFY(doc.error().contains(QStringLiteral("no-such-model")));
    QCOMPARE(doc.estimate().device_total, Bytes(0));
    doc.undoStack()->undo();
    QVERIFY(doc.valid());
}

void TestScenarioDocument::importConfigIsUndoable()
{
    ScenarioDocument doc(catalog());
    const Bytes before = doc.estimate().device_total;
    LoadError error;
    QVERIFY2(doc.importModelConfig(QStringLiteral(MEMBUDGET_TEST_DATA "/llama-config.json"), error),
             error.toString().c_str());
    QVERIFY(doc.scenario().model.preset.empty());
    QCOMPARE(doc.scenario().model.hidden_size.value_or(0), 2048);
    QCOMPARE(doc.input().arch.layers, 16);
    QVERIFY(doc.estimate().device_total < before);
    doc.undoStack()->undo();
    QCOMPARE(doc.scenario(), defaultScenario());

    QVERIFY(
        !doc.importModelConfig(QStringLiteral(MEMBUDGET_TEST_DATA "/bad-precision.yaml"), error));
    QCOMPARE(doc.scenario(), defaultScenario());
}

// A name with a C1 control (U+0090, as an escape in the file) was written back raw, and the file
// the app had just saved could not be opened again: the user's file was lost.
void TestScenarioDocument::anyNameSavesAndReopens()
{
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("names.yaml"));
    for (const char *name : {"C1 \xc2\x90 control",
                             "CSI \xc2\x9b"
                             "31m",
                             "NEL \xc2\x85 LS \xe2\x80\xa8 PS \xe2\x80\xa9",
                             "BOM \xef\xbb\xbf and \xef\xbf\xbe",
                             "tab\tand\x01\x1b[2J"}) {
        ScenarioDocument doc(catalog());
        doc.edit(QStringLiteral("name"), [&](Scenario &s) { s.name = name; });
        QString error;
        QVERIFY2(doc.saveAs(path, error), qPrintable(error));
        QFile first(path);
        QVERIFY(first.open(QIODevice::ReadOnly));
        const QByteArray saved = first.readAll();
        ScenarioDocument reopened(catalog());
        LoadError loadError;
        QVERIFY2(reopened.open(path, loadError),
                 (loadError.toString() + "\n" + saved.toStdString()).c_str());
        QCOMPARE(reopened.scenario().name, std::string(name));
        QVERIFY(reopened.saveAs(path, error));
        QFile second(path);
        QVERIFY(second.open(QIODevice::ReadOnly));
        QCOMPARE(second.readAll(), saved);
    }
}

QTEST_GUILESS_MAIN(TestScenarioDocument)
#include "tst_scenario_document.moc"
