// SPDX-License-Identifier: GPL-3.0-or-later
// Chart export: PNG (with scale), SVG and PDF files of the requested size with the components'
// colours in them, title and caption rows, and the headless command-line modes of membudget-gui
// (--export, and no display at all).
#include "charts/budget_chart.h"
#include "charts/chart_export.h"
#include "charts/chart_theme.h"
#include "document/scenario_document.h"
#include "main_window.h"

#include <QElapsedTimer>
#include <QFile>
#include <QImage>
#include <QProcess>
#include <QRegularExpression>
#include <QSvgRenderer>
#include <QTemporaryDir>
#include <QTest>
#include <QXmlStreamReader>

#include <clocale>

#include <unistd.h>

using namespace membudget;

namespace {

std::unique_ptr<BudgetChart> sampleChart()
{
    const PresetCatalog &catalog = PresetCatalog::bundled();
    Scenario s = defaultScenario();
    auto chart = std::make_unique<BudgetChart>();
    useExportPalette(chart.get());
    std::vector<GpuSpec> gpus;
    for (const std::string &id : s.gpus)
        gpus.push_back(*catalog.findGpu(id));
    Scenario pinned = s;
    pinned.training.sequence_length = 1024;
    chart->setContents({chartBarFor(QStringLiteral("Current"), QString(), s, catalog),
                        chartBarFor(QStringLiteral("A"), QString(), pinned, catalog)},
                       gpus);
    return chart;
}

// How many pixels are close to `color` (sampling every other pixel).
int countColor(const QImage &image, const QColor &color, int tolerance = 12)
{
    int n = 0;
    for (int y = 0; y < image.height(); y += 2)
        for (int x = 0; x < image.width(); x += 2) {
            const QColor c = image.pixelColor(x, y);
            if (std::abs(c.red() - color.red()) <= tolerance
                && std::abs(c.green() - color.green()) <= tolerance
                && std::abs(c.blue() - color.blue()) <= tolerance)
                ++n;
        }
    return n;
}

QSizeF pdfPageSize(const QString &path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    const QByteArray data = file.readAll();
    if (!data.startsWith("%PDF-"))
        return {};
    static const QRegularExpression box(
        QStringLiteral("/MediaBox\\s*\\[\\s*0\\s+0\\s+([0-9.]+)\\s+([0-9.]+)\\s*\\]"));
    const auto match = box.match(QString::fromLatin1(data));
    if (!match.hasMatch())
        return {};
    return QSizeF(match.captured(1).toDouble(), match.captured(2).toDouble());
}

QProcessEnvironment offscreenEnvironment(const QString &home)
{
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("HOME"), home);
    env.insert(QStringLiteral("XDG_CONFIG_HOME"), home + QStringLiteral("/config"));
    env.insert(QStringLiteral("XDG_DATA_HOME"), home + QStringLiteral("/data"));
    env.insert(QStringLiteral("MEMBUDGET_PRESETS"), home + QStringLiteral("/no-user-presets"));
    return env;
}

} // namespace

class TestChartExport : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void formatFromExtension();
    void png_data();
    void png();
    void svg();
    void pdf();
    void titleAndCaptionDoNotStick();
    void rejectsBadSizes();
    void windowExportsEachView();
    void commandLineExport_data();
    void commandLineExport();
    void commandLineExportErrors_data();
    void commandLineExportErrors();
    void withoutDisplayPrintsTableAndWritesChart();
    void svgHoldsNoMarkupFromTexts();
    void pixelCountIsBounded();
    void membudgetExportTakesOptionsInAnyOrder();
    void namesThatAreNotUtf8();
    void fullDiskKeepsTheOldFile_data();
    void fullDiskKeepsTheOldFile();
    void sizesReadTheSameInTurkish();

private:
    QTemporaryDir m_dir;
};

void TestChartExport::initTestCase()
{
    QVERIFY(m_dir.isValid());
}

void TestChartExport::formatFromExtension()
{
    QCOMPARE(exportFormatForPath(QStringLiteral("a.PNG")), ExportFormat::Png);
    QCOMPARE(exportFormatForPath(QStringLiteral("dir.x/a.svg")), ExportFormat::Svg);
    QCOMPARE(exportFormatForPath(QStringLiteral("a.pdf")), ExportFormat::Pdf);
    QVERIFY(!exportFormatForPath(QStringLiteral("a.jpg")));
    QVERIFY(!exportFormatForPath(QStringLiteral("png")));
}

