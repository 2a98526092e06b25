#!/usr/bin/env bash
# Session 37, call 3 (issue 18): the wide GEMM after call 2 (correct, but 45-56 us for the 4B
# shapes' smaller GEMMs, whatever their size): its k-tiles rotated by the tile index (every
# block read the same X tile at once) and the split sums in a second, parallel kernel (the last
# block's loop was 32 dependent L2 round trips). The lab check, `bench gemm`, the 4B steps with
# cuBLAS, wide and wide-split (the wide kernel only for the weights it splits); the whole lab
# check last, if time is left (~200 s of device time remained: bench gemm checks the 4B GEMMs).
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=100
. scripts/device_call_lib.sh
timeout 90 $B/replayssm bench gemm --shape qwen4b,nano4b --rows 64 --prec bf16 \
  --variants cublas,wide --reps 10 > "$W/bench-gemm.txt" 2>&1
stamp "bench gemm rc=$? $(grep -c . "$W/bench-gemm.txt") lines"
grep -E "wide|cublas" "$W/bench-gemm.txt" | grep -v check | awk '{print $4, $8, $9, $12}' | tr '\n' ';'
echo
pack
for s in qwen3.5-4b nemotron-3-nano-4b; do
  e2e_shape $B/replayssm $s cublas-$s
  RSSM_GEMM_BF16=wide e2e_shape $B/replayssm $s wide-$s
  RSSM_GEMM_BF16=wide-split e2e_shape $B/replayssm $s wide-split-$s
done
pack
[ "$(left)" -gt 50 ] && gpu_check gemm-lab 45 $B/gpu_check_gemm_lab
pack
[ "$(left)" -gt 12 ] && RSSM_GEMM_BF16=wide e2e_trace_shape $B/replayssm qwen3.5-4b wide-qwen3.5-4b
pack
