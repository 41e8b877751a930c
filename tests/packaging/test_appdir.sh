#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The relocatable tarball: packaging/make-appdir.sh builds membudget-<version>-<arch>.tar.gz; it is
# unpacked into a fresh folder outside the build (with a space in its path), moved once, and run
# from there: --version, an estimate, an offscreen export, a link named membudget-gui, and (with
# xvfb-run) the xcb platform. The programs must use the bundled Qt, QCustomPlot and yaml-cpp and
# the bundled Qt plugins (qt.conf), not the build machine's.
source "$(dirname "$0")/common.sh"

say "packaging/make-appdir.sh"
start=$(date +%s)
tarball=$(bash "$MEMBUDGET_SOURCE_DIR/packaging/make-appdir.sh" "$MEMBUDGET_BUILD_DIR" "$MEMBUDGET_WORK/pkg" | tail -n 1)
name=membudget-$MEMBUDGET_VERSION-$(uname -m)
[ "$tarball" = "$MEMBUDGET_WORK/pkg/$name.tar.gz" ] && [ -f "$tarball" ] || fail "make-appdir.sh wrote '$tarball'"
say "$(basename "$tarball"): $(stat -c %s "$tarball") bytes, built in $(($(date +%s) - start)) s"

scratch=$(mktemp -d "${TMPDIR:-/tmp}/membudget-appdir-test.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/unpacked here"
tar -xzf "$tarball" -C "$scratch/unpacked here"
[ -d "$scratch/unpacked here/$name" ] || fail "the tarball has no top folder $name"
mv "$scratch/unpacked here/$name" "$scratch/unpacked here/moved"
app="$scratch/unpacked here/moved"

for f in AppRun usr/bin/membudget usr/bin/membudget-gui usr/bin/qt.conf membudget.desktop membudget.svg \
    usr/plugins/platforms/libqxcb.so usr/plugins/platforms/libqoffscreen.so usr/plugins/platforms/libqminimal.so \
    usr/plugins/imageformats/libqsvg.so usr/plugins/iconengines/libqsvgicon.so \
    usr/share/membudget/presets/gpus.yaml usr/share/doc/membudget/third-party/BUNDLED.txt; do
    [ -e "$app/$f" ] || fail "$f is missing from the AppDir"
done
[ -x "$app/AppRun" ] || fail "AppRun is not executable"
ls "$app"/usr/lib/libQCustomPlotQt6.so* "$app"/usr/lib/libQt6Core.so.6 "$app"/usr/lib/libyaml-cpp.so* >/dev/null \
    || fail "QCustomPlot, Qt or yaml-cpp is not bundled"

# With AppRun's library path, every library the programs and plugins need resolves, and the ones
# the AppDir bundles resolve to its copy; what the host must provide is the documented short list.
while IFS= read -r -d '' elf; do
    out=$(LD_LIBRARY_PATH="$app/usr/lib" ldd "$elf" 2>&1) || fail "ldd $elf: $out"
    if grep -q "not found" <<<"$out"; then fail "$elf: $(grep "not found" <<<"$out")"; fi
    host_qt=$(grep -E 'libQt6|libQCustomPlot|libyaml-cpp|libicu' <<<"$out" | grep -vF "$app/usr/lib/" || true)
    [ -z "$host_qt" ] || fail "$elf uses the build machine's $host_qt"
done < <(find "$app/usr/bin" "$app/usr/lib" "$app/usr/plugins" -type f \( -name 'membudget*' -o -name '*.so*' \) -print0)
allowed='^(ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libresolv\.so\.2|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libGL\.so\.1|libGLX\.so\.0|libEGL\.so\.1|libOpenGL\.so\.0|libGLdispatch\.so\.0|libX11\.so\.6|libX11-xcb\.so\.1|libxcb\.so\.1|libfontconfig\.so\.1|libfreetype\.so\.6|libz\.so\.1|libexpat\.so\.1|libdbus-1\.so\.3|libudev\.so\.1)$'
unexpected=$(grep -Ev "$allowed" "$app/usr/share/doc/membudget/third-party/HOST-LIBRARIES.txt" || true)
[ -z "$unexpected" ] || fail "the AppDir expects these on the host, which packaging/bundle-appdir.sh does not count as system: $unexpected"
say "bundled: $(ls "$app/usr/lib" | wc -l) libraries; from the host: $(tr '\n' ' ' <"$app/usr/share/doc/membudget/third-party/HOST-LIBRARIES.txt")"

mkdir -p "$scratch/elsewhere" && cd "$scratch/elsewhere"
version=$("$app/AppRun" --version)
[ "$version" = "membudget $MEMBUDGET_VERSION" ] || fail "AppRun --version says '$version'"
say "$version"
"$app/AppRun" presets scenarios | grep -q qlora-llama-2-7b-24gb || fail "AppRun presets"
"$app/AppRun" estimate "$app/usr/share/membudget/$example_scenario" >estimate.txt || fail "AppRun estimate"
grep -q "^Peak:" estimate.txt || fail "the estimate has no peak line"
"$app/AppRun" estimate --json "$app/usr/share/membudget/$example_scenario" >estimate.json || fail "AppRun estimate --json"

QT_DEBUG_PLUGINS=1 "$app/AppRun" export "$app/usr/share/membudget/$example_scenario" -o chart.png 2>export.log \
    || { tail -n 30 export.log; fail "AppRun export failed"; }
check_png chart.png 1200 700
grep -qF "$app/usr/plugins/platforms/libqoffscreen.so\" loaded library" export.log \
    || { grep -i "loaded library\|platform" export.log | head; fail "the offscreen plugin was not loaded from the AppDir (qt.conf)"; }

# Through a link named membudget-gui, as a desktop entry or a PATH entry would start it.
mkdir -p "$scratch/bin"
ln -s "$app/AppRun" "$scratch/bin/membudget-gui"
"$scratch/bin/membudget-gui" --export "$app/usr/share/membudget/$example_scenario" -o linked.png --width 640 --height 400 \
    || fail "membudget-gui through a link"
check_png linked.png 640 400

# The xcb platform plugin, on a virtual display: the window must come up from the bundled plugin.
if command -v xvfb-run >/dev/null 2>&1; then
    set +e
    env -u QT_QPA_PLATFORM QT_DEBUG_PLUGINS=1 timeout 8 xvfb-run -a "$app/AppRun" >xcb.log 2>&1
    set -e
    grep -qF "$app/usr/plugins/platforms/libqxcb.so\" loaded library" xcb.log \
        || { tail -n 30 xcb.log; fail "the xcb plugin was not loaded from the AppDir"; }
    ! grep -q "could not connect to display\|Could not load the Qt platform plugin" xcb.log \
        || { tail -n 30 xcb.log; fail "the xcb platform failed"; }
    say "xcb: the window came up with the bundled plugin"
else
    say "xvfb-run missing: xcb not checked"
fi
say "ok"
