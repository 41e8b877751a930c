#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Turns an installed tree APPDIR/usr (cmake --install --prefix APPDIR/usr) into a relocatable AppDir:
#   APPDIR/AppRun                 sets LD_LIBRARY_PATH to APPDIR/usr/lib and starts usr/bin/membudget
#                                 (no command: the desktop application; `AppRun estimate ...`: the CLI)
#   APPDIR/usr/lib/               the non-system shared libraries the programs and plugins need
#   APPDIR/usr/plugins/           the Qt plugins: platforms (xcb, offscreen, minimal), xcb GL
#                                 integrations, SVG image format and icon engine, compose input
#   APPDIR/usr/bin/qt.conf        points Qt at usr/plugins (relative to the executable)
#   APPDIR/membudget.desktop, membudget.svg, .DirIcon   the AppDir metadata (appimagetool reads these)
#
# "System" libraries, left to the machine that runs the AppDir (everything else is bundled):
#   - glibc (libc, libm, libdl, libpthread, librt, libresolv, ld-linux) and the C++ runtime
#     (libstdc++, libgcc_s): the binaries already need the build machine's glibc or newer, and every
#     distribution with that glibc ships a libstdc++ at least as new; a bundled older libstdc++ would
#     break the host's GPU drivers, which are linked against the host's one.
#   - the graphics driver stack (libGL, libGLX, libEGL, libGLdispatch, libOpenGL, libdrm, libgbm,
#     libvulkan): it must match the host's kernel driver.
#   - the X11 connection (libX11, libX11-xcb, libxcb, libXau, libXdmcp) and the font stack
#     (fontconfig, freetype, expat, zlib): present on every desktop, and fontconfig must read the
#     host's own configuration.
#   - libudev and libdbus-1 / libsystemd: they talk to host daemons.
# The list follows AppImage's excludelist (https://github.com/AppImageCommunity/pkg2appimage).
# Bundled: Qt 6, QCustomPlot, yaml-cpp, ICU, glib, the xcb utility libraries, xkbcommon, harfbuzz's
# dependencies, image codecs and the rest.
#
# usage: packaging/bundle-appdir.sh APPDIR [QT_PLUGIN_DIR]
set -euo pipefail

appdir=${1:?usage: bundle-appdir.sh APPDIR [QT_PLUGIN_DIR]}
qt_plugins=${2:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
usr=$appdir/usr

[ -x "$usr/bin/membudget" ] || { echo "bundle-appdir.sh: $usr/bin/membudget missing (install first)" >&2; exit 1; }
[ -x "$usr/bin/membudget-gui" ] || { echo "bundle-appdir.sh: $usr/bin/membudget-gui missing (build with MEMBUDGET_BUILD_GUI=ON)" >&2; exit 1; }

if [ -z "$qt_plugins" ]; then
    for q in qtpaths6 /usr/lib/qt6/bin/qtpaths6 qtpaths /usr/lib/qt6/bin/qtpaths; do
        if command -v "$q" >/dev/null 2>&1; then
            qt_plugins=$("$q" --query QT_INSTALL_PLUGINS 2>/dev/null || true)
            [ -n "$qt_plugins" ] && break
        fi
    done
fi
if [ -z "$qt_plugins" ]; then
    qt_plugins=$(ldd "$usr/bin/membudget-gui" | awk '/libQt6Core\.so/ {print $3}' | xargs -r dirname)/qt6/plugins
fi
[ -e "$qt_plugins/platforms/libqoffscreen.so" ] || { echo "bundle-appdir.sh: no Qt platform plugins in '$qt_plugins'" >&2; exit 1; }

# Libraries taken from the host, by soname (see above).
is_system() {
    case "$1" in
    ld-linux*.so* | libc.so.* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.* | libresolv.so.* \
        | libutil.so.* | libanl.so.* | libmvec.so.* | libnsl.so.* | libBrokenLocale.so.* | libthread_db.so.*) return 0 ;;
    libstdc++.so.* | libgcc_s.so.*) return 0 ;;
    libGL.so.* | libGLX.so.* | libEGL.so.* | libGLdispatch.so.* | libOpenGL.so.* | libGLESv2.so.* | libGLESv1_CM.so.* \
        | libdrm.so.* | libgbm.so.* | libvulkan.so.*) return 0 ;;
    libX11.so.* | libX11-xcb.so.* | libxcb.so.* | libXau.so.* | libXdmcp.so.*) return 0 ;;
    libfontconfig.so.* | libfreetype.so.* | libexpat.so.* | libz.so.*) return 0 ;;
    libudev.so.* | libdbus-1.so.* | libsystemd.so.*) return 0 ;;
    esac
    return 1
}

mkdir -p "$usr/lib" "$usr/plugins"

# The plugins: what the app needs to show a window (xcb), render without a display (offscreen,
# minimal), load its SVG icon, type composed characters, and fetch from the Hugging Face Hub over
# https (the OpenSSL TLS backend, which loads the host's libssl.so.3 when first used).
copy_plugin() {
    local sub=$1 name=$2
    if [ -e "$qt_plugins/$sub/$name" ]; then
        mkdir -p "$usr/plugins/$sub"
        cp -L "$qt_plugins/$sub/$name" "$usr/plugins/$sub/$name"
    else
        echo "bundle-appdir.sh: warning: Qt plugin $sub/$name not found" >&2
    fi
}
copy_plugin platforms libqxcb.so
copy_plugin platforms libqoffscreen.so
copy_plugin platforms libqminimal.so
copy_plugin xcbglintegrations libqxcb-glx-integration.so
copy_plugin xcbglintegrations libqxcb-egl-integration.so
copy_plugin imageformats libqsvg.so
copy_plugin iconengines libqsvgicon.so
copy_plugin platforminputcontexts libcomposeplatforminputcontextplugin.so
copy_plugin tls libqopensslbackend.so

