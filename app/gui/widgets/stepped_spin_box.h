// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// A spin box whose arrows, wheel and Page Up/Down move between a given set of values (the tensor
// parallel degrees the model and the GPU count allow) rather than by one. Typing any value in range
// still works: the scenario then says why it cannot be estimated.

#include <QSpinBox>

#include <vector>

namespace membudget {

class SteppedSpinBox : public QSpinBox
{
    Q_OBJECT
public:
    using QSpinBox::QSpinBox;

    // Sorted, distinct values; an empty list steps by one as a plain QSpinBox does.
    void setSteps(std::vector<int> steps);
    const std::vector<int> &steps() const { return m_steps; }

    void stepBy(int steps) override;

protected:
    StepEnabled stepEnabled() const override;

private:
    std::vector<int> m_steps;
};

} // namespace membudget
