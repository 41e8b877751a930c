// SPDX-License-Identifier: GPL-3.0-or-later
#include "panels/dataset_box.h"

#include "document/scenario_document.h"

#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QToolButton>

#include <cmath>

namespace membudget {

namespace {

DatasetConfig datasetOrDefault(const Scenario &s)
{
    return s.dataset ? *s.dataset : DatasetConfig{10000, 0, 1.0};
}

} // namespace

DatasetBox::DatasetBox(ScenarioDocument *document, QWidget *parent)
    : QGroupBox(tr("Run && cost"), parent)
    , m_doc(document)
    , m_examples(new QDoubleSpinBox)
    , m_tokens(new QSpinBox)
    , m_epochs(new QDoubleSpinBox)
    , m_form(new QFormLayout(this))
{
    setObjectName(QStringLiteral("datasetBox"));
    setCheckable(true);
    setToolTip(tr("A dataset to run: how long the run takes on each GPU, its GPU-hours and cost"));
    m_form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    m_form->setRowWrapPolicy(QFormLayout::DontWrapRows);

    m_examples->setObjectName(QStringLiteral("datasetExamples"));
    m_examples->setRange(1, 1e12);
    m_examples->setDecimals(0);
    m_examples->setSingleStep(1000);
    m_examples->setGroupSeparatorShown(true);
    m_examples->setKeyboardTracking(false);
    m_examples->setToolTip(tr("Training examples (sequences) in the dataset"));
    m_tokens->setObjectName(QStringLiteral("datasetTokens"));
    m_tokens->setRange(0, 100'000'000);
    m_tokens->setSingleStep(256);
    m_tokens->setGroupSeparatorShown(true);
    m_tokens->setKeyboardTracking(false);
    m_tokens->setSpecialValueText(tr("sequence length"));
    m_tokens->setToolTip(tr("Tokens per example; examples are packed into the sequences"));
    m_epochs->setObjectName(QStringLiteral("datasetEpochs"));
    m_epochs->setRange(0.01, 1e6);
    m_epochs->setDecimals(2);
    m_epochs->setSingleStep(1);
    m_epochs->setKeyboardTracking(false);
    m_epochs->setToolTip(tr("Passes over the dataset (fractions allowed)"));
    m_form->addRow(tr("Examples:"), m_examples);
    m_form->addRow(tr("Tokens each:"), m_tokens);
    m_form->addRow(tr("Epochs:"), m_epochs);

    connect(this, &QGroupBox::toggled, this, [this](bool on) {
        if (m_syncing)
            return;
        const DatasetConfig dataset = datasetOrDefault(m_doc->scenario());
        m_doc->edit(on ? tr("Add a dataset") : tr("Remove the dataset"), [&](Scenario &s) {
            if (on)
                s.dataset = dataset;
            else
                s.dataset.reset();
        });
    });
    connect(m_examples, &QDoubleSpinBox::valueChanged, this, &DatasetBox::editDataset);
    connect(m_tokens, &QSpinBox::valueChanged, this, &DatasetBox::editDataset);
    connect(m_epochs, &QDoubleSpinBox::valueChanged, this, &DatasetBox::editDataset);
    connect(m_doc, &ScenarioDocument::changed, this, &DatasetBox::syncFromDocument);
    syncFromDocument();
}

QDoubleSpinBox *DatasetBox::priceBox(const std::string &id) const
{
    for (const PriceRow &row : m_prices)
        if (row.id == id)
            return row.price;
    return nullptr;
}

void DatasetBox::editDataset()
{
    if (m_syncing)
        return;
    const DatasetConfig dataset{static_cast<std::int64_t>(std::llround(m_examples->value())),
                                m_tokens->value(),
                                m_epochs->value()};
    m_doc->edit(tr("Change the dataset"), [&](Scenario &s) { s.dataset = dataset; });
}

// One row per selected GPU: its price per GPU-hour, the preset's list price until changed.
void DatasetBox::rebuildPrices()
{
    for (PriceRow &row : m_prices)
        m_form->removeRow(row.price->parentWidget());
    m_prices.clear();
    for (const GpuSpec &gpu : m_doc->selectedGpus()) {
        auto *field = new QWidget;
        auto *line = new QHBoxLayout(field);
        line->setContentsMargins(0, 0, 0, 0);
        PriceRow row;
        row.id = gpu.id;
        row.price = new QDoubleSpinBox;
        row.price->setObjectName(QStringLiteral("price-%1").arg(QString::fromStdString(gpu.id)));
        row.price->setRange(0, 1e4);
        row.price->setDecimals(2);
        row.price->setSingleStep(0.1);
        row.price->setPrefix(QStringLiteral("$"));
        row.price->setSuffix(tr(" /GPU-h"));
        row.price->setSpecialValueText(tr("no price"));
        row.price->setKeyboardTracking(false);
        const std::string &source = gpu.performance.price_source;
        row.price->setToolTip(source.empty()
                                  ? tr("No public on-demand price for this GPU: enter yours")
                                  : tr("List price: $%1 per GPU-hour, %2")
                                        .arg(gpu.performance.price_per_hour, 0, 'f', 2)
                                        .arg(QString::fromStdString(source)));
        row.reset = new QToolButton;
        row.reset->setObjectName(
            QStringLiteral("resetPrice-%1").arg(QString::fromStdString(gpu.id)));
        row.reset->setText(QStringLiteral("↺"));
        row.reset->setAutoRaise(true);
        row.reset->setToolTip(tr("Back to the preset's list price"));
        line->addWidget(row.price, 1);
        line->addWidget(row.reset);
        const std::string id = gpu.id;
        const QString name = QString::fromStdString(gpu.name);
        connect(row.price, &QDoubleSpinBox::valueChanged, this, [this, id, name](double v) {
            if (m_syncing)
                return;
            m_doc->edit(tr("Price of %1").arg(name), [&](Scenario &s) { s.prices[id] = v; });
        });
        connect(row.reset, &QToolButton::clicked, this, [this, id, name] {
            m_doc->edit(tr("List price of %1").arg(name), [&](Scenario &s) { s.prices.erase(id); });
        });
        auto *label = new QLabel(name);
        label->setToolTip(name);
        label->setBuddy(row.price);
        m_form->addRow(label, field);
        m_prices.push_back(row);
    }
}

void DatasetBox::syncFromDocument()
{
    m_syncing = true;
    const Scenario &s = m_doc->scenario();
    setChecked(s.dataset.has_value());
    const DatasetConfig dataset = datasetOrDefault(s);
    {
        const QSignalBlocker a(m_examples), b(m_tokens), c(m_epochs);
        m_examples->setValue(static_cast<double>(dataset.examples));
        m_tokens->setValue(static_cast<int>(dataset.tokens_per_example));
        m_epochs->setValue(dataset.epochs);
    }
    // Rows follow the selected GPUs; values follow the scenario's prices.
    const std::vector<GpuSpec> gpus = m_doc->selectedGpus();
    bool same = gpus.size() == m_prices.size();
    for (std::size_t i = 0; same && i < gpus.size(); ++i)
        same = gpus[i].id == m_prices[i].id;
    if (!same)
        rebuildPrices();
    for (std::size_t i = 0; i < m_prices.size(); ++i) {
        const PriceRow &row = m_prices[i];
        const QSignalBlocker block(row.price);
        row.price->setValue(gpuHourPrice(s, row.id, gpus[i].performance.price_per_hour));
        row.reset->setEnabled(s.prices.count(row.id) > 0);
    }
    m_syncing = false;
}

} // namespace membudget