# Copies every non-system library the ELF files need into usr/lib: each program and plugin, then
# each library copied, is read once. Only direct dependencies (DT_NEEDED) are followed, so what only
# a system library needs stays on the host; ldd (with LD_LIBRARY_PATH=usr/lib) says where each is.
declare -A origin=() # file in the AppDir (relative to usr/) -> where it was copied from
while IFS= read -r -d '' f; do
    case "$f" in "$usr"/plugins/*) origin[${f#"$usr"/}]=$qt_plugins/${f#"$usr"/plugins/} ;; esac
done < <(find "$usr/plugins" -type f -name '*.so' -print0)
mapfile -d '' queue < <(find "$usr/bin" "$usr/plugins" -type f \( -perm -u+x -o -name '*.so' \) -print0)
while [ ${#queue[@]} -gt 0 ]; do
    f=${queue[0]}
    queue=("${queue[@]:1}")
    resolved=$(LD_LIBRARY_PATH="$usr/lib" ldd "$f" 2>/dev/null || true)
    while IFS= read -r soname; do
        is_system "$soname" && continue
        [ -e "$usr/lib/$soname" ] && continue
        path=$(awk -v n="$soname" '$1 == n && $2 == "=>" {print $3}' <<<"$resolved")
        if [ -z "$path" ] || [ "$path" = not ]; then
            echo "bundle-appdir.sh: $f needs $soname, which is not on this machine" >&2
            exit 1
        fi
        cp -L "$path" "$usr/lib/$soname"
        chmod 644 "$usr/lib/$soname"
        origin[lib/$soname]=$path
        queue+=("$usr/lib/$soname")
    done < <(readelf -d "$f" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
done

# Licence notices of what was bundled (the copyright file of each library's Debian package), and
# the list of libraries the AppDir expects on the host.
doc=$usr/share/doc/membudget
mkdir -p "$doc/third-party"
{
    echo "Libraries bundled in usr/lib and usr/plugins, with the Debian package each came from."
    echo "Their licences: third-party/<package>.copyright."
    echo
} >"$doc/third-party/BUNDLED.txt"
declare -A owner=()
if command -v dpkg-query >/dev/null 2>&1; then
    # One query for all: each file under its own name, its resolved name, and the /lib <-> /usr/lib
    # twin of both (Debian 12 merges /lib into /usr/lib; dpkg knows a file by one of them).
    candidates=()
    for rel in "${!origin[@]}"; do
        for c in "${origin[$rel]}" "$(readlink -f "${origin[$rel]}")"; do
            candidates+=("$c" "$(sed 's|^/usr/lib/|/lib/|; t; s|^/lib/|/usr/lib/|' <<<"$c")")
        done
    done
    while IFS= read -r line; do
        owner[${line#*: }]=${line%%: *}
    done < <(dpkg-query -S "${candidates[@]}" 2>/dev/null | grep -v '^diversion' || true)
fi
for rel in $(printf '%s\n' "${!origin[@]}" | sort); do
    src=${origin[$rel]}
    real=$(readlink -f "$src")
    pkg=""
    for c in "$src" "$real" "$(sed 's|^/usr/lib/|/lib/|; t; s|^/lib/|/usr/lib/|' <<<"$src")" \
        "$(sed 's|^/usr/lib/|/lib/|; t; s|^/lib/|/usr/lib/|' <<<"$real")"; do
        pkg=${owner[$c]:-}
        [ -n "$pkg" ] && break
    done
    pkg=${pkg%%:*} # libfoo:amd64 -> libfoo
    if [ -n "$pkg" ]; then
        version=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || true)
        printf '%-48s %s %s\n' "$rel" "$pkg" "$version" >>"$doc/third-party/BUNDLED.txt"
        [ -e "/usr/share/doc/$pkg/copyright" ] && cp "/usr/share/doc/$pkg/copyright" "$doc/third-party/$pkg.copyright"
    else
        printf '%-48s %s\n' "$rel" "(package unknown: $src)" >>"$doc/third-party/BUNDLED.txt"
    fi
done
find "$usr" -type f \( -perm -u+x -o -name '*.so*' \) -print0 | xargs -0 readelf -d 2>/dev/null \
    | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u | while read -r soname; do
    [ -e "$usr/lib/$soname" ] || echo "$soname"
done >"$doc/third-party/HOST-LIBRARIES.txt"

# Smaller: drop the symbol tables of what was copied (the programs were stripped by the install).
if command -v strip >/dev/null 2>&1; then
    find "$usr/lib" "$usr/plugins" -type f -name '*.so*' -exec strip --strip-unneeded {} + 2>/dev/null || true
fi

cat >"$usr/bin/qt.conf" <<'EOF'
# Written by packaging/bundle-appdir.sh: Qt finds its plugins in the AppDir, not on the host.
# Relative paths are relative to the directory of the executable (usr/bin).
[Paths]
Prefix = ..
Plugins = plugins
EOF

cp "$here/AppRun" "$appdir/AppRun"
chmod 755 "$appdir/AppRun"
cp "$root/resources/membudget.desktop" "$appdir/membudget.desktop"
cp "$root/resources/membudget.svg" "$appdir/membudget.svg"
ln -sf membudget.svg "$appdir/.DirIcon"
