#!/usr/bin/env bash
# Session 36, call 2 (issue 18, the 4B half): where the 4B shapes' step at K = 64 spends its
# time, on the build of call 1 (c5df8c2): (1) `bench kernels` on the qwen4b and nano shapes,
# the conventional step alone at B = 16, 64, 256 (GB/s against copy); (2) the kernel tracer on
# both 4B shapes' bench e2e step (per kernel, what it adds to the step's graph).
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=200
. scripts/device_call_lib.sh
timeout 80 $B/replayssm bench kernels --shapes qwen4b,nano --batches 16,64,256 --parts std \
  --iters 15 --warmup 3 --out "$W/kernels.csv" > "$W/kernels.log" 2>&1
stamp "bench kernels rc=$?"
pack
for s in qwen3.5-4b nemotron-3-nano-4b; do
  [ "$(left)" -gt 40 ] || { stamp "skip $s"; continue; }
  e2e_trace_shape $B/replayssm $s $s
  pack
done
