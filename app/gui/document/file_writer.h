// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The desktop application's one way to write a file (scenarios, chart exports).

#include <QByteArray>
#include <QString>

#include <string>

namespace membudget {

// A file name as the system spells it (bytes) and as Qt does: Qt 6 decodes names as UTF-8 and
// turns other bytes into U+FFFD, so a name that is not UTF-8 only survives as bytes. Paths from the
// command line are kept as bytes (NativeArguments); paths from dialogs arrive as QString.
std::string nativePath(const QString &path);
QString displayPath(const std::string &nativePath);

// Writes `bytes` to `path` atomically: QSaveFile where Qt can name the path, the core's
// writeFileAtomically where it cannot. Either way the old file stays whole until the new one is
// complete, nothing is left behind on failure, and `error` says "cannot write PATH: " and the
// system's reason ("No space left on device").
bool writeFileSafely(const std::string &path, const QByteArray &bytes, QString &error);

} // namespace membudget
