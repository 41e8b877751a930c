// SPDX-License-Identifier: GPL-3.0-or-later
#include "widgets/log_slider.h"

#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QSignalBlocker>
#include <QSlider>
#include <QSpinBox>

#include <algorithm>
#include <cmath>

namespace membudget {

namespace {
constexpr int kSteps = 1000;

double roundSignificant(double v, int digits)
{
    if (v <= 0)
        return v;
    const double scale = std::pow(10.0, digits - 1 - static_cast<int>(std::floor(std::log10(v))));
    return std::round(v * scale) / scale;
}
} // namespace

LogSliderSpin::LogSliderSpin(qint64 min, qint64 max, QWidget *parent)
    : QWidget(parent)
    , m_min(static_cast<double>(min))
    , m_max(static_cast<double>(max))
    , m_integer(true)
{
    m_intSpin = new QSpinBox;
    m_intSpin->setRange(static_cast<int>(min),
                        static_cast<int>(std::min<qint64>(max, 2'000'000'000)));
    m_intSpin->setGroupSeparatorShown(true);
    init();
}

LogSliderSpin::LogSliderSpin(double min, double max, int decimals, int significant, QWidget *parent)
    : QWidget(parent)
    , m_min(min)
    , m_max(max)
    , m_integer(false)
    , m_significant(significant)
{
    m_doubleSpin = new QDoubleSpinBox;
    m_doubleSpin->setRange(min, max);
    m_doubleSpin->setDecimals(decimals);
    m_doubleSpin->setStepType(QAbstractSpinBox::AdaptiveDecimalStepType);
    init();
}

void LogSliderSpin::init()
{
    m_slider = new QSlider(Qt::Horizontal);
    m_slider->setRange(0, kSteps);
    m_slider->setSingleStep(1);
    m_slider->setPageStep(kSteps / 20);
    m_slider->setFocusPolicy(Qt::StrongFocus);
    QAbstractSpinBox *spin = spinBox();
    spin->setKeyboardTracking(false);
    spin->setAccelerated(true);
    spin->setMinimumWidth(96);
    spin->setAlignment(Qt::AlignRight);
    auto *layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_slider, 1);
    layout->addWidget(spin);
    setFocusProxy(m_slider);

    connect(m_slider, &QSlider::valueChanged, this, &LogSliderSpin::onSliderMoved);
    connect(m_slider, &QSlider::sliderPressed, this, &LogSliderSpin::dragStarted);
    connect(m_slider, &QSlider::sliderReleased, this, &LogSliderSpin::dragFinished);
    if (m_intSpin)
        connect(m_intSpin, &QSpinBox::valueChanged, this, [this](int v) { onSpinChanged(v); });
    else
        connect(m_doubleSpin, &QDoubleSpinBox::valueChanged, this, &LogSliderSpin::onSpinChanged);
    showValue(m_min, true);
}

QAbstractSpinBox *LogSliderSpin::spinBox() const
{
    return m_intSpin ? static_cast<QAbstractSpinBox *>(m_intSpin) : m_doubleSpin;
}

void LogSliderSpin::setSnapValues(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    m_snaps = std::move(values);
    const QSignalBlocker block(m_slider);
    m_slider->setRange(0, m_snaps.empty() ? kSteps : static_cast<int>(m_snaps.size()) - 1);
    m_slider->setPageStep(m_snaps.empty() ? kSteps / 20 : 2);
    m_slider->setValue(positionOf(m_value));
}

void LogSliderSpin::setSpinRange(double min, double max)
{
    const QSignalBlocker block(spinBox());
    if (m_intSpin)
        m_intSpin->setRange(static_cast<int>(min), static_cast<int>(max));
    else
        m_doubleSpin->setRange(min, max);
}

void LogSliderSpin::setSuffix(const QString &suffix)
{
    if (m_intSpin)
        m_intSpin->setSuffix(suffix);
    else
        m_doubleSpin->setSuffix(suffix);
}

double LogSliderSpin::valueAt(int position) const
{
    if (!m_snaps.empty())
        return m_snaps[static_cast<std::size_t>(
            std::clamp(position, 0, static_cast<int>(m_snaps.size()) - 1))];
    const double t = static_cast<double>(position) / kSteps;
    const double v = std::exp(std::log(m_min) + t * (std::log(m_max) - std::log(m_min)));
    if (m_integer)
        return std::clamp(std::round(v), m_min, m_max);
    return std::clamp(roundSignificant(v, m_significant), m_min, m_max);
}

int LogSliderSpin::positionOf(double value) const
{
    if (!m_snaps.empty()) {
        // The nearest snap value on the log scale.
        int best = 0;
        double bestDist = 1e300;
        for (std::size_t i = 0; i < m_snaps.size(); ++i) {
            const double d = std::abs(std::log(std::max(value, 1e-12)) - std::log(m_snaps[i]));
            if (d < bestDist) {
                bestDist = d;
                best = static_cast<int>(i);
            }
        }
        return best;
    }
    const double v = std::clamp(value, m_min, m_max);
    const double t = (std::log(v) - std::log(m_min)) / (std::log(m_max) - std::log(m_min));
    return static_cast<int>(std::lround(t * kSteps));
}

void LogSliderSpin::showValue(double value, bool moveSlider)
{
    m_value = value;
    {
        const QSignalBlocker block(spinBox());
        if (m_intSpin)
            m_intSpin->setValue(static_cast<int>(std::llround(value)));
        else
            m_doubleSpin->setValue(value);
    }
    if (moveSlider) {
        const QSignalBlocker block(m_slider);
        m_slider->setValue(positionOf(value));
    }
}

void LogSliderSpin::setValue(double value)
{
    showValue(value, !m_slider->isSliderDown());
}

bool LogSliderSpin::isSliderDown() const
{
    return m_slider->isSliderDown();
}

void LogSliderSpin::setSliderPosition(int position)
{
    m_slider->setValue(position);
}

int LogSliderSpin::sliderPosition() const
{
    return m_slider->value();
}

void LogSliderSpin::onSliderMoved(int position)
{
    const double v = valueAt(position);
    if (v == m_value)
        return;
    showValue(v, false);
    Q_EMIT valueEdited(v);
}

void LogSliderSpin::onSpinChanged(double value)
{
    if (value == m_value)
        return;
    showValue(value, true);
    Q_EMIT valueEdited(value);
}

} // namespace membudget
