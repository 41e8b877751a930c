#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# cmake --install into a DESTDIR: every file in its GNUInstallDirs place, the desktop entry and the
# AppStream metainfo valid, the man pages render, and the installed copy works (presets, export).
source "$(dirname "$0")/common.sh"
need_tool desktop-file-validate desktop-file-utils
need_tool appstreamcli appstream

dest=$MEMBUDGET_WORK/destdir
prefix=/usr
DESTDIR=$dest "$CMAKE_COMMAND" --install "$MEMBUDGET_BUILD_DIR" --prefix "$prefix" >"$MEMBUDGET_WORK/install.log" \
    || { cat "$MEMBUDGET_WORK/install.log"; fail "cmake --install failed"; }
root=$dest$prefix
metainfo_id=invalid.example.membudget

expected=(
    bin/membudget
    bin/membudget-gui
    share/applications/membudget.desktop
    share/metainfo/$metainfo_id.metainfo.xml
    share/icons/hicolor/scalable/apps/membudget.svg
    share/man/man1/membudget.1.gz
    share/man/man1/membudget-gui.1.gz
    share/membudget/presets/gpus.yaml
    share/membudget/presets/models/meta-llama.yaml
    share/membudget/presets/scenarios/qlora-llama-2-7b-24gb.yaml
    share/doc/membudget/LICENSE
    share/doc/membudget/copyright
    share/doc/membudget/README.md
    share/doc/membudget/scenario-format.md
    share/doc/membudget/examples/presets/my-lab.yaml
    share/doc/membudget/examples/presets/my-lab-qlora.yaml
)
for f in "${expected[@]}"; do
    [ -f "$root/$f" ] || fail "not installed: $prefix/$f"
done
[ -x "$root/bin/membudget" ] && [ -x "$root/bin/membudget-gui" ] || fail "programs not executable"
# Every preset YAML of the source tree is installed, and nothing lands outside the prefix.
n_src=$(cd "$MEMBUDGET_SOURCE_DIR/presets" && find . -name '*.yaml' | sort | tee "$MEMBUDGET_WORK/src-presets" | wc -l)
(cd "$root/share/membudget/presets" && find . -name '*.yaml' | sort >"$MEMBUDGET_WORK/inst-presets")
diff -u "$MEMBUDGET_WORK/src-presets" "$MEMBUDGET_WORK/inst-presets" || fail "installed presets differ from presets/"
outside=$(cd "$dest" && find . -mindepth 1 -maxdepth 1 ! -name "${prefix#/}")
[ -z "$outside" ] || fail "installed outside $prefix: $outside"
say "installed: $(cd "$dest" && find . -type f | wc -l) files, $n_src presets"

say "desktop-file-validate share/applications/membudget.desktop"
desktop-file-validate "$root/share/applications/membudget.desktop" | tee "$MEMBUDGET_WORK/desktop.log"
[ ! -s "$MEMBUDGET_WORK/desktop.log" ] || fail "desktop-file-validate reported problems"
grep -qx 'Exec=membudget-gui %f' "$root/share/applications/membudget.desktop" || fail "desktop Exec is not membudget-gui"
grep -qx 'Icon=membudget' "$root/share/applications/membudget.desktop" || fail "desktop Icon is not membudget"

say "appstreamcli validate --no-net share/metainfo/$metainfo_id.metainfo.xml"
appstreamcli validate --no-net "$root/share/metainfo/$metainfo_id.metainfo.xml" || fail "appstreamcli validate failed"
appstreamcli validate-tree --no-net "$dest" || fail "appstreamcli validate-tree failed"
grep -q "<release version=\"$MEMBUDGET_VERSION\"" "$root/share/metainfo/$metainfo_id.metainfo.xml" \
    || fail "the metainfo has no <release version=\"$MEMBUDGET_VERSION\"> (add one for the project version)"
grep -q '<launchable type="desktop-id">membudget.desktop</launchable>' "$root/share/metainfo/$metainfo_id.metainfo.xml" \
    || fail "the metainfo does not launch membudget.desktop"

if command -v man >/dev/null 2>&1; then
    for page in membudget membudget-gui; do
        out=$(LC_ALL=C.UTF-8 MANWIDTH=100 man --warnings -l "$root/share/man/man1/$page.1.gz" 2>"$MEMBUDGET_WORK/man-$page.err") \
            || fail "man -l $page.1.gz failed"
        [ ! -s "$MEMBUDGET_WORK/man-$page.err" ] || { cat "$MEMBUDGET_WORK/man-$page.err"; fail "man -l $page.1.gz warns"; }
        [ "$(echo "$out" | wc -l)" -gt 30 ] || fail "man page $page renders to almost nothing"
    done
    say "man -l: both pages render without warnings"
else
    need_tool man man-db
fi

# The installed copy: its presets are the bundled ones, the command line finds membudget-gui beside
# itself, and it reads the installed preset files.
[ "$("$root/bin/membudget" --version)" = "membudget $MEMBUDGET_VERSION" ] || fail "--version"
"$root/bin/membudget" presets >"$MEMBUDGET_WORK/presets.txt"
grep -q '^Models ([1-9]' "$MEMBUDGET_WORK/presets.txt" && grep -q '^GPUs ([1-9]' "$MEMBUDGET_WORK/presets.txt" \
    && grep -q '^Scenarios ([1-9]' "$MEMBUDGET_WORK/presets.txt" || fail "the installed membudget lists no presets"
(cd "$root/share/membudget/presets" && find . -name '*.yaml' -print0 | xargs -0 "$root/bin/membudget" validate) \
    >"$MEMBUDGET_WORK/validate.txt" || fail "the installed presets do not validate"
mkdir -p "$MEMBUDGET_WORK/run" && cd "$MEMBUDGET_WORK/run"
"$root/bin/membudget" estimate "$root/share/membudget/presets/scenarios/lora-mistral-7b-a100-80gb.yaml" >estimate.txt \
    || fail "estimate of an installed preset scenario"
"$root/bin/membudget" export "$root/share/membudget/$example_scenario" -o chart.png --width 800 --height 500 \
    || fail "export from the installed copy"
check_png chart.png 800 500
say "ok"
