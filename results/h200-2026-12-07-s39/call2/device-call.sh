#!/usr/bin/env bash
# Session 39, call 2 (issue 18): call 1 cut to what ~180 s of device time can hold, most
# informative first, packed after each step: cuBLASLt's ranks on the 4B GEMMs (bench gemm), the
# 4B steps new / lt / prefetch / both / old (e4727b7), then the checks.
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=180
. scripts/device_call_lib.sh
O=.devrun/old/replayssm
gemm_lt_bench 40
pack
for s in qwen3.5-4b nemotron-3-nano-4b; do
  e2e_shape $B/replayssm $s new-$s
  [ -n "$OUTR" ] && RSSM_GEMM_LT=out$OUTR e2e_shape $B/replayssm $s lt-out$OUTR-$s
  RSSM_L2_PREFETCH=16 RSSM_L2_PREFETCH_STATE=16 e2e_shape $B/replayssm $s pf16st16-$s
  pack
done
for s in qwen3.5-4b nemotron-3-nano-4b; do
  [ -n "$OUTR" ] && RSSM_GEMM_LT=out$OUTR RSSM_L2_PREFETCH=16 RSSM_L2_PREFETCH_STATE=16 \
    e2e_shape $B/replayssm $s lt-out$OUTR-pf16st16-$s
  e2e_shape $O $s old-$s
  pack
done
gpu_check kernels 30 $B/gpu_check_mc_kernels
gpu_check forward 30 $B/gpu_check_mc_forward tests/fixtures 64
[ -n "$OUTR" ] && RSSM_GEMM_BF16=cublas RSSM_GEMM_LT=all$OUTR gpu_check forward-lt 30 \
  $B/gpu_check_mc_forward tests/fixtures 64
pack
[ "$(left)" -gt 40 ] && gpu_check attn-lab 35 $B/gpu_check_attn_lab
pack
[ "$(left)" -gt 15 ] && ab_rounds 1 $O $B/replayssm nemotronh-m2-tiny qwen35-gdn-tiny
pack
