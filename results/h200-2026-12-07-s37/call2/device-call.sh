#!/usr/bin/env bash
# Session 37, call 2 (issue 18): the wide tensor-core GEMM (src/model_cuda/mc_gemm_wide.h, lab
# variant 7) against cuBLAS on the 4B shapes at 64 rows: its check (gpu_check_gemm_lab: every
# variant, every shape), `bench gemm` per GEMM and per step, the 4B steps with
# RSSM_GEMM_BF16=wide against the default (cuBLAS), a timeline of each with wide; then the
# Mamba-2 fixture's step traced on a6ea872 (.devrun/old) and on this build (call 1: 3.7 us slower).
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=200
. scripts/device_call_lib.sh
gpu_check gemm-lab 150 $B/gpu_check_gemm_lab
pack
timeout 90 $B/replayssm bench gemm --shape qwen4b,nano4b --rows 64 --prec bf16 \
  --variants cublas,wide --reps 10 > "$W/bench-gemm.txt" 2>&1
stamp "bench gemm rc=$? $(grep -c . "$W/bench-gemm.txt") lines"
pack
for s in qwen3.5-4b nemotron-3-nano-4b; do
  e2e_shape $B/replayssm $s cublas-$s
  RSSM_GEMM_BF16=wide e2e_shape $B/replayssm $s wide-$s
done
pack
for s in qwen3.5-4b nemotron-3-nano-4b; do
  [ "$(left)" -gt 30 ] && RSSM_GEMM_BF16=wide e2e_trace_shape $B/replayssm $s wide-$s
done
pack
[ "$(left)" -gt 20 ] && e2e_trace .devrun/old/replayssm nemotronh-m2-tiny old-m2
[ "$(left)" -gt 15 ] && e2e_trace $B/replayssm nemotronh-m2-tiny new-m2
pack
