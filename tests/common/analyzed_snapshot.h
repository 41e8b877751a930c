// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once
// A snapshot file read and analysed for a test: the test stops with the reader's or the analysis's
// message when either fails.
#include "snapshot/snapshot_analysis.h"
#include "snapshot/snapshot_file.h"

#include <QString>
#include <QtGlobal>

struct AnalyzedSnapshot
{
    membudget::snapshot::MemorySnapshot snapshot;
    membudget::snapshot::SnapshotAnalysis analysis;
};

inline AnalyzedSnapshot loadAnalyzedSnapshot(const QString &file)
{
    AnalyzedSnapshot l;
    membudget::LoadError error;
    auto snap = membudget::snapshot::loadMemorySnapshotFile(file.toStdString(), error);
    if (!snap)
        qFatal("%s", error.toString().c_str());
    l.snapshot = std::move(*snap);
    std::string problem;
    if (!membudget::snapshot::analyzeSnapshot(l.snapshot, -1, 0, l.analysis, problem))
        qFatal("%s", problem.c_str());
    return l;
}