void TestChartExport::png_data()
{
    QTest::addColumn<int>("width");
    QTest::addColumn<int>("height");
    QTest::addColumn<double>("scale");
    QTest::newRow("1200x700") << 1200 << 700 << 1.0;
    QTest::newRow("800x500 @2x") << 800 << 500 << 2.0;
    QTest::newRow("small") << 400 << 300 << 1.0;
}

void TestChartExport::png()
{
    QFETCH(int, width);
    QFETCH(int, height);
    QFETCH(double, scale);
    auto chart = sampleChart();
    const QString path = m_dir.filePath(QStringLiteral("chart-%1.png").arg(QTest::currentDataTag()));
    ExportOptions o;
    o.width = width;
    o.height = height;
    o.scale = scale;
    o.title = QStringLiteral("A title");
    o.caption = QStringLiteral("A caption that states the scenario.");
    QString error;
    QVERIFY2(exportPlot(chart.get(), path, o, &error), qPrintable(error));
    const QImage image(path);
    QVERIFY(!image.isNull());
    QCOMPARE(image.size(), QSize(qRound(width * scale), qRound(height * scale)));
    // Sampled colours: a white background, the weights' blue, the activations' green.
    QCOMPARE(image.pixelColor(2, 2), QColor(Qt::white));
    QVERIFY(countColor(image, componentColor(Component::Weights, false)) > 50);
    QVERIFY(countColor(image, componentColor(Component::Activations, false)) > 5);
}

void TestChartExport::svg()
{
    auto chart = sampleChart();
    const QString path = m_dir.filePath(QStringLiteral("chart.svg"));
    ExportOptions o;
    o.width = 900;
    o.height = 600;
    o.title = QStringLiteral("SVG title");
    QString error;
    QVERIFY2(exportPlot(chart.get(), path, o, &error), qPrintable(error));
    QSvgRenderer renderer(path);
    QVERIFY(renderer.isValid());
    QCOMPARE(renderer.defaultSize(), QSize(900, 600));
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray text = file.readAll();
    QVERIFY(text.contains("<svg"));
    QVERIFY(text.contains("SVG title"));
    // Vector output: the weights' colour is a fill, not pixels.
    QVERIFY(text.contains(componentColor(Component::Weights, false).name().toLatin1()));
    QImage raster(900, 600, QImage::Format_ARGB32);
    raster.fill(Qt::white);
    QPainter painter(&raster);
    renderer.render(&painter);
    painter.end();
    QVERIFY(countColor(raster, componentColor(Component::Weights, false)) > 50);
}

void TestChartExport::pdf()
{
    auto chart = sampleChart();
    const QString path = m_dir.filePath(QStringLiteral("chart.pdf"));
    ExportOptions o;
    o.width = 1000;
    o.height = 640;
    o.caption = QStringLiteral("caption");
    QString error;
    QVERIFY2(exportPlot(chart.get(), path, o, &error), qPrintable(error));
    const QSizeF page = pdfPageSize(path);
    QVERIFY2(!page.isEmpty(), "not a PDF with a media box");
    QVERIFY2(qAbs(page.width() - 1000) < 1.5 && qAbs(page.height() - 640) < 1.5,
             qPrintable(QStringLiteral("%1 x %2").arg(page.width()).arg(page.height())));
}

void TestChartExport::titleAndCaptionDoNotStick()
{
    auto chart = sampleChart();
    const int rows = chart->plotLayout()->rowCount();
    ExportOptions o;
    o.title = QStringLiteral("T");
    o.caption = QStringLiteral("C");
    const QImage image = renderPlot(chart.get(), o);
    QCOMPARE(image.size(), QSize(o.width, o.height));
    QCOMPARE(chart->plotLayout()->rowCount(), rows);
    QVERIFY(exportPlot(chart.get(), m_dir.filePath(QStringLiteral("t.png")), o));
    QCOMPARE(chart->plotLayout()->rowCount(), rows);
}

