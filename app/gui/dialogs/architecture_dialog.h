// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Edits every field of the model's architecture. The result is written back as the model section's
// explicit keys (only what differs from the preset when the model is a preset).

#include "model/model_architecture.h"
#include "model/scenario.h"

#include <QDialog>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSpinBox;

namespace membudget {

class ArchitectureDialog : public QDialog
{
    Q_OBJECT
public:
    ArchitectureDialog(const ModelArchitecture &arch,
                       const QString &modelName,
                       QWidget *parent = nullptr);

    ModelArchitecture architecture() const;

    // The model section after the edit: with a preset, the preset plus the keys that differ from
    // `resolved`; without one, every key (quick mode becomes an explicit architecture).
    static ModelSpec specFromEdit(const ModelSpec &spec,
                                  const ModelArchitecture &resolved,
                                  const ModelArchitecture &edited);

private:
    void setArchitecture(const ModelArchitecture &arch);
    void updateCount();

    QComboBox *m_family;
    QComboBox *m_mlp;
    QComboBox *m_norm;
    QComboBox *m_positions;
    QSpinBox *m_layers;
    QSpinBox *m_hidden;
    QSpinBox *m_intermediate;
    QSpinBox *m_heads;
    QSpinBox *m_kvHeads;
    QSpinBox *m_headDim;
    QSpinBox *m_vocab;
    QSpinBox *m_maxPositions;
    QSpinBox *m_normsPerLayer;
    QSpinBox *m_experts;
    QSpinBox *m_expertsPerToken;
    QCheckBox *m_tied;
    QCheckBox *m_qkvBias;
    QCheckBox *m_oBias;
    QCheckBox *m_mlpBias;
    QCheckBox *m_qkNorm;
    QCheckBox *m_parallelAttention;
    QDoubleSpinBox *m_attentionDropout;
    QDoubleSpinBox *m_hiddenDropout;
    QLabel *m_count;
};

} // namespace membudget
