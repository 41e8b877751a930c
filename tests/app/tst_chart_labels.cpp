// SPDX-License-Identifier: GPL-3.0-or-later
// Chart labels never overlap (issue #16, item 3), on screen and in exported PNG, SVG and PDF at
// several sizes: capacity labels of close capacities stack, each in its GPU's colour; bar names
// wrap to their slots (eight pins, the technique ladder); totals shorten to their slot, sit on a
// backdrop that capacity lines do not strike through, and stay inside the plot. The memory axis
// fits the bars and the nearest capacity above them, with a log option (item 12). Exported PDFs
// have no path without points (poppler's "No current point in closepath", item 14).
#include "charts/budget_chart.h"
#include "charts/chart_export.h"
#include "charts/chart_theme.h"
#include "charts/label_layout.h"
#include "document/scenario_document.h"
#include "main_window.h"
#include "widgets/log_slider.h"

#include <QFile>
#include <QImage>
#include <QProcess>
#include <QSpinBox>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>

#include <zlib.h>

using namespace membudget;

namespace {

std::vector<GpuSpec> gpusOf(const std::vector<std::string> &ids,
                            const PresetCatalog &catalog = PresetCatalog::bundled())
{
    std::vector<GpuSpec> out;
    for (const std::string &id : ids) {
        const GpuSpec *gpu = catalog.findGpu(id);
        if (!gpu)
            qFatal("no GPU %s", id.c_str());
        out.push_back(*gpu);
    }
    return out;
}

// Pairs of labels whose rectangles intersect (touching edges are fine).
QStringList overlaps(const std::vector<PlacedLabel> &labels)
{
    QStringList found;
    for (std::size_t i = 0; i < labels.size(); ++i)
        for (std::size_t j = i + 1; j < labels.size(); ++j)
            if (labels[i]
                    .rect.adjusted(0.5, 0.5, -0.5, -0.5)
                    .intersects(labels[j].rect.adjusted(0.5, 0.5, -0.5, -0.5)))
                found << QStringLiteral("'%1' and '%2'")
                             .arg(labels[i].text.simplified(), labels[j].text.simplified());
    return found;
}

// Every label inside `area`; every total and segment value inside the plot.
QStringList outside(const BudgetChart *chart, const QRectF &area)
{
    QStringList found;
    const QRectF plot = QRectF(chart->axisRect()->rect()).adjusted(-0.5, -0.5, 0.5, 0.5);
    for (const PlacedLabel &l : chart->placedLabels()) {
        const bool inPlot = l.kind == PlacedLabel::Total || l.kind == PlacedLabel::Segment;
        if (!(inPlot ? plot : area).contains(l.rect))
            found << QStringLiteral("%1 (%2,%3 %4x%5)")
                         .arg(l.text.simplified())
                         .arg(l.rect.x())
                         .arg(l.rect.y())
                         .arg(l.rect.width())
                         .arg(l.rect.height());
    }
    return found;
}

// With MEMBUDGET_REVIEW_DIR set, what a test checked is also saved there as PNG, to be looked at.
void saveForReview(const QPixmap &pixmap, const QString &name)
{
    const QString dir = qEnvironmentVariable("MEMBUDGET_REVIEW_DIR");
    if (!dir.isEmpty())
        pixmap.save(dir + QLatin1Char('/') + name + QStringLiteral(".png"));
}

int countOf(const BudgetChart *chart, PlacedLabel::Kind kind)
{
    int n = 0;
    for (const PlacedLabel &l : chart->placedLabels())
        n += l.kind == kind ? 1 : 0;
    return n;
}

// The streams of a PDF, inflated where they are compressed.
QList<QByteArray> pdfStreams(const QByteArray &pdf)
{
    QList<QByteArray> streams;
    qsizetype at = 0;
    while ((at = pdf.indexOf("stream", at)) >= 0) {
        qsizetype start = at + 6;
        if (pdf.mid(start, 2) == "\r\n")
            start += 2;
        else if (pdf.mid(start, 1) == "\n")
            ++start;
        const qsizetype end = pdf.indexOf("endstream", start);
        if (end < 0)
            break;
        const QByteArray raw = pdf.mid(start, end - start);
        QByteArray out(static_cast<qsizetype>(raw.size()) * 40 + 4096, '\0');
        uLongf size = static_cast<uLongf>(out.size());
        if (uncompress(reinterpret_cast<Bytef *>(out.data()),
                       &size,
                       reinterpret_cast<const Bytef *>(raw.constData()),
                       static_cast<uLong>(raw.size()))
            == Z_OK)
            streams << out.left(static_cast<qsizetype>(size));
        else
            streams << raw;
        at = end + 9;
    }
    return streams;
}

// "h" (close the path) while no path is open: what poppler reports as "No current point in
// closepath". Returns the number of such operators.
int closepathWithoutPoint(const QByteArray &content)
{
    int bad = 0;
    bool open = false;
    for (const QByteArray &token : content.simplified().split(' ')) {
        if (token == "m" || token == "re")
            open = true;
        else if (token == "S" || token == "s" || token == "f" || token == "F" || token == "f*"
                 || token == "B" || token == "B*" || token == "b" || token == "b*" || token == "n")
            open = false;
        else if (token == "h" && !open)
            ++bad;
    }
    return bad;
}

} // namespace

