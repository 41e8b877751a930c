// SPDX-License-Identifier: GPL-3.0-or-later
#include "dialogs/architecture_dialog.h"

#include "base/byte_format.h"
#include "model/parameter_layout.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QLabel>
#include <QPushButton>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include <memory>

namespace membudget {

namespace {

template<typename Enum, typename NameFn>
QComboBox *enumCombo(int count, NameFn name)
{
    auto *combo = new QComboBox;
    for (int i = 0; i < count; ++i)
        combo->addItem(QString::fromUtf8(name(static_cast<Enum>(i))), i);
    return combo;
}

QSpinBox *intSpin(int min, int max, const QString &tip)
{
    auto *spin = new QSpinBox;
    spin->setRange(min, max);
    spin->setGroupSeparatorShown(true);
    spin->setToolTip(tip);
    spin->setKeyboardTracking(false);
    return spin;
}

QDoubleSpinBox *dropoutSpin(const QString &tip)
{
    auto *spin = new QDoubleSpinBox;
    spin->setRange(0, 0.9);
    spin->setDecimals(2);
    spin->setSingleStep(0.05);
    spin->setToolTip(tip);
    return spin;
}

} // namespace

ArchitectureDialog::ArchitectureDialog(const ModelArchitecture &arch,
                                       const QString &modelName,
                                       QWidget *parent)
    : QDialog(parent)
{
    setWindowTitle(tr("Architecture of %1").arg(modelName));
    setObjectName(QStringLiteral("architectureDialog"));
    m_family = enumCombo<ModelFamily>(5, familyName);
    m_family->setToolTip(tr("The block layout; choosing a family resets its style defaults (MLP, "
                            "norm, positions, biases)"));
    m_mlp = enumCombo<MlpKind>(4, mlpName);
    m_mlp->setToolTip(tr("Gated MLPs save one more intermediate-size activation per token"));
    m_norm = enumCombo<NormKind>(4, normName);
    m_norm->setToolTip(
        tr("RMSNorm and LayerNorm save their input (in fp32 for fp32-upcast norms)"));
    m_positions = enumCombo<PositionKind>(2, positionName);
    m_positions->setToolTip(
        tr("Learned positions add max_position_embeddings x hidden parameters"));
    m_layers = intSpin(1,
                       1000,
                       tr("Decoder layers; activations and weights grow linearly with them"));
    m_hidden = intSpin(1, 1 << 20, tr("Model width (d_model); weights grow with its square"));
    m_intermediate = intSpin(1, 1 << 22, tr("MLP width (per expert for mixture-of-experts models)"));
    m_heads = intSpin(1, 4096, tr("Query heads; eager attention stores heads x sequence² scores"));
    m_kvHeads = intSpin(1,
                        4096,
                        tr("Key/value heads (grouped-query attention when fewer than heads)"));
    m_headDim = intSpin(1, 4096, tr("Dimension of each head"));
    m_vocab = intSpin(
        1,
        10'000'000,
        tr("Vocabulary size; the logits take micro-batch x sequence x vocabulary values"));
    m_maxPositions = intSpin(
        1,
        100'000'000,
        tr("Context length the model was built for (parameters only with learned positions)"));
    m_normsPerLayer = intSpin(0, 8, tr("Norms in each layer (Gemma-2/3: 4, Falcon-7B: 1)"));
    m_experts
        = intSpin(1,
                  4096,
                  tr("Experts per MoE layer (1: dense model); all experts' weights are stored"));
    m_expertsPerToken = intSpin(1,
                                4096,
                                tr("Experts each token is routed to; activations scale with it"));
    m_tied = new QCheckBox(tr("Tied embeddings"));
    m_tied->setToolTip(
        tr("The LM head shares the embedding matrix (one copy of vocabulary x hidden weights)"));
    m_qkvBias = new QCheckBox(tr("q/k/v bias"));
    m_oBias = new QCheckBox(tr("Output projection bias"));
    m_mlpBias = new QCheckBox(tr("MLP bias"));
    m_qkNorm = new QCheckBox(tr("q/k norm"));
    m_qkNorm->setToolTip(tr("RMSNorm over head_dim on queries and keys (Qwen3, Gemma-3, OLMo-2)"));
    m_parallelAttention = new QCheckBox(tr("Parallel attention and MLP"));
    m_parallelAttention->setToolTip(
        tr("Attention and MLP read the same norm output (Falcon, GPT-J)"));
    m_attentionDropout = dropoutSpin(
        tr("Dropout on attention probabilities keeps a mask of heads x sequence² per layer"));
    m_hiddenDropout = dropoutSpin(tr("Dropout after attention and MLP keeps a mask per token"));
    m_count = new QLabel;
    m_count->setObjectName(QStringLiteral("parameterCount"));

    auto *shape = new QGroupBox(tr("Shape"));
    auto *shapeForm = new QFormLayout(shape);
    shapeForm->addRow(tr("Family:"), m_family);
    shapeForm->addRow(tr("Layers:"), m_layers);
    shapeForm->addRow(tr("Hidden size:"), m_hidden);
    shapeForm->addRow(tr("Intermediate size:"), m_intermediate);
    shapeForm->addRow(tr("Attention heads:"), m_heads);
    shapeForm->addRow(tr("KV heads:"), m_kvHeads);
    shapeForm->addRow(tr("Head dimension:"), m_headDim);
    shapeForm->addRow(tr("Vocabulary:"), m_vocab);
    shapeForm->addRow(tr("Max positions:"), m_maxPositions);

    auto *style = new QGroupBox(tr("Style"));
    auto *styleForm = new QFormLayout(style);
    styleForm->addRow(tr("MLP:"), m_mlp);
    styleForm->addRow(tr("Norm:"), m_norm);
    styleForm->addRow(tr("Positions:"), m_positions);
    styleForm->addRow(tr("Norms per layer:"), m_normsPerLayer);
    styleForm->addRow(tr("Experts:"), m_experts);
    styleForm->addRow(tr("Experts per token:"), m_expertsPerToken);
    styleForm->addRow(tr("Attention dropout:"), m_attentionDropout);
    styleForm->addRow(tr("Hidden dropout:"), m_hiddenDropout);
    auto *checks = new QGridLayout;
    checks->addWidget(m_tied, 0, 0);
    checks->addWidget(m_qkNorm, 0, 1);
    checks->addWidget(m_qkvBias, 1, 0);
    checks->addWidget(m_oBias, 1, 1);
    checks->addWidget(m_mlpBias, 2, 0);
    checks->addWidget(m_parallelAttention, 2, 1);
    styleForm->addRow(checks);

    auto *columns = new QHBoxLayout;
    columns->addWidget(shape);
    columns->addWidget(style);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel
                                         | QDialogButtonBox::Reset);
    auto *layout = new QVBoxLayout(this);
    layout->addLayout(columns);
    layout->addWidget(m_count);
    layout->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(buttons->button(QDialogButtonBox::Reset), &QPushButton::clicked, this, [this, arch] {
        setArchitecture(arch);
    });
    buttons->button(QDialogButtonBox::Reset)
        ->setToolTip(tr("Back to the values the dialog opened with"));

