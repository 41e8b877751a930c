// SPDX-License-Identifier: GPL-3.0-or-later
#include "widgets/stepped_spin_box.h"

#include <algorithm>

namespace membudget {

void SteppedSpinBox::setSteps(std::vector<int> steps)
{
    std::sort(steps.begin(), steps.end());
    steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
    m_steps = std::move(steps);
}

void SteppedSpinBox::stepBy(int steps)
{
    if (m_steps.empty()) {
        QSpinBox::stepBy(steps);
        return;
    }
    // From the current value (allowed or not) to the |steps|-th allowed value in that direction.
    int v = value();
    for (int i = 0; i < std::abs(steps); ++i) {
        if (steps > 0) {
            const auto it = std::upper_bound(m_steps.begin(), m_steps.end(), v);
            if (it == m_steps.end())
                break;
            v = *it;
        } else {
            const auto it = std::lower_bound(m_steps.begin(), m_steps.end(), v);
            if (it == m_steps.begin())
                break;
            v = *std::prev(it);
        }
    }
    setValue(v);
    selectAll();
}

QAbstractSpinBox::StepEnabled SteppedSpinBox::stepEnabled() const
{
    if (m_steps.empty())
        return QSpinBox::stepEnabled();
    StepEnabled e = StepNone;
    if (std::upper_bound(m_steps.begin(), m_steps.end(), value()) != m_steps.end())
        e |= StepUpEnabled;
    if (std::lower_bound(m_steps.begin(), m_steps.end(), value()) != m_steps.begin())
        e |= StepDownEnabled;
    return e;
}

} // namespace membudget