class TestChartLabels : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void closeCapacitiesStackInTheirOwnColours();
    void manyPinsAndTheLadderOnScreenAndInExports_data();
    void manyPinsAndTheLadderOnScreenAndInExports();
    void capacityLinesDoNotStrikeThroughTotals();
    void axisFitsTheBarsAndTheNearestCapacityAbove();
    void logarithmicAxis();
    void textIsReadableOnWhatItSitsOn();
    void pdfHasNoPathWithoutPoints();
};

void TestChartLabels::closeCapacitiesStackInTheirOwnColours()
{
    // CUDA totals of 39.4 GiB, three at 44.4 GiB, two at 47.5 GiB: within a few pixels of each
    // other.
    const auto gpus = gpusOf({"a100-40gb", "l40", "l40s", "a40", "rtx-a6000", "rtx-6000-ada"});
    BudgetChart chart;
    chart.resize(900, 500);
    chart.setContents({chartBarFor(QStringLiteral("Current"),
                                   QString(),
                                   defaultScenario(),
                                   PresetCatalog::bundled())},
                      gpus);
    chart.show();
    QVERIFY(QTest::qWaitForWindowExposed(&chart));
    chart.replot(QCustomPlot::rpImmediateRefresh);
    QCOMPARE(countOf(&chart, PlacedLabel::Capacity), 6);
    const QStringList clash = overlaps(chart.placedLabels());
    QVERIFY2(clash.isEmpty(), qPrintable(clash.join(QStringLiteral("; "))));
    QVERIFY2(outside(&chart, chart.rect()).isEmpty(),
             qPrintable(outside(&chart, chart.rect()).join(QStringLiteral("; "))));
    // One label per GPU, in that GPU's colour: no merged label in one GPU's colour.
    QSet<QRgb> colours;
    int i = 0;
    for (const PlacedLabel &l : chart.placedLabels()) {
        if (l.kind != PlacedLabel::Capacity)
            continue;
        QVERIFY2(l.text.contains(shortGpuName(gpus[static_cast<std::size_t>(i)])),
                 qPrintable(l.text));
        QCOMPARE(l.color, gpuLabelColor(i, chartColors(chart.palette())));
        colours.insert(l.color.rgb());
        ++i;
    }
    QCOMPARE(colours.size(), 6);
}

void TestChartLabels::manyPinsAndTheLadderOnScreenAndInExports_data()
{
    QTest::addColumn<int>("view");
    QTest::newRow("comparison, 8 pins") << int(MainWindow::ComparisonView);
    QTest::newRow("technique ladder") << int(MainWindow::LadderView);
}

