// SPDX-License-Identifier: GPL-3.0-or-later
#include "panels/breakdown_view.h"

#include "advice/explanation.h"
#include "charts/chart_theme.h"
#include "document/scenario_document.h"
#include "model/pipeline_parallel.h"

#include <QHeaderView>
#include <QLabel>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace membudget {

namespace {

QString bytes(Bytes b, ByteUnit unit)
{
    return QString::fromStdString(formatBytes(b, unit));
}

} // namespace

BreakdownView::BreakdownView(QWidget *parent)
    : QWidget(parent)
    , m_summary(new QLabel)
    , m_table(new QTreeWidget)
{
    setObjectName(QStringLiteral("breakdownView"));
    m_summary->setWordWrap(true);
    m_summary->setObjectName(QStringLiteral("breakdownSummary"));
    m_table->setObjectName(QStringLiteral("breakdownTable"));
    m_table->setRootIsDecorated(false);
    m_table->setAlternatingRowColors(true);
    m_table->setUniformRowHeights(true);
    m_table->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_table->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->header()->setStretchLastSection(false);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(8, 8, 8, 8);
    layout->addWidget(m_summary);
    layout->addWidget(m_table, 1);
}

void BreakdownView::update(const ScenarioDocument &doc, ByteUnit unit)
{
    m_table->clear();
    if (!doc.valid()) {
        m_summary->setText(tr("Cannot estimate: %1").arg(doc.error()));
        return;
    }
    const MemoryEstimate &est = doc.estimate();
    const int phaseCount = est.training ? kPhaseCount : 1;
    QStringList headers{tr("Component")};
    for (int p = 0; p < phaseCount; ++p) {
        const auto phase = static_cast<Phase>(p);
        QString name = est.training ? QString::fromUtf8(phaseLabel(phase)) : tr("Inference");
        if (phase == est.peak_phase)
            name += tr(" (peak)");
        headers << name;
    }
    if (est.training)
        headers << tr("At the peak");
    m_table->setHeaderLabels(headers);

    auto addRow = [&](const QString &name, auto valueOf, const QString &tip, bool bold) {
        auto *item = new QTreeWidgetItem(m_table);
        item->setText(0, name);
        item->setToolTip(0, tip);
        for (int p = 0; p < phaseCount; ++p)
            item->setText(1 + p, bytes(valueOf(est.phase(static_cast<Phase>(p))), unit));
        if (est.training)
            item->setText(1 + phaseCount, bytes(valueOf(est.components), unit));
        for (int c = 1; c < m_table->columnCount(); ++c) {
            item->setTextAlignment(c, Qt::AlignRight | Qt::AlignVCenter);
            if (bold) {
                QFont f = item->font(c);
                f.setBold(true);
                item->setFont(c, f);
                item->setFont(0, f);
            }
        }
    };
    for (int c = 0; c < kComponentCount; ++c) {
        const auto comp = static_cast<Component>(c);
        if (!componentApplies(comp, est.training))
            continue;
        const QString tip = componentDescription(comp) + QStringLiteral("\n")
                            + QString::fromStdString(
                                explainComponent(doc.input(), est, est.peak_phase, comp, unit));
        addRow(
            componentName(comp), [comp](const Breakdown &b) { return b[comp]; }, tip, false);
    }
    addRow(
        tr("Allocated (PyTorch)"),
        [](const Breakdown &b) { return b.allocated(); },
        tr("torch.cuda.memory_allocated(): the first components together"),
        true);
    addRow(
        tr("Total per GPU (nvidia-smi)"),
        [](const Breakdown &b) { return b.total(); },
        tr("Allocated plus the CUDA context, NCCL buffers and the allocator's reserve"),
        true);
    std::string summary = explainPhase(doc.input(), est, est.peak_phase, unit);
    if (const std::string stage = pipelineStageSummary(doc.input().parallelism, est.derivation);
        !stage.empty())
        summary += " Per GPU is the pipeline's " + stage + ".";
    m_summary->setText(QString::fromStdString(summary));
}

} // namespace membudget
