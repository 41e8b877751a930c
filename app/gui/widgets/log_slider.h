// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// A slider on a logarithmic scale kept in sync with a spin box. Either continuous (positions map
// to log-spaced values, rounded to `significant` digits or to whole numbers) or snapping to a list
// of values (powers of two and common lengths). The spin box accepts any value in its range.

#include <QWidget>

#include <vector>

class QAbstractSpinBox;
class QDoubleSpinBox;
class QSlider;
class QSpinBox;

namespace membudget {

class LogSliderSpin : public QWidget
{
    Q_OBJECT
public:
    // Whole numbers in [min, max] (QSpinBox).
    LogSliderSpin(qint64 min, qint64 max, QWidget *parent = nullptr);
    // Decimals in [min, max] (QDoubleSpinBox); slider values rounded to `significant` digits.
    LogSliderSpin(double min, double max, int decimals, int significant, QWidget *parent = nullptr);

    // The slider snaps to these (ascending) values.
    void setSnapValues(std::vector<double> values);
    // The spin box may go beyond the slider's range.
    void setSpinRange(double min, double max);
    void setSuffix(const QString &suffix);

    double value() const { return m_value; }
    // Shows `value` without emitting valueEdited (the slider keeps its place while held).
    void setValue(double value);

    bool isSliderDown() const;
    QSlider *slider() const { return m_slider; }
    QAbstractSpinBox *spinBox() const;

    // Moves the slider to a position as a user would (tests, keyboard).
    void setSliderPosition(int position);
    int sliderPosition() const;

Q_SIGNALS:
    // The user changed the value (slider, spin box or keyboard).
    void valueEdited(double value);
    void dragStarted();
    void dragFinished();

private:
    void init();
    double valueAt(int position) const;
    int positionOf(double value) const;
    void onSliderMoved(int position);
    void onSpinChanged(double value);
    void showValue(double value, bool moveSlider);

    double m_min;
    double m_max;
    bool m_integer;
    int m_significant = 2;
    double m_value = 0;
    std::vector<double> m_snaps;
    QSlider *m_slider = nullptr;
    QSpinBox *m_intSpin = nullptr;
    QDoubleSpinBox *m_doubleSpin = nullptr;
};

} // namespace membudget