    setArchitecture(arch);
    connect(m_family, &QComboBox::currentIndexChanged, this, [this] {
        ModelArchitecture a = architecture();
        applyFamilyDefaults(a, static_cast<ModelFamily>(m_family->currentData().toInt()));
        setArchitecture(a);
    });
    for (QSpinBox *spin : findChildren<QSpinBox *>())
        connect(spin, &QSpinBox::valueChanged, this, &ArchitectureDialog::updateCount);
    for (QCheckBox *box : findChildren<QCheckBox *>())
        connect(box, &QCheckBox::toggled, this, &ArchitectureDialog::updateCount);
    for (QComboBox *combo : {m_mlp, m_norm, m_positions})
        connect(combo, &QComboBox::currentIndexChanged, this, &ArchitectureDialog::updateCount);
}

void ArchitectureDialog::setArchitecture(const ModelArchitecture &a)
{
    const QList<QWidget *> widgets = findChildren<QWidget *>();
    std::vector<std::unique_ptr<QSignalBlocker>> blockers;
    for (QWidget *w : widgets)
        blockers.push_back(std::make_unique<QSignalBlocker>(w));
    m_family->setCurrentIndex(static_cast<int>(a.family));
    m_mlp->setCurrentIndex(static_cast<int>(a.mlp));
    m_norm->setCurrentIndex(static_cast<int>(a.norm));
    m_positions->setCurrentIndex(static_cast<int>(a.positions));
    m_layers->setValue(static_cast<int>(a.layers));
    m_hidden->setValue(static_cast<int>(a.hidden_size));
    m_intermediate->setValue(static_cast<int>(a.intermediate_size));
    m_heads->setValue(static_cast<int>(a.attention_heads));
    m_kvHeads->setValue(static_cast<int>(a.kv_heads));
    m_headDim->setValue(static_cast<int>(a.head_dim));
    m_vocab->setValue(static_cast<int>(a.vocab_size));
    m_maxPositions->setValue(static_cast<int>(a.max_position_embeddings));
    m_normsPerLayer->setValue(static_cast<int>(a.norms_per_layer));
    m_experts->setValue(static_cast<int>(a.experts));
    m_expertsPerToken->setValue(static_cast<int>(a.experts_per_token));
    m_tied->setChecked(a.tied_embeddings);
    m_qkvBias->setChecked(a.qkv_bias);
    m_oBias->setChecked(a.o_bias);
    m_mlpBias->setChecked(a.mlp_bias);
    m_qkNorm->setChecked(a.qk_norm);
    m_parallelAttention->setChecked(a.parallel_attention);
    m_attentionDropout->setValue(a.attention_dropout);
    m_hiddenDropout->setValue(a.hidden_dropout);
    blockers.clear();
    updateCount();
}

