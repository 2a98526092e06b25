#!/usr/bin/env bash
# Session 36, call 2 (issue 18, the 4B half): where the 4B shapes' step at K = 64 spends its
# time, and whether mat4's rows a warp at wide B or its batch rows move it:
# (1) `bench kernels` std on the qwen4b and nano shapes at B = 16, 64, 256 (the conventional
#     step alone, GB/s against copy), then at B = 64 with RSSM_MAT4_WIDE_WR=16 and =8 and the
#     other batch rows (RSSM_MAT4_ROWS);
# (2) bench e2e on both 4B shapes: default, RSSM_MAT4_WIDE_WR=16, =8, RSSM_MAT4_ROWS=8 / =4;
# (3) the kernel tracer on both 4B shapes' step (per kernel, what it adds to the graph);
# (0) first: the step's inputs read from device copies of the slots (mc_step_io.h): the forward
#     check (its check 9: n steps a submission, bit-identical), then bench e2e on both fixtures,
#     three rounds of old (.devrun/old: c5df8c2's kernels, the mapped slots) and new.
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=260
. scripts/device_call_lib.sh
timeout 60 $B/gpu_check_mc_forward tests/fixtures 64 > "$W/forward.log" 2>&1
stamp "forward rc=$? $(tail -n 1 "$W/forward.log")"
for rep in 1 2 3; do
  for m in nemotronh-m2-tiny qwen35-gdn-tiny; do
    e2e_fixture .devrun/old/replayssm $m old-$m-$rep
    e2e_fixture $B/replayssm $m new-$m-$rep
  done
done
pack
bk() { # LABEL SHAPES BATCHES [ENV=VALUE]
  local label=$1 shapes=$2 batches=$3; shift 3
  env "$@" timeout 60 $B/replayssm bench kernels --shapes "$shapes" --batches "$batches" \
    --parts std --iters 15 --warmup 3 --out "$W/kernels-$label.csv" > "$W/kernels-$label.log" 2>&1
  stamp "bench kernels $label rc=$?"
}
bk default qwen4b,nano 16,64,256
bk wide16 qwen4b,nano 64 RSSM_MAT4_WIDE_WR=16
bk wide8 qwen4b,nano 64 RSSM_MAT4_WIDE_WR=8
bk rows8 qwen4b 64 RSSM_MAT4_ROWS=8
bk rows4 nano 64 RSSM_MAT4_ROWS=4
pack
for s in qwen3.5-4b nemotron-3-nano-4b; do
  [ "$(left)" -gt 60 ] || { stamp "skip $s"; continue; }
  e2e_shape $B/replayssm $s default-$s
  RSSM_MAT4_WIDE_WR=16 e2e_shape $B/replayssm $s wide16-$s
  RSSM_MAT4_WIDE_WR=8 e2e_shape $B/replayssm $s wide8-$s
done
[ "$(left)" -gt 40 ] && RSSM_MAT4_ROWS=8 e2e_shape $B/replayssm qwen3.5-4b rows8-qwen3.5-4b
[ "$(left)" -gt 40 ] && RSSM_MAT4_ROWS=4 e2e_shape $B/replayssm nemotron-3-nano-4b rows4-nemotron-3-nano-4b
pack
for s in qwen3.5-4b nemotron-3-nano-4b; do
  [ "$(left)" -gt 40 ] || { stamp "skip trace $s"; continue; }
  e2e_trace_shape $B/replayssm $s $s
  pack
done
