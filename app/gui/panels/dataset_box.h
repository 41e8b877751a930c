// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// "Run & cost": the scenario's dataset (examples, tokens per example, epochs) and the price per
// GPU-hour of each selected GPU, the list price of its preset unless changed. Every edit goes
// through the document (one undo command each), like the other controls.

#include <QGroupBox>

#include <string>
#include <vector>

class QDoubleSpinBox;
class QFormLayout;
class QSpinBox;
class QToolButton;

namespace membudget {

class ScenarioDocument;

class DatasetBox : public QGroupBox
{
    Q_OBJECT
public:
    explicit DatasetBox(ScenarioDocument *document, QWidget *parent = nullptr);

    // Shows the document's scenario (signals blocked).
    void syncFromDocument();

    QDoubleSpinBox *examples() const { return m_examples; }
    QSpinBox *tokensPerExample() const { return m_tokens; }
    QDoubleSpinBox *epochs() const { return m_epochs; }
    // The price box of GPU `id`, or null when that GPU is not selected.
    QDoubleSpinBox *priceBox(const std::string &id) const;

private:
    void editDataset();
    void rebuildPrices();

    struct PriceRow
    {
        std::string id;
        QDoubleSpinBox *price = nullptr;
        QToolButton *reset = nullptr;
    };

    ScenarioDocument *m_doc;
    bool m_syncing = false;
    QDoubleSpinBox *m_examples;
    QSpinBox *m_tokens;
    QDoubleSpinBox *m_epochs;
    QFormLayout *m_form;
    std::vector<PriceRow> m_prices;
};

} // namespace membudget