ModelArchitecture ArchitectureDialog::architecture() const
{
    ModelArchitecture a;
    a.family = static_cast<ModelFamily>(m_family->currentData().toInt());
    a.mlp = static_cast<MlpKind>(m_mlp->currentData().toInt());
    a.norm = static_cast<NormKind>(m_norm->currentData().toInt());
    a.positions = static_cast<PositionKind>(m_positions->currentData().toInt());
    a.layers = m_layers->value();
    a.hidden_size = m_hidden->value();
    a.intermediate_size = m_intermediate->value();
    a.attention_heads = m_heads->value();
    a.kv_heads = m_kvHeads->value();
    a.head_dim = m_headDim->value();
    a.vocab_size = m_vocab->value();
    a.max_position_embeddings = m_maxPositions->value();
    a.norms_per_layer = m_normsPerLayer->value();
    a.experts = m_experts->value();
    a.experts_per_token = m_expertsPerToken->value();
    a.tied_embeddings = m_tied->isChecked();
    a.qkv_bias = m_qkvBias->isChecked();
    a.o_bias = m_oBias->isChecked();
    a.mlp_bias = m_mlpBias->isChecked();
    a.qk_norm = m_qkNorm->isChecked();
    a.parallel_attention = m_parallelAttention->isChecked();
    a.attention_dropout = m_attentionDropout->value();
    a.hidden_dropout = m_hiddenDropout->value();
    return a;
}

void ArchitectureDialog::updateCount()
{
    const ParameterLayout layout = parameterLayout(architecture());
    QString text = tr("%1 parameters").arg(QString::fromStdString(formatCount(layout.total)));
    if (layout.active < layout.total)
        text += tr(", %1 active per token").arg(QString::fromStdString(formatCount(layout.active)));
    m_count->setText(text);
}

ModelSpec ArchitectureDialog::specFromEdit(const ModelSpec &spec,
                                           const ModelArchitecture &resolved,
                                           const ModelArchitecture &e)
{
    ModelSpec out = spec;
    const bool all = spec.preset.empty();
    if (all)
        out.parameters.reset();
    auto put = [all](auto &field, const auto &value, const auto &before) {
        if (all || value != before)
            field = value;
    };
    put(out.family, e.family, resolved.family);
    put(out.mlp, e.mlp, resolved.mlp);
    put(out.norm, e.norm, resolved.norm);
    put(out.positions, e.positions, resolved.positions);
    put(out.layers, e.layers, resolved.layers);
    put(out.hidden_size, e.hidden_size, resolved.hidden_size);
    put(out.intermediate_size, e.intermediate_size, resolved.intermediate_size);
    put(out.attention_heads, e.attention_heads, resolved.attention_heads);
    put(out.kv_heads, e.kv_heads, resolved.kv_heads);
    put(out.head_dim, e.head_dim, resolved.head_dim);
    put(out.vocab_size, e.vocab_size, resolved.vocab_size);
    put(out.max_position_embeddings, e.max_position_embeddings, resolved.max_position_embeddings);
    put(out.norms_per_layer, e.norms_per_layer, resolved.norms_per_layer);
    put(out.experts, e.experts, resolved.experts);
    put(out.experts_per_token, e.experts_per_token, resolved.experts_per_token);
    put(out.tied_embeddings, e.tied_embeddings, resolved.tied_embeddings);
    put(out.qkv_bias, e.qkv_bias, resolved.qkv_bias);
    put(out.o_bias, e.o_bias, resolved.o_bias);
    put(out.mlp_bias, e.mlp_bias, resolved.mlp_bias);
    put(out.qk_norm, e.qk_norm, resolved.qk_norm);
    put(out.parallel_attention, e.parallel_attention, resolved.parallel_attention);
    put(out.attention_dropout, e.attention_dropout, resolved.attention_dropout);
    put(out.hidden_dropout, e.hidden_dropout, resolved.hidden_dropout);
    // The core derives head_dim and kv_heads from a changed shape unless they are given: keep the
    // values the user saw.
    if (out.hidden_size || out.attention_heads || out.family) {
        out.head_dim = e.head_dim;
        out.kv_heads = e.kv_heads;
    }
    return out;
}

} // namespace membudget
