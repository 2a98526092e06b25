#!/usr/bin/env bash
# Session 33, call 9 (issue 18): Nsight Compute's duration of each kernel of one decode step of
# each fixture model on 9e2b5b4 (the default step with the tensor-core GEMM's X loads grouped),
# bench e2e --streams 16 --gemm bf16; each kernel run alone by ncu (no PDL overlap): the map for
# the next cuts. Carry .devrun.txz (replayssm); trim keeping results/h200-2026-12-07-s33 and
# data/models/*/model.safetensors. ~70 s.
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=120
. scripts/device_call_lib.sh # W, B, left, stamp, pack; the bundle unpacked
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
for m in nemotronh-m2-tiny qwen35-gdn-tiny; do
  [ -n "$NCU" ] && [ "$(left)" -gt 40 ] || { stamp "ncu $m skipped ($NCU, $(left) s left)"; continue; }
  timeout $(( $(left) - 15 )) "$NCU" --metrics gpu__time_duration.sum --csv --print-units base -c 420 \
    $B/replayssm bench e2e --model data/models/$m --streams 16 --steps 4 --warmup 1 \
    --gemm bf16 --micro off --profile off --configs 'conventional state=fp32' --label ncu \
    --out "$W/ncu-e2e.csv" > "$W/ncu-$m.csv" 2> "$W/ncu-$m.log"
  stamp "ncu $m rc=$? $(grep -c gpu__time_duration "$W/ncu-$m.csv") kernels"
  pack
done
