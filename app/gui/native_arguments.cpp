// SPDX-License-Identifier: GPL-3.0-or-later
#include "native_arguments.h"

#include <QFile>

namespace membudget {

NativeArguments::NativeArguments(int argc, char **argv)
{
    const auto add = [this](const QByteArray &raw) {
        const QString key = QFile::decodeName(raw);
        if (!m_bytes.contains(key)) // an earlier argument wins on a clash
            m_bytes.insert(key, raw);
    };
    for (int i = 1; i < argc; ++i) {
        const QByteArray arg(argv[i]);
        add(arg);
        if (arg.startsWith('-')) {
            if (const qsizetype eq = arg.indexOf('='); eq > 0)
                add(arg.mid(eq + 1)); // --output=x
            if (!arg.startsWith("--") && arg.size() > 2)
                add(arg.mid(2)); // -ox
        }
    }
}

std::string NativeArguments::path(const QString &value) const
{
    const auto it = m_bytes.constFind(value);
    return (it != m_bytes.constEnd() ? *it : QFile::encodeName(value)).toStdString();
}

} // namespace membudget
