// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// The published config.json files in tests/data/hub that the Hub tests serve on the loopback
// address (tests/data/hub/README.md says where each comes from).

#include <QByteArray>
#include <QFile>
#include <QString>

namespace membudget::test {

// "meta-llama/Llama-3.1-70B/config.json" -> the file's bytes (empty when missing).
inline QByteArray hubDataFile(const QString &relative)
{
    QFile f(QStringLiteral(MEMBUDGET_SOURCE_DIR "/tests/data/hub/") + relative);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// Where the Hub serves Llama-3.1-70B's config.json at revision main.
inline const QByteArray kLlamaConfigPath = "/meta-llama/Llama-3.1-70B/resolve/main/config.json";

} // namespace membudget::test
