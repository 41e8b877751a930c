// SPDX-License-Identifier: GPL-3.0-or-later
// writeFileAtomically: the core's one writer (import-config -o; the app where Qt cannot name a
// path). Whole or nothing, never through a link, the destination's mode kept.
#include "io/atomic_file.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QtTest>

#include <sys/stat.h>
#include <unistd.h>

using namespace membudget;

namespace {

QByteArray contents(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray("<unreadable>");
}

mode_t modeOf(const QString &path)
{
    struct stat st = {};
    ::lstat(QFile::encodeName(path).constData(), &st);
    return st.st_mode & 07777;
}

} // namespace

class TestAtomicFile : public QObject
{
    Q_OBJECT
private:
    QTemporaryDir m_dir;
    std::string path(const char *name) const { return m_dir.filePath(name).toStdString(); }

private slots:
    void writesAndReplaces()
    {
        std::string error;
        QVERIFY2(writeFileAtomically(path("a.yaml"), "one\n", error), error.c_str());
        QVERIFY2(writeFileAtomically(path("a.yaml"), "two\n", error), error.c_str());
        QCOMPARE(contents(m_dir.filePath("a.yaml")), QByteArray("two\n"));
        const QStringList left = QDir(m_dir.path()).entryList(QDir::Files | QDir::Hidden);
        QCOMPARE(left, QStringList{"a.yaml"});
    }

    void keepsTheDestinationsMode()
    {
        std::string error;
        QVERIFY(writeFileAtomically(path("private.yaml"), "secret\n", error));
        QCOMPARE(::chmod(path("private.yaml").c_str(), 0600), 0);
        QVERIFY(writeFileAtomically(path("private.yaml"), "still secret\n", error));
        QCOMPARE(modeOf(m_dir.filePath("private.yaml")), mode_t(0600));
        const mode_t mask = ::umask(022);
        ::umask(mask);
        QVERIFY(writeFileAtomically(path("new.yaml"), "x", error));
        QCOMPARE(modeOf(m_dir.filePath("new.yaml")), mode_t(0666 & ~mask));
    }

    void refusesLinksFoldersAndReadOnlyFiles()
    {
        std::string error;
        QVERIFY(writeFileAtomically(path("target.txt"), "precious\n", error));
        QCOMPARE(::symlink(path("target.txt").c_str(), path("link.yaml").c_str()), 0);
        QVERIFY(!writeFileAtomically(path("link.yaml"), "new", error));
        QCOMPARE(error,
                 "cannot write " + path("link.yaml")
                     + ": it is a symbolic link (not followed: give the path of the file it points "
                       "to)");
        QCOMPARE(contents(m_dir.filePath("target.txt")), QByteArray("precious\n"));
        QVERIFY(QFileInfo(m_dir.filePath("link.yaml")).isSymLink());

        QVERIFY(QDir(m_dir.path()).mkdir("folder.yaml"));
        QVERIFY(!writeFileAtomically(path("folder.yaml"), "new", error));
        QCOMPARE(error, "cannot write " + path("folder.yaml") + ": it is a folder");

        QVERIFY(writeFileAtomically(path("ro.yaml"), "old", error));
        QCOMPARE(::chmod(path("ro.yaml").c_str(), 0444), 0);
        QVERIFY(!writeFileAtomically(path("ro.yaml"), "new", error));
        QCOMPARE(error, "cannot write " + path("ro.yaml") + ": the file is read-only");
        QCOMPARE(contents(m_dir.filePath("ro.yaml")), QByteArray("old"));

        QVERIFY(!writeFileAtomically(path("no-such-folder/x.yaml"), "new", error));
        QCOMPARE(error,
                 "cannot write " + path("no-such-folder/x.yaml") + ": No such file or directory");
    }
};

QTEST_GUILESS_MAIN(TestAtomicFile)
#include "tst_atomic_file.moc"
