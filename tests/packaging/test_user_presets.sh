#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# The documented user preset folder (README, membudget(1)): the example files of
# docs/examples/presets/, dropped into $XDG_DATA_HOME/membudget/presets, are listed next to the
# bundled presets and usable by id; $MEMBUDGET_PRESETS points elsewhere.
source "$(dirname "$0")/common.sh"
membudget=${MEMBUDGET_CLI:?}
examples=$MEMBUDGET_SOURCE_DIR/docs/examples/presets

folder=$XDG_DATA_HOME/membudget/presets
mkdir -p "$folder"
cp "$examples"/*.yaml "$folder/"
"$membudget" --help | grep -qF "$folder" || fail "membudget --help does not name the user preset folder $folder"

"$membudget" validate "$examples"/*.yaml || fail "the example files do not validate"
# The README's excerpt of the example is a valid preset file too.
awk '/^## Your own presets/ {f = 1} f && /^```yaml/ {y = 1; next} y && /^```/ {exit} y {print}' \
    "$MEMBUDGET_SOURCE_DIR/README.md" >readme-example.yaml
grep -q "my-llama-3b" readme-example.yaml || fail "no YAML example under the README's 'Your own presets'"
"$membudget" validate readme-example.yaml || fail "the README's preset example does not validate"
"$membudget" presets --json >presets.json 2>presets.err || fail "membudget presets"
[ ! -s presets.err ] || { cat presets.err; fail "warnings while loading the example presets"; }
for id in '"my-llama-3b"' '"my-rtx-4090-48gb"' '"my-lab-qlora"' '"llama-3.1-8b"'; do
    grep -q "\"id\": $id" presets.json || fail "membudget presets does not list $id"
done
"$membudget" estimate "$folder/my-lab-qlora.yaml" >estimate.txt || fail "estimate of the example scenario"
grep -q "my-rtx-4090-48gb" estimate.txt || fail "the estimate does not compare with the example GPU"
grep -q "^Peak:" estimate.txt || fail "the estimate has no peak"
# The desktop application reads the same folder.
if [ -n "${MEMBUDGET_GUI:-}" ]; then
    "$MEMBUDGET_GUI" --export "$folder/my-lab-qlora.yaml" -o chart.png --width 600 --height 400 \
        || fail "membudget-gui cannot export the example scenario (user presets not found?)"
    check_png chart.png 600 400
fi
# A scenario elsewhere can name the user presets by id.
printf 'format: membudget/1\nmodel: {preset: my-llama-3b}\ngpus: [my-rtx-4090-48gb]\n' >mine.yaml
"$membudget" estimate mine.yaml --json >mine.json || fail "a scenario naming the user presets by id"

# $MEMBUDGET_PRESETS replaces the folder: the examples are gone from the catalogue.
mkdir -p empty
MEMBUDGET_PRESETS=$PWD/empty "$membudget" presets models | grep -q my-llama-3b && fail "MEMBUDGET_PRESETS ignored"
MEMBUDGET_PRESETS=$examples "$membudget" presets models | grep -q my-llama-3b || fail "MEMBUDGET_PRESETS not read"
say "ok"