void TestChartLabels::manyPinsAndTheLadderOnScreenAndInExports()
{
    QFETCH(int, view);
    QTemporaryDir dir;
    auto settings = std::make_unique<AppSettings>(dir.filePath(QStringLiteral("settings.ini")));
    MainWindow window(PresetCatalog::bundled(), std::move(settings));
    window.resize(1366, 768);
    ScenarioDocument *doc = window.document();
    doc->edit(QStringLiteral("gpus"), [](Scenario &s) {
        s.gpus = {"rtx-3060-12gb", "rtx-4090", "v100-32gb", "l40s", "a100-80gb", "h200"};
        s.training.gradient_accumulation_steps = 4;
    });
    // Eight pins at different sequence lengths, each saying how it differs from the current one.
    for (int seq : {512, 1024, 2048, 3072, 6144, 8192, 12288, 16384}) {
        doc->edit(QStringLiteral("seq"), [seq](Scenario &s) { s.training.sequence_length = seq; });
        window.pinCurrent();
    }
    doc->edit(QStringLiteral("seq"), [](Scenario &s) { s.training.sequence_length = 4096; });
    QCOMPARE(window.pinCount(), 8);
    window.views()->setCurrentIndex(view);
    window.show();
    QVERIFY(QTest::qWaitForWindowExposed(&window));
    BudgetChart *chart = view == MainWindow::LadderView ? window.ladderChart() : window.chart();
    chart->replot(QCustomPlot::rpImmediateRefresh);
    QVERIFY(countOf(chart, PlacedLabel::BarName) >= (view == MainWindow::LadderView ? 5 : 9));
    QStringList clash = overlaps(chart->placedLabels());
    QVERIFY2(clash.isEmpty(), qPrintable(QStringLiteral("on screen: ") + clash.join("; ")));
    saveForReview(window.grab(), QStringLiteral("window-view%1").arg(view));
    QVERIFY2(outside(chart, chart->rect()).isEmpty(),
             qPrintable(outside(chart, chart->rect()).join("; ")));

    for (const QSize size : {QSize(640, 400), QSize(1200, 700), QSize(1920, 1080)}) {
        for (const char *format : {"png", "svg", "pdf"}) {
            auto plot = window.makeExportPlot(static_cast<MainWindow::View>(view));
            auto *exported = static_cast<BudgetChart *>(plot.get());
            ExportOptions o;
            o.width = size.width();
            o.height = size.height();
            o.title = doc->scenarioName();
            o.caption = window.defaultCaption();
            QString error;
            const QString path = dir.filePath(QStringLiteral("chart.%1").arg(format));
            QVERIFY2(exportPlot(plot.get(), path, o, &error), qPrintable(error));
            if (QLatin1String(format) == QLatin1String("png"))
                saveForReview(QPixmap(path),
                              QStringLiteral("export-view%1-%2x%3")
                                  .arg(view)
                                  .arg(size.width())
                                  .arg(size.height()));
            // The labels as the export laid them out, in its own pixels.
            const QString where = QStringLiteral("%1 %2x%3: ")
                                      .arg(QLatin1String(format))
                                      .arg(size.width())
                                      .arg(size.height());
            QVERIFY(countOf(exported, PlacedLabel::Total) > 0);
            clash = overlaps(exported->placedLabels());
            QVERIFY2(clash.isEmpty(), qPrintable(where + clash.join("; ")));
            const QStringList out = outside(exported, QRectF(0, 0, size.width(), size.height()));
            QVERIFY2(out.isEmpty(), qPrintable(where + out.join("; ")));
        }
    }
}

void TestChartLabels::capacityLinesDoNotStrikeThroughTotals()
{
    // A GPU whose capacity line runs right through the bar's total: the line stays behind the
    // label's backdrop. The GPU is second, so that its line's colour is unlike the text's.
    Scenario s = defaultScenario();
    std::string error;
    const auto input = resolveScenario(s, PresetCatalog::bundled(), error);
    QVERIFY(input);
    const Bytes total = estimateMemory(*input).device_total;
    BudgetChart chart;
    useExportPalette(&chart);
    std::vector<GpuSpec> gpus = gpusOf({"h200"});
    GpuSpec probe;
    probe.id = "probe";
    probe.name = "Probe";
    probe.memory_bytes = total * 2;
    gpus.push_back(probe);
    const std::vector<ChartBar> bars{
        chartBarFor(QStringLiteral("Current"), QString(), s, PresetCatalog::bundled())};
    // Put the probe's line through the middle of the total's label (found by laying it out).
    QImage image;
    const PlacedLabel *label = nullptr;
    double lineY = 0;
    for (int round = 0; round < 4; ++round) {
        chart.setContents(bars, gpus);
        image = chart.toPixmap(700, 500, 1.0).toImage();
        label = nullptr;
        for (const PlacedLabel &l : chart.placedLabels())
            if (l.kind == PlacedLabel::Total)
                label = &l;
        QVERIFY(label);
        lineY = chart.yAxis->coordToPixel(static_cast<double>(gpus[1].memory_bytes)
                                          / static_cast<double>(kGiB));
        if (label->rect.top() + 2 < lineY && lineY < label->rect.bottom() - 2)
            break;
        gpus[1].memory_bytes = static_cast<Bytes>(
            chart.yAxis->pixelToCoord(label->rect.center().y()) * static_cast<double>(kGiB));
    }
    QVERIFY2(label->rect.top() < lineY && lineY < label->rect.bottom(),
             "the probe line should cross the total's label");
    const QColor line = gpuLineColor(1, false);
    int struck = 0;
    const QRect box = label->rect.toAlignedRect().adjusted(1, 1, -1, -1);
    for (int y = box.top(); y <= box.bottom(); ++y)
        for (int x = box.left(); x <= box.right(); ++x) {
            const QColor c = image.pixelColor(x, y);
            struck += std::abs(c.red() - line.red()) + std::abs(c.green() - line.green())
                                  + std::abs(c.blue() - line.blue())
                              < 40
                          ? 1
                          : 0;
        }
    QCOMPARE(struck, 0);
}

