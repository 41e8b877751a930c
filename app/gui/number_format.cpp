// SPDX-License-Identifier: GPL-3.0-or-later
#include "number_format.h"

#include <QLocale>

namespace membudget {

void useOneNumberFormat()
{
    QLocale c = QLocale::c();
    c.setNumberOptions(QLocale::DefaultNumberOptions); // QLocale::c() omits group separators
    QLocale::setDefault(c);
}

} // namespace membudget