void TestChartExport::rejectsBadSizes()
{
    auto chart = sampleChart();
    ExportOptions o;
    o.width = 0;
    QString error;
    QVERIFY(!exportPlot(chart.get(), m_dir.filePath(QStringLiteral("bad.png")), o, &error));
    QVERIFY(!error.isEmpty());
    QVERIFY(!exportPlot(chart.get(),
                        m_dir.filePath(QStringLiteral("bad.gif")),
                        ExportOptions{},
                        &error));
    QVERIFY(error.contains(QStringLiteral("gif")));
    QVERIFY(
        !exportPlot(chart.get(), QStringLiteral("/nonexistent-dir/x.png"), ExportOptions{}, &error));
}

void TestChartExport::windowExportsEachView()
{
    MainWindow window(PresetCatalog::bundled(),
                      std::make_unique<AppSettings>(
                          m_dir.filePath(QStringLiteral("settings.ini"))));
    window.pinCurrent();
    for (int view = 0; view < 3; ++view) {
        window.views()->setCurrentIndex(view);
        for (const char *ext : {"png", "svg", "pdf"}) {
            const QString path = m_dir.filePath(
                QStringLiteral("view%1.%2").arg(view).arg(QLatin1String(ext)));
            ExportOptions o;
            o.width = 640;
            o.height = 400;
            o.title = QStringLiteral("View %1").arg(view);
            o.caption = window.defaultCaption();
            QString error;
            QVERIFY2(window.exportCurrentView(path, o, &error), qPrintable(error));
            QVERIFY(QFileInfo(path).size() > 1000);
        }
        QCOMPARE(QImage(m_dir.filePath(QStringLiteral("view%1.png").arg(view))).size(),
                 QSize(640, 400));
    }
    QVERIFY(window.defaultCaption().contains(QStringLiteral("Llama")));
}

void TestChartExport::commandLineExport_data()
{
    QTest::addColumn<QString>("file");
    QTest::addColumn<QStringList>("options");
    QTest::addColumn<QSize>("size");
    QTest::newRow("png default") << QStringLiteral("out.png") << QStringList() << QSize(1200, 700);
    QTest::newRow("png sized, scaled") << QStringLiteral("out2.png")
                                       << QStringList{QStringLiteral("--width"),
                                                      QStringLiteral("800"),
                                                      QStringLiteral("--height"),
                                                      QStringLiteral("450"),
                                                      QStringLiteral("--scale"),
                                                      QStringLiteral("2"),
                                                      QStringLiteral("--title"),
                                                      QStringLiteral("Report figure")}
                                       << QSize(1600, 900);
    QTest::newRow("svg") << QStringLiteral("out.svg")
                         << QStringList{QStringLiteral("--width"), QStringLiteral("700")}
                         << QSize(700, 700);
    QTest::newRow("pdf") << QStringLiteral("out.pdf")
                         << QStringList{QStringLiteral("--height"), QStringLiteral("500")}
                         << QSize(1200, 500);
}

void TestChartExport::commandLineExport()
{
    QFETCH(QString, file);
    QFETCH(QStringList, options);
    QFETCH(QSize, size);
    const QString out = m_dir.filePath(file);
    QProcess process;
    QProcessEnvironment env = offscreenEnvironment(m_dir.path());
    env.remove(QStringLiteral("QT_QPA_PLATFORM")); // --export must not need it
    env.remove(QStringLiteral("DISPLAY"));
    process.setProcessEnvironment(env);
    process.start(QStringLiteral(MEMBUDGET_GUI_EXE),
                  QStringList{QStringLiteral("--export"),
                              QStringLiteral(MEMBUDGET_TEST_DATA "/qlora-7b.yaml"),
                              QStringLiteral("-o"),
                              out}
                      + options);
    QVERIFY(process.waitForFinished(30000));
    QVERIFY2(process.exitCode() == 0, process.readAllStandardError().constData());
    QCOMPARE(process.exitStatus(), QProcess::NormalExit);
    const auto format = exportFormatForPath(out);
    if (format == ExportFormat::Png) {
        QCOMPARE(QImage(out).size(), size);
    } else if (format == ExportFormat::Svg) {
        QSvgRenderer renderer(out);
        QVERIFY(renderer.isValid());
        QCOMPARE(renderer.defaultSize(), size);
    } else {
        const QSizeF page = pdfPageSize(out);
        QVERIFY(qAbs(page.width() - size.width()) < 1.5
                && qAbs(page.height() - size.height()) < 1.5);
    }
}

