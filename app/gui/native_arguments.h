// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Command-line arguments as bytes. QCoreApplication::arguments() decodes them as UTF-8 and turns
// any other byte into U+FFFD, so a file name in another encoding (a Latin-1 folder, a name from an
// old archive) would name a file that does not exist. The command line of membudget works with such
// names; this gives membudget-gui the same.

#include <QByteArray>
#include <QHash>
#include <QString>

#include <string>

namespace membudget {

class NativeArguments
{
public:
    NativeArguments() = default;
    // argv after QApplication has taken its own options out.
    NativeArguments(int argc, char **argv);

    // The bytes behind `value`, an argument or option value as QCommandLineParser returned it
    // ("--output=x", "-o x" and "x" forms); QFile::encodeName(value) when it did not come from
    // the command line.
    std::string path(const QString &value) const;

private:
    QHash<QString, QByteArray> m_bytes;
};

} // namespace membudget
