#!/usr/bin/env bash
# Fuzzes one loader with libFuzzer (clang, ASan + UBSan):
#   tests/fuzz/run.sh scenario|presets|hf_config|hub_ref|snapshot [SECONDS] [JOBS]
# Builds the "fuzz" CMake preset into build-fuzz/, seeds a working corpus from the committed seeds,
# and keeps anything that crashes in build-fuzz/artifacts/<target>/ (copy it to
# tests/fuzz/regressions/<target>/ once fixed). Prints libFuzzer's final statistics.
set -euo pipefail
target=${1:?usage: tests/fuzz/run.sh scenario|presets|hf_config|hub_ref|snapshot [SECONDS]}
seconds=${2:-600}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
cmake --preset fuzz >/dev/null
cmake --build --preset fuzz --target "fuzz_$target" >/dev/null

case "$target" in
scenario) seeds=(presets/scenarios tests/calibration tests/fuzz/seeds/scenario tests/data/bad) dict=tests/fuzz/yaml.dict ;;
presets) seeds=(presets/models presets/gpus.yaml tests/fuzz/seeds/presets tests/data/bad) dict=tests/fuzz/yaml.dict ;;
hf_config) seeds=(tests/fuzz/seeds/hf_config tests/data/bad) dict=tests/fuzz/json.dict ;;
# Snapshots are binary and larger: the smallest real ones (17 to 110 KB) are whole seeds.
snapshot) seeds=(tests/data/snapshots tests/data/bad) dict=tests/fuzz/pickle.dict max_len=262144 ;;
hub_ref) seeds=(tests/fuzz/seeds/hub_ref) dict=tests/fuzz/hub_ref.dict ;;
*) echo "unknown target '$target'; expected scenario, presets, hf_config, hub_ref or snapshot" >&2; exit 2 ;;
esac

corpus=build-fuzz/corpus/$target
artifacts=build-fuzz/artifacts/$target
mkdir -p "$corpus" "$artifacts"
for s in "${seeds[@]}" tests/fuzz/regressions/$target; do
    [ -e "$s" ] && find "$s" -type f -exec cp -n {} "$corpus/" \; || true
done
# -timeout: an input taking over 2 s is a hang (a user file must fail in under one);
# -rss_limit_mb: a loader must not balloon on a 64 KiB input.
exec "build-fuzz/tests/fuzz/fuzz_$target" "$corpus" -dict="$dict" -max_total_time="$seconds" \
    -max_len="${max_len:-65536}" -timeout=2 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$artifacts/"
