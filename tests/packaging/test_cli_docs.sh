#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The command line's own documentation: --version is "membudget <project version>", --help lists
# every command, and the man page describes each of them and carries the project version.
source "$(dirname "$0")/common.sh"
membudget=${MEMBUDGET_CLI:?}
commands=(estimate fit ladder presets validate snapshot import-config export-config export gui)

version=$("$membudget" --version)
[ "$version" = "membudget $MEMBUDGET_VERSION" ] || fail "--version says '$version', expected 'membudget $MEMBUDGET_VERSION'"
if [ -n "${MEMBUDGET_GUI:-}" ]; then
    "$MEMBUDGET_GUI" --version | grep -qF "$MEMBUDGET_VERSION" || fail "membudget-gui --version lacks $MEMBUDGET_VERSION"
fi

"$membudget" --help >help.txt || fail "--help exits non-zero"
listed=$(sed -n '/^Subcommands:/,/^$/p' help.txt | awk 'NR > 1 && NF {print $1}' | sort | tr '\n' ' ')
expected=$(printf '%s\n' "${commands[@]}" | sort | tr '\n' ' ')
[ "$listed" = "$expected" ] || fail "--help lists '$listed'; this test knows '$expected' (a new command? describe it in docs/membudget.1 and add it here)"
for c in "${commands[@]}"; do
    "$membudget" "$c" --help >/dev/null || fail "membudget $c --help fails"
done

page=$MEMBUDGET_SOURCE_DIR/docs/membudget.1
grep -q "^\.TH MEMBUDGET 1 .*\"MemBudget $MEMBUDGET_VERSION\"" "$page" || fail "docs/membudget.1 .TH does not say MemBudget $MEMBUDGET_VERSION"
grep -q "^\.TH MEMBUDGET\\\\-GUI 1 .*\"MemBudget $MEMBUDGET_VERSION\"" "$MEMBUDGET_SOURCE_DIR/docs/membudget-gui.1" \
    || fail "docs/membudget-gui.1 .TH does not say MemBudget $MEMBUDGET_VERSION"
need_tool man man-db
rendered=$(LC_ALL=C.UTF-8 MANWIDTH=200 man --warnings -l "$page" 2>man.err) || fail "man -l docs/membudget.1"
[ ! -s man.err ] || { cat man.err; fail "man -l docs/membudget.1 warns"; }
section=$(sed -n '/^COMMANDS/,/^OPTIONS/p' <<<"$rendered")
for c in "${commands[@]}"; do
    grep -qE "^ {7}$c( |$)" <<<"$section" || fail "the man page's COMMANDS section does not describe '$c'"
done
say "ok: ${commands[*]}"
