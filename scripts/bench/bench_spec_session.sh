#!/bin/bash
# Spec rounds against standard steps on the H200 (issue 19 point 4; docs/gpu-runtime.md, "bench
# e2e", --spec): `replayssm bench e2e --spec 4,8` on the trained fixture models and on
# random-weight models of the Qwen3.5-4B and Nemotron-3-Nano-4B shapes, fp32 GEMMs (the
# precision of `run`): per (K, T, acceptance model fixed:T / uniform / geom:0.7) the time per
# round, the mean accepted tokens and the committed tokens per second, against the standard
# step (`replay L=16 ckpt=fp32`, K rows) of the same model and K.
#
#   OUT=$OUT scripts/bench/bench_spec_session.sh      # from the repository root, on the device
#
# Files in $OUT: spec_session.log (commands and output), bench_spec.csv (one row per case).
# Each command has its own timeout; the whole script stays under 9 minutes.
set -u
: "${OUT:?set OUT to the output directory}"
BIN=${BIN:-.devrun/bin}
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-.devrun/lib:/usr/local/cuda/lib64}
mkdir -p "$OUT"
LOG=$OUT/spec_session.log
CSV=$OUT/bench_spec.csv
rm -f "$CSV"
: > "$LOG"
T_START=$(date +%s)
E2E=("$BIN/replayssm" bench e2e)
run() { # run SECONDS CMD...: log the command, its output and its exit status; never stop
  local t=$1
  shift
  echo "\$ $*" >> "$LOG"
  local t0=$(date +%s)
  timeout -s INT "$t" "$@" >> "$LOG" 2>&1
  local rc=$?
  echo "rc=$rc ($(($(date +%s) - t0)) s)" >> "$LOG"
  echo "$* -> rc=$rc"
}
{
  echo "bench_spec_session: $(date -u +%FT%TZ), git $(git rev-parse --short=12 HEAD 2> /dev/null)"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1
} >> "$LOG"
for m in qwen35-gdn-tiny nemotronh-m2-tiny; do
  run 150 "${E2E[@]}" --model "data/models/$m" --streams 16,64 --steps 64 --warmup 8 \
    --configs 'conventional state=fp32' --micro off --spec 4,8 --spec-out "$CSV"
done
for s in qwen3.5-4b nemotron-3-nano-4b; do
  run 170 "${E2E[@]}" --shape "$s" --streams 16 --steps 16 --warmup 2 --block 4 \
    --configs 'conventional state=fp32' --micro off --spec 4,8 --spec-out "$CSV"
done
grep "bench e2e spec:" "$LOG"
echo "bench_spec_session: done in $(($(date +%s) - T_START)) s" | tee -a "$LOG"