void TestChartExport::commandLineExportErrors_data()
{
    QTest::addColumn<QStringList>("arguments");
    QTest::addColumn<int>("exitCode");
    QTest::addColumn<QString>("message");
    const QString bad = QStringLiteral(MEMBUDGET_TEST_DATA "/bad-precision.yaml");
    const QString good = QStringLiteral(MEMBUDGET_TEST_DATA "/qlora-7b.yaml");
    const QString out = QStringLiteral("out.png");
    QTest::newRow("bad scenario") << QStringList{QStringLiteral("--export"),
                                                 bad,
                                                 QStringLiteral("-o"),
                                                 out}
                                  << 1 << QStringLiteral("bad-precision.yaml:6:\\d+: .*bf8");
    QTest::newRow("missing scenario") << QStringList{QStringLiteral("--export"),
                                                     QStringLiteral("nope.yaml"),
                                                     QStringLiteral("-o"),
                                                     out}
                                      << 1 << QStringLiteral("nope.yaml");
    QTest::newRow("no output") << QStringList{QStringLiteral("--export"), good} << 2
                               << QStringLiteral("^membudget export: needs -o");
    QTest::newRow("unknown format") << QStringList{QStringLiteral("--export"),
                                                   good,
                                                   QStringLiteral("-o"),
                                                   QStringLiteral("x.gif")}
                                    << 2 << QStringLiteral("^membudget export: .*gif");
    QTest::newRow("bad width") << QStringList{QStringLiteral("--export"),
                                              good,
                                              QStringLiteral("-o"),
                                              out,
                                              QStringLiteral("--width"),
                                              QStringLiteral("wide")}
                               << 2 << QStringLiteral("^membudget export: --width");
    QTest::newRow("unknown option")
        << QStringList{QStringLiteral("--export"), good, QStringLiteral("--colour")} << 2
        << QStringLiteral("^membudget export: .*colour");
    QTest::newRow("option without export")
        << QStringList{QStringLiteral("-o"), out} << 2 << QStringLiteral("--export");
}

void TestChartExport::commandLineExportErrors()
{
    QFETCH(QStringList, arguments);
    QFETCH(int, exitCode);
    QFETCH(QString, message);
    QProcess process;
    process.setWorkingDirectory(m_dir.path());
    process.setProcessEnvironment(offscreenEnvironment(m_dir.path()));
    process.start(QStringLiteral(MEMBUDGET_GUI_EXE), arguments);
    QVERIFY(process.waitForFinished(30000));
    const QString err = QString::fromUtf8(process.readAllStandardError());
    QCOMPARE(process.exitCode(), exitCode);
    QVERIFY2(err.contains(QRegularExpression(message)), qPrintable(err));
}

