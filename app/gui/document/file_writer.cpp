// SPDX-License-Identifier: GPL-3.0-or-later
#include "document/file_writer.h"

#include "io/atomic_file.h"

#include <QFile>
#include <QSaveFile>

namespace membudget {

std::string nativePath(const QString &path)
{
    return QFile::encodeName(path).toStdString();
}

QString displayPath(const std::string &nativePath)
{
    return QFile::decodeName(QByteArray::fromStdString(nativePath));
}

bool writeFileSafely(const std::string &path, const QByteArray &bytes, QString &error)
{
    const QString name = displayPath(path);
    if (QFile::encodeName(name).toStdString() != path) {
        std::string problem;
        if (writeFileAtomically(path, std::string_view(bytes.constData(), bytes.size()), problem))
            return true;
        error = QString::fromStdString(problem);
        return false;
    }
    // Unbuffered: a write that fails (a full disk) fails at write() with the system's reason; a
    // buffered one would only fail at commit() with "Unknown error".
    QSaveFile file(name);
    if (!file.open(QIODevice::WriteOnly | QIODevice::Unbuffered)) {
        error = QObject::tr("cannot write %1: %2").arg(name, file.errorString());
        return false;
    }
    if (file.write(bytes) != bytes.size()) {
        error = QObject::tr("cannot write %1: %2").arg(name, file.errorString());
        file.cancelWriting();
        return false;
    }
    if (!file.commit()) {
        error = QObject::tr("cannot write %1: %2").arg(name, file.errorString());
        return false;
    }
    return true;
}

} // namespace membudget
