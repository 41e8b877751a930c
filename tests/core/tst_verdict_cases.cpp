// SPDX-License-Identifier: GPL-3.0-or-later
// Published near-capacity GPU runs (tests/data/verdict_cases, sources in its README.md): the
// verdict of `membudget estimate FILE --json` on the GPU each run used. A run that completed must
// not be called "does not fit"; a run that ran out of memory must not be called "fits". Cases
// listed as known misses are reported, not failed; a case listed as passing that goes wrong fails.
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QSet>
#include <QtTest>

class TestVerdictCases : public QObject
{
    Q_OBJECT
private:
    struct Case
    {
        QString file, gpu, outcome, metric, measured, expect, reason;
    };

    static QString casesDir()
    {
        return QStringLiteral(MEMBUDGET_SOURCE_DIR "/tests/data/verdict_cases/");
    }

    // cases.tsv: comment lines start with '#', then a header row, then one row per case.
    static QList<Case> readCases(QString &problem)
    {
        QFile f(casesDir() + "cases.tsv");
        if (!f.open(QIODevice::ReadOnly | QIODevice::Text)) {
            problem = "cannot read " + f.fileName();
            return {};
        }
        QList<Case> cases;
        bool header = true;
        int lineNo = 0;
        while (!f.atEnd()) {
            ++lineNo;
            const QString line = QString::fromUtf8(f.readLine()).trimmed();
            if (line.isEmpty() || line.startsWith('#'))
                continue;
            const QStringList c = line.split('\t');
            if (c.size() != 8) {
                problem = QString("cases.tsv:%1: %2 columns, expected 8").arg(lineNo).arg(c.size());
                return {};
            }
            if (std::exchange(header, false))
                continue;
            cases.append({c[0], c[1], c[2], c[3], c[4], c[5], c[7]});
        }
        return cases;
    }

    static QJsonObject estimate(const QString &file, QString &problem)
    {
        QProcess p;
        p.start(MEMBUDGET_CLI, {"estimate", casesDir() + file, "--json"});
        if (!p.waitForFinished(120000) || p.exitCode() != 0) {
            problem = file + ": " + QString::fromUtf8(p.readAllStandardError());
            return {};
        }
        return QJsonDocument::fromJson(p.readAllStandardOutput()).object();
    }

    static QJsonObject gpuEntry(const QJsonObject &est, const QString &gpu)
    {
        for (const QJsonValue g : est["gpus"].toArray())
            if (g["id"].toString() == gpu)
                return g.toObject();
        return {};
    }

    // The estimate's figure for the metric the source measured, in GiB (-1 when not comparable).
    static double estimatedGiB(const QJsonObject &est, const QString &metric)
    {
        const QJsonObject perGpu = est["per_gpu"].toObject();
        const double gib = 1024.0 * 1024.0 * 1024.0;
        if (metric == "allocated")
            return perGpu["peak_allocated"].toDouble() / gib;
        if (metric == "reserved")
            return perGpu["peak_reserved"].toDouble() / gib;
        return -1;
    }

private slots:
    void everyScenarioIsListed()
    {
        QString problem;
        const QList<Case> cases = readCases(problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        QSet<QString> listed;
        for (const Case &c : cases)
            listed.insert(c.file);
        const QStringList files = QDir(casesDir()).entryList({"*.yaml"}, QDir::Files);
        QCOMPARE(listed.size(), cases.size()); // no file twice
        QCOMPARE(QSet<QString>(files.begin(), files.end()), listed);
    }

    void verdictsOfPublishedRuns()
    {
        QString problem;
        const QList<Case> cases = readCases(problem);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        QVERIFY(cases.size() >= 12);
        int right = 0, knownMisses = 0;
        QStringList regressions;
        for (const Case &c : cases) {
            QVERIFY2(c.outcome == "completed" || c.outcome == "oom", qPrintable(c.file));
            QVERIFY2(c.expect == "pass" || c.expect == "miss", qPrintable(c.file));
            const QJsonObject est = estimate(c.file, problem);
            QVERIFY2(problem.isEmpty(), qPrintable(problem));
            const QJsonObject gpu = gpuEntry(est, c.gpu);
            QVERIFY2(!gpu.isEmpty(), qPrintable(c.file + ": no verdict for " + c.gpu));
            const QString verdict = gpu["verdict"].toString();
            const bool ok = c.outcome == "completed" ? verdict != "does_not_fit"
                                                     : verdict != "fits";
            const double est_gib = estimatedGiB(est, c.metric);
            const QString error
                = est_gib < 0 || c.measured == "-"
                      ? QString("-")
                      : QString::asprintf("%+.1f%%", 100 * (est_gib / c.measured.toDouble() - 1));
            qInfo("%-42s %-10s %-9s -> %-12s %s %s",
                  qPrintable(c.file),
                  qPrintable(c.gpu),
                  qPrintable(c.outcome),
                  qPrintable(verdict),
                  ok ? "right" : (c.expect == "miss" ? "known miss" : "WRONG"),
                  qPrintable(c.metric + " " + error));
            right += ok;
            if (c.expect == "miss") {
                ++knownMisses;
                if (ok)
                    qWarning("%s: listed as a known miss but now right; mark it pass in cases.tsv",
                             qPrintable(c.file));
                else
                    qInfo("    known miss: %s", qPrintable(c.reason));
            } else if (!ok) {
                regressions << c.file + " (" + c.outcome + ", verdict " + verdict + ")";
            }
        }
        qInfo("%d of %d verdicts right; %d listed as known misses",
              right,
              int(cases.size()),
              knownMisses);
        QVERIFY2(regressions.isEmpty(), qPrintable("regressed: " + regressions.join(", ")));
    }
};

QTEST_GUILESS_MAIN(TestVerdictCases)
#include "tst_verdict_cases.moc"
