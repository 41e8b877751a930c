#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# GPL-3.0-or-later everywhere (QCustomPlot is GPL-3.0-or-later): the LICENSE text, the SPDX line at
# the top of every C++ source in core/, app/ and tests/, the package metadata.
source "$(dirname "$0")/common.sh"
cd "$MEMBUDGET_SOURCE_DIR"
grep -q "GNU GENERAL PUBLIC LICENSE" LICENSE && grep -q "Version 3, 29 June 2007" LICENSE || fail "LICENSE is not the GPL version 3"
spdx='// SPDX-License-Identifier: GPL-3.0-or-later'
missing=$(find core app tests -type f \( -name '*.h' -o -name '*.cpp' \) -print0 | sort -z \
    | while IFS= read -r -d '' f; do head -n 3 "$f" | grep -qxF "$spdx" || echo "$f"; done)
[ -z "$missing" ] || fail "no '$spdx' line at the top of: $(echo $missing)"
grep -q "GPL-3.0-or-later" README.md || fail "README does not state the licence"
grep -q "<project_license>GPL-3.0-or-later</project_license>" resources/*.metainfo.xml || fail "metainfo project_license"
grep -q "^License: GPL-3.0-or-later" packaging/copyright || fail "packaging/copyright"
say "ok: $(find core app tests -type f \( -name '*.h' -o -name '*.cpp' \) | wc -l) sources"
