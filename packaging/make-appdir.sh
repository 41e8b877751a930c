#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Builds the relocatable AppDir tarball, membudget-<version>-<arch>.tar.gz, from a configured
# (Release) build folder: `cpack -G TGZ` brings the build up to date, installs it into a staging
# folder and runs packaging/bundle-appdir.sh on it (libraries, Qt plugins, qt.conf, AppRun).
#   packaging/make-appdir.sh [BUILD_DIR [OUTPUT_DIR]]     defaults: build, BUILD_DIR/packages
# Unpack it anywhere and run membudget-<version>-<arch>/AppRun (the app; AppRun estimate ... for
# the command line).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
out=${2:-$build/packages}
[ -f "$build/CPackConfig.cmake" ] || { echo "make-appdir.sh: $build is not a configured build folder" >&2; exit 2; }
mkdir -p "$out"
"${CPACK_COMMAND:-cpack}" --config "$build/CPackConfig.cmake" -G TGZ -B "$out" >"$out/cpack-appdir.log" 2>&1 \
    || { cat "$out/cpack-appdir.log" >&2; exit 1; }
rm -rf "$out/_CPack_Packages"
version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build/CPackConfig.cmake")
tarball="$out/membudget-$version-$(uname -m).tar.gz"
[ -f "$tarball" ] || { echo "make-appdir.sh: cpack did not write $tarball" >&2; cat "$out/cpack-appdir.log" >&2; exit 1; }
echo "$tarball"
