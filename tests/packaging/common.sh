# SPDX-License-Identifier: GPL-3.0-or-later
# Shared by the packaging tests (sourced). The CTest rules in CMakeLists.txt set:
#   MEMBUDGET_SOURCE_DIR, MEMBUDGET_BUILD_DIR, MEMBUDGET_VERSION, MEMBUDGET_WORK (a scratch folder
#   of this test), CMAKE_COMMAND, CPACK_COMMAND.
# Exit codes: 0 pass, 1 fail, 77 skipped (CTest SKIP_RETURN_CODE).
set -euo pipefail

test_name=$(basename "$0" .sh)
say() { echo "[$test_name] $*"; }
fail() { echo "[$test_name] FAIL: $*" >&2; exit 1; }
skip() { echo "[$test_name] SKIP: $*"; exit 77; }

# A tool the test cannot do without: missing in CI is a failure (packaging/setup.sh test installs
# it), elsewhere the test is skipped.
need_tool() {
    local tool=$1 package=$2
    command -v "$tool" >/dev/null 2>&1 && return 0
    if [ -n "${CI:-}" ]; then
        fail "$tool is missing (apt-get install $package; packaging/setup.sh test installs it)"
    fi
    skip "$tool is missing (apt-get install $package)"
}

# check_png FILE WIDTH HEIGHT: a real PNG of that size with more than a few kilobytes of pixels.
check_png() {
    local file=$1 width=$2 height=$3
    [ -f "$file" ] || fail "$file was not written"
    local size magic w h
    size=$(stat -c %s "$file")
    magic=$(od -An -tx1 -N8 "$file" | tr -d ' \n')
    [ "$magic" = 89504e470d0a1a0a ] || fail "$file is not a PNG (starts with $magic)"
    w=$(od -An -tu1 -j16 -N4 "$file" | awk '{print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4}')
    h=$(od -An -tu1 -j20 -N4 "$file" | awk '{print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4}')
    [ "$w" = "$width" ] && [ "$h" = "$height" ] || fail "$file is ${w}x${h}, expected ${width}x${height}"
    [ "$size" -gt 10000 ] || fail "$file is only $size bytes: an empty chart?"
    say "$file: PNG ${w}x${h}, $size bytes"
}

# The bundled scenario every test exports.
example_scenario=presets/scenarios/qlora-llama-2-7b-24gb.yaml

: "${MEMBUDGET_SOURCE_DIR:?}" "${MEMBUDGET_BUILD_DIR:?}" "${MEMBUDGET_VERSION:?}" "${MEMBUDGET_WORK:?}"
CMAKE_COMMAND=${CMAKE_COMMAND:-cmake}
CPACK_COMMAND=${CPACK_COMMAND:-cpack}
rm -rf "$MEMBUDGET_WORK"
mkdir -p "$MEMBUDGET_WORK"
cd "$MEMBUDGET_WORK"
# Keep the user's own presets and settings out of the tests.
export XDG_DATA_HOME="$MEMBUDGET_WORK/xdg-data" XDG_CONFIG_HOME="$MEMBUDGET_WORK/xdg-config"
unset MEMBUDGET_PRESETS DISPLAY WAYLAND_DISPLAY
export QT_QPA_PLATFORM=offscreen
