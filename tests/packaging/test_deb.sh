#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# cpack -G DEB, then install the package with apt on this machine, run the installed
# /usr/bin/membudget (--version, presets, an offscreen export) and remove the package again.
# Skipped (77) without root or passwordless sudo, without apt, or when a membudget package is
# already installed outside CI (the test does not replace someone's installation).
source "$(dirname "$0")/common.sh"

command -v apt-get >/dev/null 2>&1 && command -v dpkg >/dev/null 2>&1 || skip "no apt-get/dpkg on this machine"
sudo=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        sudo=(sudo -n)
    else
        skip "installing a package needs root or passwordless sudo"
    fi
fi
need_tool dpkg-shlibdeps dpkg-dev
if dpkg-query -W -f='${Status}' membudget 2>/dev/null | grep -q "install ok installed" && [ -z "${CI:-}" ]; then
    skip "a membudget package is already installed; not replacing it outside CI"
fi

say "cpack -G DEB"
start=$(date +%s)
"$CPACK_COMMAND" --config "$MEMBUDGET_BUILD_DIR/CPackConfig.cmake" -G DEB -B "$MEMBUDGET_WORK/pkg" \
    >"$MEMBUDGET_WORK/cpack.log" 2>&1 || { cat "$MEMBUDGET_WORK/cpack.log"; fail "cpack -G DEB failed"; }
deb=$(find "$MEMBUDGET_WORK/pkg" -maxdepth 1 -name "membudget_${MEMBUDGET_VERSION}_*.deb" | head -n 1)
[ -n "$deb" ] || { cat "$MEMBUDGET_WORK/cpack.log"; fail "no membudget_${MEMBUDGET_VERSION}_*.deb"; }
say "$(basename "$deb"): $(stat -c %s "$deb") bytes, built in $(($(date +%s) - start)) s"

# The dependencies come from dpkg-shlibdeps: the Qt, QCustomPlot and yaml-cpp runtime packages.
depends=$(dpkg-deb -f "$deb" Depends)
say "Depends: $depends"
for p in libc6 libqt6core6 libqt6gui6 libqt6widgets6 libqt6svg6 libqcustomplot libyaml-cpp; do
    [[ "$depends" == *"$p"* ]] || fail "Depends lacks $p (SHLIBDEPS not computed?)"
done
dpkg-deb -c "$deb" | awk '{print $6}' >"$MEMBUDGET_WORK/contents"
for f in ./usr/bin/membudget ./usr/bin/membudget-gui ./usr/share/applications/membudget.desktop \
    ./usr/share/man/man1/membudget.1.gz ./usr/share/doc/membudget/copyright ./usr/share/membudget/presets/gpus.yaml; do
    grep -qx "$f" "$MEMBUDGET_WORK/contents" || fail "$f is not in the package"
done

remove() {
    say "apt-get purge membudget"
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get purge -y -q -o DPkg::Lock::Timeout=120 membudget \
        >"$MEMBUDGET_WORK/apt-remove.log" 2>&1 || { cat "$MEMBUDGET_WORK/apt-remove.log"; echo "apt-get purge failed" >&2; }
}
trap remove EXIT
# apt reads local packages as the _apt user when it can; a world-readable copy avoids the notice.
chmod a+r "$deb"
say "apt-get install ./$(basename "$deb")"
(cd "$(dirname "$deb")" && DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --reinstall \
    --no-install-recommends -o DPkg::Lock::Timeout=120 "./$(basename "$deb")") >"$MEMBUDGET_WORK/apt-install.log" 2>&1 \
    || { cat "$MEMBUDGET_WORK/apt-install.log"; fail "apt-get install of the package failed"; }
dpkg-query -W -f='${Status} ${Version}\n' membudget | grep -q "install ok installed $MEMBUDGET_VERSION" \
    || fail "membudget $MEMBUDGET_VERSION is not installed after apt-get install"

version=$(/usr/bin/membudget --version)
[ "$version" = "membudget $MEMBUDGET_VERSION" ] || fail "/usr/bin/membudget --version says '$version'"
say "$version"
/usr/bin/membudget presets gpus | grep -q rtx-4090 || fail "the installed membudget lists no GPU presets"
/usr/bin/membudget validate /usr/share/membudget/presets/gpus.yaml >/dev/null || fail "installed presets do not validate"
mkdir -p "$MEMBUDGET_WORK/run" && cd "$MEMBUDGET_WORK/run"
/usr/bin/membudget estimate "/usr/share/membudget/$example_scenario" | grep -q "^Peak:" || fail "installed estimate"
QT_QPA_PLATFORM=offscreen /usr/bin/membudget export "/usr/share/membudget/$example_scenario" -o chart.png \
    || fail "offscreen export from the installed copy failed"
check_png chart.png 1200 700
if command -v desktop-file-validate >/dev/null 2>&1; then
    desktop-file-validate /usr/share/applications/membudget.desktop || fail "installed desktop entry invalid"
fi
# (Minimal container images tell dpkg to skip man pages: path-exclude in /etc/dpkg/dpkg.cfg.d.)
if command -v man >/dev/null 2>&1 && ! grep -rqs 'path-exclude.*/usr/share/man' /etc/dpkg/dpkg.cfg.d; then
    [ "$(man -w membudget 2>/dev/null)" = /usr/share/man/man1/membudget.1.gz ] || fail "man membudget does not find the page"
fi

trap - EXIT
remove
[ ! -e /usr/bin/membudget ] || fail "/usr/bin/membudget is still there after apt-get purge"
! dpkg-query -W -f='${Status}' membudget 2>/dev/null | grep -q "install ok installed" || fail "package still installed"
say "ok"
