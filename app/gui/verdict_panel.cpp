// SPDX-License-Identifier: GPL-3.0-or-later
#include "verdict_panel.h"

#include "breakdown_table.h"
#include "chart_theme.h"
#include "fit_solver.h"
#include "scenario_document.h"

#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace membudget {

namespace {
enum Column { ColGpu, ColMemory, ColVerdict, ColMaxBatch, ColMaxSequence, ColCount };

QString bytes(Bytes b, ByteUnit unit) { return QString::fromStdString(formatBytes(b, unit)); }
} // namespace

VerdictPanel::VerdictPanel(QWidget *parent) : QWidget(parent), m_summary(new QLabel), m_table(new QTreeWidget)
{
    m_summary->setWordWrap(true);
    m_summary->setTextFormat(Qt::RichText);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_summary->setObjectName(QStringLiteral("verdictSummary"));
    m_table->setObjectName(QStringLiteral("verdictTable"));
    m_table->setRootIsDecorated(false);
    m_table->setAlternatingRowColors(true);
    m_table->setUniformRowHeights(true);
    m_table->setSelectionMode(QAbstractItemView::NoSelection);
    m_table->setHeaderLabels({tr("GPU"), tr("Memory"), tr("Verdict"), tr("Max micro-batch"), tr("Max sequence")});
    m_table->headerItem()->setToolTip(ColMaxBatch, tr("The largest micro-batch that fits at this sequence length"));
    m_table->headerItem()->setToolTip(ColMaxSequence, tr("The longest sequence that fits at this micro-batch size"));
    m_table->header()->setStretchLastSection(false);
    m_table->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_table->header()->setSectionResizeMode(ColVerdict, QHeaderView::Stretch);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 4, 6, 6);
    layout->addWidget(m_summary);
    layout->addWidget(m_table, 1);
}

QString VerdictPanel::summaryText() const { return m_summary->text(); }

void VerdictPanel::update(const ScenarioDocument &doc, ByteUnit unit)
{
    const ChartColors colors = chartColors(palette());
    m_table->clear();
    if (!doc.valid()) {
        m_summary->setText(QStringLiteral("<span style='color:%1'><b>%2</b> %3</span>")
                                   .arg(colors.danger.name(), tr("Cannot estimate:"), doc.error().toHtmlEscaped()));
        return;
    }
    const MemoryEstimate &est = doc.estimate();
    QString summary = tr("<b>%1</b> per GPU at the peak (in the <b>%2</b> phase): %3 allocated by PyTorch, %4 reserved.")
                              .arg(est.too_large ? tr("Too large") : bytes(est.device_total, unit),
                                   QString::fromUtf8(phaseLabel(est.peak_phase)).toLower(),
                                   bytes(est.peak_allocated, unit), bytes(est.peak_reserved, unit));
    summary += QStringLiteral("<br>") + tr("%1 parameters, %2 trainable.")
                                              .arg(QString::fromStdString(formatCount(static_cast<double>(est.parameters))),
                                                   QString::fromStdString(formatCount(static_cast<double>(est.trainable_parameters))));
    if (est.cpu_offload_total > 0)
        summary += QStringLiteral("<br>") + tr("CPU offload needs <b>%1</b> of CPU RAM (%2 per GPU).")
                                                   .arg(bytes(est.cpu_offload_total, unit), bytes(est.cpu_offload_bytes, unit));
    const auto gpus = doc.selectedGpus();
    if (gpus.empty())
        summary += QStringLiteral("<br><i>") + tr("Select GPUs in the controls to compare against.") + QStringLiteral("</i>");
    m_summary->setText(summary);

    const EstimateInput &in = doc.input();
    for (const GpuSpec &gpu : gpus) {
        auto *item = new QTreeWidgetItem(m_table);
        const bool fits = est.device_total <= gpu.memory_bytes;
        item->setText(ColGpu, QString::fromStdString(gpu.name));
        item->setData(ColGpu, Qt::UserRole, QString::fromStdString(gpu.id));
        item->setText(ColMemory, bytes(gpu.memory_bytes, unit));
        item->setText(ColVerdict, (fits ? QStringLiteral("✓ ") : QStringLiteral("✗ ")) + verdictText(est, gpu, unit));
        item->setForeground(ColVerdict, fits ? colors.ok : colors.danger);
        QFont f = item->font(ColVerdict);
        f.setBold(true);
        item->setFont(ColVerdict, f);
        const std::int64_t batch = maxMicroBatch(in, gpu.memory_bytes);
        const std::int64_t seq = maxSequenceLength(in, gpu.memory_bytes);
        item->setText(ColMaxBatch, batch > 0 ? QLocale().toString(static_cast<qlonglong>(batch)) : tr("none"));
        item->setText(ColMaxSequence, seq > 0 ? QLocale().toString(static_cast<qlonglong>(seq)) : tr("none"));
        for (int c = ColMemory; c < ColCount; ++c)
            if (c != ColVerdict)
                item->setTextAlignment(c, Qt::AlignRight | Qt::AlignVCenter);
    }
}

} // namespace membudget
