#!/usr/bin/env bash
# MemBudget set-up on Debian 12: installs the packages it needs, builds, then
#   packaging/setup.sh run [ARGS...]   starts the desktop application (without a display it prints
#                                      the default estimate and writes membudget-chart.png)
#   packaging/setup.sh test            runs every test suite, then again in a sanitizer build
#                                      (what CI runs)
#   packaging/setup.sh build           only installs and builds
set -euo pipefail

mode=${1:-run}
[ $# -gt 0 ] && shift
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${MEMBUDGET_BUILD_DIR:-$root/build}

packages=(build-essential cmake pkg-config qt6-base-dev qt6-svg-dev libqcustomplot-dev libyaml-cpp-dev
          nlohmann-json3-dev libcli11-dev libgl-dev zlib1g-dev fonts-dejavu-core xvfb xauth)
if [ "$mode" = test ]; then
    # The measurement harness checks the activation formulas against PyTorch's autograd on CPU;
    # the packaging tests (tests/packaging) validate the desktop entry, the AppStream metadata and
    # the man pages; strace checks from the outside that loading a file opens nothing else.
    # poppler-utils: tst_chart_labels has pdftoppm read the exported PDFs (it warns on bad paths).
    packages+=(python3 python3-yaml python3-torch desktop-file-utils appstream man-db strace
               poppler-utils)
fi

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo=sudo
    echo "Installing: ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

jobs=$(nproc 2>/dev/null || echo 2)
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$jobs"

case "$mode" in
run)
    exec "$build/app/gui/membudget-gui" "$@"
    ;;
test)
    (cd "$build" && ctest --output-on-failure -j"$jobs" -LE bench "$@")
    # The same suite again, built with AddressSanitizer + UndefinedBehaviorSanitizer (CMake preset
    # "asan", in build-asan/; see docs/reliability.md). MEMBUDGET_SKIP_SANITIZERS=1 skips it.
    if [ "${MEMBUDGET_SKIP_SANITIZERS:-0}" != 1 ]; then
        echo "Sanitizer build (ASan + UBSan) in $root/build-asan"
        cd "$root"
        cmake --preset asan >/dev/null
        cmake --build --preset asan -j"$jobs"
        ctest --preset asan -j"$jobs" "$@"
    fi
    ;;
build)
    echo "Built: $build/app/cli/membudget and $build/app/gui/membudget-gui"
    ;;
*)
    echo "usage: packaging/setup.sh [run|test|build] [ARGS...]" >&2
    exit 2
    ;;
esac
