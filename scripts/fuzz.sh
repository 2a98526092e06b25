#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs each on its committed seed corpus
# (tests/fuzz/corpus/NAME) for SECONDS seconds (default 5). New inputs go to a scratch copy, so the
# committed corpus only changes when you copy them back on purpose.
#   scripts/fuzz.sh [SECONDS] [TARGET...]      FUZZ_BUILD_DIR (default build-fuzz)
#   FUZZ_NO_BUILD=1: run the targets already built in FUZZ_BUILD_DIR (long runs in the
#   background, while the sources change under them; docs/fuzzing.md)
# Exit status: non-zero if a target crashes, leaks or trips a sanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5}
shift || true
dir=${FUZZ_BUILD_DIR:-build-fuzz}
targets=("$@")
if ((${#targets[@]} == 0)); then
  mapfile -t targets < <(cd tests/fuzz && ls fuzz_*.c | sed 's/\.c$//')
fi
if [ "${FUZZ_NO_BUILD:-0}" != 1 ]; then
  # two runs at once (long runs in the background) build one after the other
  mkdir -p "$dir"
  exec 9>"$dir/.fuzz-build.lock"
  flock 9
  CC=clang cmake -S . -B "$dir" -DRSSM_FUZZ=ON -DRSSM_CUDA=OFF -DRSSM_WERROR=ON >/dev/null
  cmake --build "$dir" -j"${JOBS:-2}" --target "${targets[@]}"
  flock -u 9
fi
scratch=$(mktemp -d)
mkdir -p "$dir/fuzz-artifacts"  # crashing inputs are kept here
trap 'rm -rf "$scratch"' EXIT
for t in "${targets[@]}"; do
  name=${t#fuzz_}
  mkdir -p "$scratch/$name"
  cp -r "tests/fuzz/corpus/$name/." "$scratch/$name/" 2>/dev/null || true
  echo "fuzz: $t for ${secs}s"
  # -max_total_time bounds the run; -rss_limit_mb keeps a runaway allocation from passing silently
  "$dir/tests/fuzz/$t" "$scratch/$name" -max_total_time="$secs" -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$dir/fuzz-artifacts/" 2>"$scratch/$t.log" || { tail -n 40 "$scratch/$t.log"; exit 1; }
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb|stat::new_units_added" \
    "$scratch/$t.log" | sed "s/^/  $t /"
done
echo "fuzz: ${#targets[@]} targets, no crash"