void TestChartLabels::axisFitsTheBarsAndTheNearestCapacityAbove()
{
    // GPT-2 beside a 12 GB card and an H200: the axis fits the bar and the 12 GB line, not 141 GB.
    Scenario s = defaultScenario();
    s.model = ModelSpec{};
    s.model.preset = "gpt2";
    s.training.method = Method::Full;
    s.training.micro_batch_size = 2;
    s.training.sequence_length = 1024;
    BudgetChart chart;
    chart.resize(800, 500);
    chart.setContents({chartBarFor(QStringLiteral("Current"),
                                   QString(),
                                   s,
                                   PresetCatalog::bundled())},
                      gpusOf({"rtx-3060-12gb", "h200"}));
    chart.replot(QCustomPlot::rpImmediateRefresh);
    const double tallest = static_cast<double>(chart.bars().front().estimate.device_total)
                           / static_cast<double>(kGiB);
    QVERIFY(tallest < 12);
    QVERIFY2(chart.valueRange().upper >= 12 && chart.valueRange().upper <= 16,
             qPrintable(QString::number(chart.valueRange().upper)));
    // The H200 is said at the top edge, its line off the chart.
    bool offScale = false;
    for (const PlacedLabel &l : chart.placedLabels())
        offScale = offScale
                   || (l.kind == PlacedLabel::Capacity && l.text.startsWith("▲")
                       && l.text.contains("H200"));
    QVERIFY(offScale);
    // Without GPUs: the bar alone.
    chart.setContents(chart.bars(), {});
    chart.resetAxis();
    QVERIFY(chart.valueRange().upper < 2 * tallest + 1);
    QVERIFY(chart.valueRange().upper > tallest);
}

void TestChartLabels::logarithmicAxis()
{
    // A small model beside a large one: on a linear axis its bar is a sliver; on a log axis it
    // is a bar.
    Scenario small = defaultScenario();
    small.model = ModelSpec{};
    small.model.preset = "gpt2";
    Scenario large = defaultScenario();
    large.model = ModelSpec{};
    large.model.preset = "llama-3.1-70b";
    BudgetChart chart;
    chart.resize(800, 500);
    chart.setContents({chartBarFor(QStringLiteral("Current"),
                                   QString(),
                                   small,
                                   PresetCatalog::bundled()),
                       chartBarFor(QStringLiteral("A"), QString(), large, PresetCatalog::bundled())},
                      gpusOf({"rtx-4090", "h200"}));
    chart.replot(QCustomPlot::rpImmediateRefresh);
    auto barHeight = [&chart]() {
        const double total = static_cast<double>(chart.bars().front().estimate.device_total)
                             / static_cast<double>(kGiB);
        return chart.yAxis->coordToPixel(chart.valueRange().lower)
               - chart.yAxis->coordToPixel(total);
    };
    const double linear = barHeight();
    chart.setLogScale(true);
    chart.replot(QCustomPlot::rpImmediateRefresh);
    QCOMPARE(chart.yAxis->scaleType(), QCPAxis::stLogarithmic);
    QVERIFY(chart.valueRange().lower > 0);
    QVERIFY2(barHeight() > 3 * linear,
             qPrintable(QStringLiteral("%1 vs %2").arg(barHeight()).arg(linear)));
    QVERIFY2(overlaps(chart.placedLabels()).isEmpty(),
             qPrintable(overlaps(chart.placedLabels()).join("; ")));
    chart.setLogScale(false);
    QCOMPARE(chart.yAxis->scaleType(), QCPAxis::stLinear);
    QCOMPARE(chart.valueRange().lower, 0.0);
}

