#!/bin/bash
# `replayssm bench e2e` on the H200 (docs/gpu-runtime.md, "bench e2e"; issue 7 point 4).
#
# From the repository root on the device, with the executables in $BIN (default .devrun/bin:
# replayssm) and python3 with torch + transformers:
#
#   OUT=$OUT scripts/bench/bench_e2e_session.sh
#
# 1. the trained fixture models at K = 16 and 64: replayssm (C = 1: the reference only, the same
#    K streams as transformers' batch; C = 2: reference + replay L=16) and, in the same call
#    (--transformers), transformers' own cached decoding of the same model, K and steps
#    (scripts/bench/transformers_decode.py);
# 2. random-weight models of the Qwen3.5-4B and Nemotron-3-Nano-4B shapes at K = 16 and 64:
#    time per step, byte model, copy bandwidth, fraction of the byte limit, GEMMs and SSM engine
#    timed alone, and a per-block profile (--profile on: 8 launched steps with
#    RSSM_CUDA_PROFILE=1); fp32 GEMMs and, where this build has them, bf16 GEMMs;
# 3. scripts/bench/join_e2e.py: one markdown table with the speed-ups and the targets.
# Files in $OUT (5): session.log, bench_e2e.csv, hf_<model>.json x 2, summary.md.
# Each command has its own timeout; the whole script stays under 9.5 minutes in the worst case
# and takes about 4 when nothing hangs.
set -u
: "${OUT:?set OUT to the output directory}"
BIN=${BIN:-.devrun/bin}
PY=${PY:-python3}
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-.devrun/lib:/usr/local/cuda/lib64}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
mkdir -p "$OUT"
LOG=$OUT/session.log
CSV=$OUT/bench_e2e.csv
rm -f "$CSV"
: > "$LOG"
T_START=$(date +%s)

E2E=("$BIN/replayssm" bench e2e)
# bf16 GEMMs where the runtime has them (the help text says so)
GEMM=fp32
if "${E2E[@]}" --help 2> /dev/null | grep -q "bf16 GEMMs available"; then GEMM=fp32,bf16; fi

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
  echo "bench_e2e_session: $(date -u +%FT%TZ), git $(git rev-parse --short=12 HEAD 2> /dev/null)"
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem \
    --format=csv 2>&1
  echo "bench command: ${E2E[*]}; GEMM precisions: $GEMM"
  free -g | head -2
} >> "$LOG"

# 1. fixtures: replayssm, then transformers on the same model and K
for m in qwen35-gdn-tiny nemotronh-m2-tiny; do
  run 120 "${E2E[@]}" --model "data/models/$m" --streams 16,64 --steps 64 --warmup 8 --gemm "$GEMM" \
    --micro on --profile on --transformers "$PY" --transformers-json "$OUT/hf_$m.json" \
    --out "$CSV"
done

# 2. the 4B shapes, random weights (about 17 GB fp32 on the host and the device)
for s in qwen3.5-4b nemotron-3-nano-4b; do
  run 150 "${E2E[@]}" --shape "$s" --streams 16,64 --steps 32 --warmup 4 --gemm "$GEMM" \
    --profile on --out "$CSV"
done

# 3. the joined table
run 20 "$PY" scripts/bench/join_e2e.py "$CSV" "$OUT"/hf_*.json --out "$OUT/summary.md"
echo "bench_e2e_session: done in $(($(date +%s) - T_START)) s" | tee -a "$LOG"
cat "$OUT/summary.md" 2> /dev/null