void TestChartExport::withoutDisplayPrintsTableAndWritesChart()
{
    QProcess process;
    QProcessEnvironment env = offscreenEnvironment(m_dir.path());
    for (const char *name : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"})
        env.remove(QLatin1String(name));
    const QString work = m_dir.filePath(QStringLiteral("nodisplay"));
    QVERIFY(QDir().mkpath(work));
    process.setProcessEnvironment(env);
    process.setWorkingDirectory(work);
    process.start(QStringLiteral(MEMBUDGET_GUI_EXE), QStringList());
    QVERIFY(process.waitForFinished(30000));
    QCOMPARE(process.exitCode(), 0);
    const QString out = QString::fromUtf8(process.readAllStandardOutput());
    QVERIFY2(out.contains(QStringLiteral("Weights"))
                 && out.contains(QStringLiteral("Optimizer step")),
             qPrintable(out));
    const QString chart = QDir(work).filePath(QStringLiteral("membudget-chart.png"));
    QVERIFY2(out.contains(chart), qPrintable(out));
    QVERIFY(!QImage(chart).isNull());
}

namespace {

QProcess *startExport(QProcess &process,
                      const QString &program,
                      const QStringList &arguments,
                      const QString &home)
{
    process.setProcessEnvironment(offscreenEnvironment(home));
    process.start(program, arguments);
    return &process;
}

} // namespace

// QSvgGenerator writes title and description as given: a title "</title><script>..." was live
// markup in the file, and a control character made it malformed XML.
void TestChartExport::svgHoldsNoMarkupFromTexts()
{
    const QString scenario = m_dir.filePath(QStringLiteral("hostile.yaml"));
    QFile f(scenario);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("format: membudget/1\nname: \"Name <&> \\x01 \\x0b end\"\n"
            "model: {preset: llama-2-7b}\ngpus: [rtx-4090]\n");
    f.close();
    const QString title = QStringLiteral("</title><script>alert(1)</script><title>");
    for (const QStringList &extra :
         {QStringList{QStringLiteral("--title"), title},
          QStringList{QStringLiteral("--caption"),
                      QStringLiteral("]]></desc><script>x</script>\x01")},
          QStringList()}) {
        const QString out = m_dir.filePath(QStringLiteral("hostile.svg"));
        QProcess process;
        startExport(process,
                    QStringLiteral(MEMBUDGET_GUI_EXE),
                    QStringList{QStringLiteral("--export"), scenario, QStringLiteral("-o"), out}
                        + extra,
                    m_dir.path());
        QVERIFY(process.waitForFinished(30000));
        QVERIFY2(process.exitCode() == 0, process.readAllStandardError().constData());
        QFile svg(out);
        QVERIFY(svg.open(QIODevice::ReadOnly));
        QXmlStreamReader xml(&svg);
        QStringList elements;
        QString titleText;
        while (!xml.atEnd()) {
            if (xml.readNext() == QXmlStreamReader::StartElement) {
                elements << xml.name().toString();
                if (xml.name() == QLatin1String("title") && titleText.isEmpty())
                    titleText = xml.readElementText();
            }
        }
        QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
        QVERIFY2(!elements.contains(QStringLiteral("script")), qPrintable(elements.join(' ')));
        QCOMPARE(elements.count(QStringLiteral("title")), 1);
        if (extra.isEmpty())
            QCOMPARE(titleText, QStringLiteral("Name <&>   end")); // controls dropped
        else if (extra.front() == QLatin1String("--title"))
            QCOMPARE(titleText, title);
    }
    QCOMPARE(escapeForSvg(QStringLiteral("a<b>&\"c\x01\x1f\uFFFE")),
             QStringLiteral("a&lt;b&gt;&amp;&quot;c"));
}

// 20000 x 20000 at scale 2 took 45 s and 6.3 GB, scale 16 failed with Qt warnings and "cannot
// write", scale 1e-300 exited 1: every size outside the bounds is a usage error (2) saying why.
void TestChartExport::pixelCountIsBounded()
{
    const QString good = QStringLiteral(MEMBUDGET_TEST_DATA "/qlora-7b.yaml");
    const QString out = m_dir.filePath(QStringLiteral("bounded.png"));
    const QList<QPair<QStringList, QString>> cases
        = {{{QStringLiteral("--width=20000"),
             QStringLiteral("--height=20000"),
             QStringLiteral("--scale=2")},
            QStringLiteral(
                "^membudget export: 20000 x 20000 at scale 2 is 1,600,000,000 pixels; an "
                "export has at most 40,000,000")},
           {{QStringLiteral("--scale=16")},
            QStringLiteral("^membudget export: --scale must be a number from 0.25 to 8, not '16'")},
           {{QStringLiteral("--scale=1e-300")},
            QStringLiteral("^membudget export: --scale must be")},
           {{QStringLiteral("--width=20000"), QStringLiteral("--height=20000")},
            QStringLiteral("400,000,000 pixels")}};
    for (const auto &[options, message] : cases) {
        QProcess process;
        QElapsedTimer timer;
        timer.start();
        startExport(process,
                    QStringLiteral(MEMBUDGET_GUI_EXE),
                    QStringList{QStringLiteral("--export"), good, QStringLiteral("-o"), out}
                        + options,
                    m_dir.path());
        QVERIFY(process.waitForFinished(30000));
        const QString err = QString::fromUtf8(process.readAllStandardError());
        QCOMPARE(process.exitCode(), 2);
        QVERIFY2(err.contains(QRegularExpression(message)), qPrintable(err));
        QVERIFY2(timer.elapsed() < 5000, qPrintable(QString::number(timer.elapsed())));
        QVERIFY(!QFile::exists(out));
    }
    ExportOptions o;
    o.width = 8000;
    o.height = 5000;
    QVERIFY(exportSizeProblem(o, ExportFormat::Png).isEmpty());
    o.scale = 1.01;
    QVERIFY(!exportSizeProblem(o, ExportFormat::Png).isEmpty());
    QVERIFY(exportSizeProblem(o, ExportFormat::Svg).isEmpty()); // the scale is PNG only
}

// `membudget export -o out.png s.yaml` gave membudget-gui "--export -o out.png s.yaml": the
// scenario was "-o". The command line parses its options itself now.
void TestChartExport::membudgetExportTakesOptionsInAnyOrder()
{
    const QString good = QStringLiteral(MEMBUDGET_TEST_DATA "/qlora-7b.yaml");
    const QString out = m_dir.filePath(QStringLiteral("order.png"));
    QProcess process;
    startExport(process,
                QStringLiteral(MEMBUDGET_CLI),
                {QStringLiteral("export"),
                 QStringLiteral("-o"),
                 out,
                 QStringLiteral("--title"),
                 QStringLiteral("-a title that starts with a dash"),
                 good,
                 QStringLiteral("--width"),
                 QStringLiteral("640")},
                m_dir.path());
    QVERIFY(process.waitForFinished(30000));
    QVERIFY2(process.exitCode() == 0, process.readAllStandardError().constData());
    QCOMPARE(QImage(out).size(), QSize(640, 700));
    QProcess bad;
    startExport(bad,
                QStringLiteral(MEMBUDGET_CLI),
                {QStringLiteral("export"), QStringLiteral("nope.yaml"), QStringLiteral("-o"), out},
                m_dir.path());
    QVERIFY(bad.waitForFinished(30000));
    QCOMPARE(bad.exitCode(), 1);
    QVERIFY(!bad.readAllStandardError().contains("membudget-gui"));
}

// Qt decodes arguments as UTF-8: a Latin-1 name became U+FFFD and "no such file". The export reads
// and writes the bytes the command line gave, and so does the app opening a file.
void TestChartExport::namesThatAreNotUtf8()
{
    QProcess process;
    process.setProcessEnvironment(offscreenEnvironment(m_dir.path()));
    process.setWorkingDirectory(m_dir.path());
    process.start(QStringLiteral("sh"),
                  {QStringLiteral("-c"),
                   QStringLiteral(
                       "in=$(printf 'caf\\351.yaml'); out=$(printf 'r\\351sum\\351.png'); "
                       "cp \"$2\" \"$in\" && \"$1\" export \"$in\" -o \"$out\" "
                       "&& test -s \"$out\" && \"$3\" --export \"$in\" -o \"x$out\" "
                       "&& test -s \"x$out\""),
                   QStringLiteral("sh"),
                   QStringLiteral(MEMBUDGET_CLI),
                   QStringLiteral(MEMBUDGET_TEST_DATA "/qlora-7b.yaml"),
                   QStringLiteral(MEMBUDGET_GUI_EXE)});
    QVERIFY(process.waitForFinished(60000));
    QVERIFY2(process.exitCode() == 0, process.readAllStandardError().constData());

    // The document keeps the bytes: it opens such a file and saves back to it, not to a name
    // with U+FFFD in it.
    const std::string dir = QFile::encodeName(m_dir.path()).toStdString();
    const std::string latin1 = dir + "/caf\xe9.yaml";
    ScenarioDocument doc(PresetCatalog::bundled());
    LoadError error;
    QVERIFY2(doc.openNative(latin1, error), error.toString().c_str());
    doc.edit(QStringLiteral("rename"), [](Scenario &s) { s.name = "renamed"; });
    QString saveError;
    QVERIFY2(doc.saveAsNative(doc.nativeFilePath(), saveError), qPrintable(saveError));
    ScenarioDocument again(PresetCatalog::bundled());
    QVERIFY(again.openNative(latin1, error));
    QCOMPARE(again.scenario().name, std::string("renamed"));
    QVERIFY(!QFile::exists(m_dir.filePath(QString::fromUtf8("caf\uFFFD.yaml"))));
    // QTemporaryDir cannot remove names Qt cannot spell.
    for (const char *name : {"/caf\xe9.yaml", "/r\xe9sum\xe9.png", "/xr\xe9sum\xe9.png"})
        ::unlink((dir + name).c_str());
}

void TestChartExport::fullDiskKeepsTheOldFile_data()
{
    QTest::addColumn<QString>("file");
    QTest::newRow("png") << QStringLiteral("chart.png");
    QTest::newRow("pdf") << QStringLiteral("chart.pdf");
    QTest::newRow("svg") << QStringLiteral("chart.svg");
}

// On a full disk a PNG export replaced the old chart with a truncated file, a PDF export exited 0
// with a truncated file, and SVG said "Unknown error". A 96 KiB tmpfs in a private mount namespace
// (unshare -rm), skipped where it cannot be made.
void TestChartExport::fullDiskKeepsTheOldFile()
{
    QFETCH(QString, file);
    const QString mnt = m_dir.filePath(QStringLiteral("full-") + file);
    QVERIFY(QDir().mkpath(mnt));
    QProcess process;
    process.setProcessEnvironment(offscreenEnvironment(m_dir.path()));
    process
        .start(QStringLiteral("unshare"),
               {QStringLiteral("-rm"),
                QStringLiteral("sh"),
                QStringLiteral("-c"),
                QStringLiteral(
                    "mount -t tmpfs -o size=96k tmpfs \"$1\" || exit 77; "
                    "printf 'the old chart' > \"$1/$4\"; head -c 200000 /dev/zero > \"$1/filler\" "
                    "2>/dev/null; \"$2\" --export \"$3\" -o \"$1/$4\" --width 2000 --height 1500; "
                    "rc=$?; cat \"$1/$4\"; echo; ls -A \"$1\" | tr '\\n' ' '; exit $rc"),
                QStringLiteral("sh"),
                mnt,
                QStringLiteral(MEMBUDGET_GUI_EXE),
                QStringLiteral(MEMBUDGET_TEST_DATA "/qlora-7b.yaml"),
                file});
    if (!process.waitForFinished(60000) || process.exitCode() == 77
        || process.error() == QProcess::FailedToStart)
        QSKIP("cannot mount a small tmpfs here (unshare -rm)");
    const QString out = QString::fromUtf8(process.readAllStandardOutput());
    const QString err = QString::fromUtf8(process.readAllStandardError());
    QVERIFY2(process.exitCode() == 1, qPrintable(err));
    QVERIFY2(err.contains(QStringLiteral("membudget export: cannot write ") + mnt + QLatin1Char('/')
                          + file + QStringLiteral(": No space left on device")),
             qPrintable(err));
    // The old file whole, and nothing left beside it.
    QCOMPARE(out, QStringLiteral("the old chart\n") + file + QStringLiteral(" filler "));
}

// Under tr_TR, tolower('I') is not 'i': "1GIB" was refused by export (Qt sets the user's locale)
// and accepted by the command line.
void TestChartExport::sizesReadTheSameInTurkish()
{
    if (!std::setlocale(LC_ALL, "tr_TR.UTF-8"))
        QSKIP("the tr_TR.UTF-8 locale is not installed");
    std::setlocale(LC_ALL, "C");
    const QString scenario = m_dir.filePath(QStringLiteral("turkish.yaml"));
    QFile f(scenario);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write("format: membudget/1\nmodel: {preset: llama-2-7b}\noverheads: {cuda_context: 1GIB}\n");
    f.close();
    QProcess process;
    QProcessEnvironment env = offscreenEnvironment(m_dir.path());
    env.insert(QStringLiteral("LC_ALL"), QStringLiteral("tr_TR.UTF-8"));
    process.setProcessEnvironment(env);
    process.start(QStringLiteral(MEMBUDGET_GUI_EXE),
                  {QStringLiteral("--export"),
                   scenario,
                   QStringLiteral("-o"),
                   m_dir.filePath(QStringLiteral("turkish.png"))});
    QVERIFY(process.waitForFinished(30000));
    QVERIFY2(process.exitCode() == 0, process.readAllStandardError().constData());
}

QTEST_MAIN(TestChartExport)
#include "tst_chart_export.moc"