void TestChartLabels::textIsReadableOnWhatItSitsOn()
{
    // Segment values in black or white by contrast, totals and capacity labels readable on the
    // chart, in the export palette and in a dark one.
    for (bool dark : {false, true}) {
        BudgetChart chart;
        if (dark) {
            QPalette p = chart.palette();
            p.setColor(QPalette::Base, QColor(32, 34, 37));
            p.setColor(QPalette::Window, QColor(45, 47, 51));
            p.setColor(QPalette::AlternateBase, QColor(45, 47, 51));
            p.setColor(QPalette::Text, QColor(230, 230, 230));
            chart.setPalette(p);
        } else {
            useExportPalette(&chart);
        }
        chart.resize(1000, 600);
        Scenario inference = defaultScenario();
        inference.training.mode = Mode::Inference;
        inference.training.method = Method::Full;
        inference.training.micro_batch_size = 64;
        Scenario big = defaultScenario();
        big.training.micro_batch_size = 16;
        chart.setContents(
            {chartBarFor(QStringLiteral("Current"),
                         QString(),
                         defaultScenario(),
                         PresetCatalog::bundled()),
             chartBarFor(QStringLiteral("A"), QString(), inference, PresetCatalog::bundled()),
             chartBarFor(QStringLiteral("B"), QString(), big, PresetCatalog::bundled())},
            gpusOf({"rtx-3060-12gb", "rtx-4090", "v100-32gb", "l40s", "a100-80gb", "rtx-6000-ada"}));
        chart.replot(QCustomPlot::rpImmediateRefresh);
        int checked = 0;
        for (const PlacedLabel &l : chart.placedLabels()) {
            const double ratio = contrastRatio(l.color, l.background);
            QVERIFY2(ratio >= 4.5,
                     qPrintable(QStringLiteral("'%1' %2 on %3: %4:1")
                                    .arg(l.text.simplified(), l.color.name(), l.background.name())
                                    .arg(ratio, 0, 'f', 2)));
            ++checked;
        }
        QVERIFY(checked > 15);
    }
}

void TestChartLabels::pdfHasNoPathWithoutPoints()
{
    QTemporaryDir dir;
    auto settings = std::make_unique<AppSettings>(dir.filePath(QStringLiteral("settings.ini")));
    MainWindow window(PresetCatalog::bundled(), std::move(settings));
    window.pinCurrent();
    for (MainWindow::View view : {MainWindow::ComparisonView, MainWindow::LadderView}) {
        auto plot = window.makeExportPlot(view);
        ExportOptions o;
        o.title = QStringLiteral("Title");
        o.caption = QStringLiteral("Caption");
        const QString path = dir.filePath(QStringLiteral("chart%1.pdf").arg(int(view)));
        QVERIFY(exportPlot(plot.get(), path, o));
        QFile file(path);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QList<QByteArray> streams = pdfStreams(file.readAll());
        QVERIFY(!streams.isEmpty());
        int bad = 0;
        for (const QByteArray &s : streams)
            bad += closepathWithoutPoint(s);
        QCOMPARE(bad, 0);
        // And poppler itself, where it is installed, says nothing.
        const QString pdftoppm = QStandardPaths::findExecutable(QStringLiteral("pdftoppm"));
        if (!pdftoppm.isEmpty()) {
            QProcess p;
            p.start(pdftoppm,
                    {QStringLiteral("-r"), QStringLiteral("20"), path, dir.filePath("page")});
            QVERIFY(p.waitForFinished(30000));
            const QByteArray err = p.readAllStandardError();
            QVERIFY2(!err.contains("closepath"), err.constData());
        }
    }
}

QTEST_MAIN(TestChartLabels)
#include "tst_chart_labels.moc"
