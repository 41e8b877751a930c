// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

namespace membudget {

// One number format across the application: the one the command line prints and the core writes
// ("4,096 tokens", "16.23 GB"), whatever the user's locale. The core formats byte sizes itself
// (reports, copied Markdown and CSV, exported charts are shared between people with different
// locales), so the app's own numbers (QLocale().toString, spin boxes, chart axes) follow it:
// QLocale::c() with thousands separators becomes the default locale. Call before creating widgets.
void useOneNumberFormat();

} // namespace membudget
