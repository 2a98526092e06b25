#!/usr/bin/env bash
# Session 39, call 1 (issue 18): session 38's prepared call 3 (the latency fixes checked and set
# against e4727b7 in .devrun/old, the L2 prefetch on the 4B shapes, traced, every GPU check with
# both prefetches on, the fixtures' same-call ratio), with cuBLASLt's ranked algorithms added
# (mc_gemm_lt.h): `bench gemm` times lt0..lt7 against cublasGemmEx on the 4B GEMMs (each
# checked against fp64 first), then the 4B steps with RSSM_GEMM_LT at the rank that the bench
# found fastest for the output projections (outN) and for the whole step (allN), and the forward
# check with the cuBLAS path on cuBLASLt.
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=420
. scripts/device_call_lib.sh
O=.devrun/old/replayssm
gpu_check kernels 40 $B/gpu_check_mc_kernels
gpu_check forward 40 $B/gpu_check_mc_forward tests/fixtures 64
gpu_check attn-lab 60 $B/gpu_check_attn_lab
gemm_lt_bench 60
pack
for s in qwen3.5-4b nemotron-3-nano-4b; do
  e2e_shape $O $s old-$s
  e2e_shape $B/replayssm $s new-$s
  [ -n "$OUTR" ] && RSSM_GEMM_LT=out$OUTR e2e_shape $B/replayssm $s lt-out$OUTR-$s
  [ -n "$ALLR" ] && RSSM_GEMM_LT=all$ALLR e2e_shape $B/replayssm $s lt-all$ALLR-$s
  RSSM_L2_PREFETCH=16 e2e_shape $B/replayssm $s pf16-$s
  RSSM_L2_PREFETCH_STATE=16 e2e_shape $B/replayssm $s st16-$s
  RSSM_L2_PREFETCH=16 RSSM_L2_PREFETCH_STATE=16 e2e_shape $B/replayssm $s pf16st16-$s
  RSSM_L2_PREFETCH=32 RSSM_L2_PREFETCH_STATE=32 e2e_shape $B/replayssm $s pf32st32-$s
  [ -n "$OUTR" ] && RSSM_GEMM_LT=out$OUTR RSSM_L2_PREFETCH=16 RSSM_L2_PREFETCH_STATE=16 \
    e2e_shape $B/replayssm $s lt-out$OUTR-pf16st16-$s
done
pack
[ -n "$OUTR" ] && RSSM_GEMM_BF16=cublas RSSM_GEMM_LT=all$OUTR gpu_check forward-lt 60 \
  $B/gpu_check_mc_forward tests/fixtures 64
e2e_trace_shape $B/replayssm qwen3.5-4b new-qwen3.5-4b
RSSM_L2_PREFETCH=16 RSSM_L2_PREFETCH_STATE=16 e2e_trace_shape $B/replayssm qwen3.5-4b pf-qwen3.5-4b
[ -n "$OUTR" ] && RSSM_GEMM_LT=out$OUTR e2e_trace_shape $B/replayssm qwen3.5-4b lt-qwen3.5-4b
pack
ab_rounds 1 $O $B/replayssm nemotronh-m2-tiny qwen35-gdn-tiny
pack
[ "$(left)" -gt 240 ] && RSSM_L2_PREFETCH=16 RSSM_L2_PREFETCH_STATE=16 gpu_session_run 220
pack
hf_rounds 1 nemotronh-m2-tiny qwen35-gdn-tiny
pack
[ "$(left)" -gt 45 ] && gpu_check gemm-lab 45 $B/gpu_check_gemm_lab
pack
[ "$(left)" -gt 20 ] && e2e_trace_shape $B/replayssm nemotron-3-nano-4b new-nemotron-3-nano-4b
pack
