// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

// Counts the layout requests a widget receives, installed as its event filter: a layout whose
// items' sizes changed posts one to the widget that holds it.

#include <QEvent>
#include <QObject>

namespace membudget::test {

class LayoutRequests : public QObject
{
public:
    int count = 0;
    bool eventFilter(QObject *, QEvent *event) override
    {
        count += event->type() == QEvent::LayoutRequest;
        return false;
    }
};

} // namespace membudget::test
