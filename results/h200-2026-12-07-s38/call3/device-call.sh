#!/usr/bin/env bash
# Session 38, call 3 (issue 18), the whole session's measurement in one call (each refused start
# cost 90-180 s): the latency fixes (the norms' sums of squares batched, row_stats' loads 8 deep, the conv + prep
# kernels compiled for conv width 4, attention splits of at least 64 positions) checked and set
# against e4727b7 (.devrun/old); the L2 prefetch (RSSM_L2_PREFETCH, RSSM_L2_PREFETCH_STATE MiB,
# mc_prefetch.h) on the 4B shapes, traced; then every GPU check with both prefetches on (they
# change no bits, so the checks must pass as they are), and the fixtures' same-call ratio.
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=420
. scripts/device_call_lib.sh
O=.devrun/old/replayssm
gpu_check kernels 40 $B/gpu_check_mc_kernels
gpu_check forward 40 $B/gpu_check_mc_forward tests/fixtures 64
gpu_check attn-lab 60 $B/gpu_check_attn_lab
for s in qwen3.5-4b nemotron-3-nano-4b; do
  e2e_shape $O $s old-$s
  e2e_shape $B/replayssm $s new-$s
  RSSM_L2_PREFETCH=16 e2e_shape $B/replayssm $s pf16-$s
  RSSM_L2_PREFETCH_STATE=16 e2e_shape $B/replayssm $s st16-$s
  RSSM_L2_PREFETCH=16 RSSM_L2_PREFETCH_STATE=16 e2e_shape $B/replayssm $s pf16st16-$s
  RSSM_L2_PREFETCH=32 RSSM_L2_PREFETCH_STATE=32 e2e_shape $B/replayssm $s pf32st32-$s
done
pack
e2e_trace_shape $B/replayssm qwen3.5-4b new-qwen3.5-4b
RSSM_L2_PREFETCH=16 RSSM_L2_PREFETCH_STATE=16 e2e_trace_shape $B/replayssm qwen3.5-4b pf-qwen3.5-4b
pack
ab_rounds 1 $O $B/replayssm nemotronh-m2-tiny qwen35-gdn-tiny
pack
[ "$(left)" -gt 240 ] && RSSM_L2_PREFETCH=16 RSSM_L2_PREFETCH_STATE=16 gpu_session_run 220
pack
hf_rounds 1 nemotronh-m2-tiny qwen35-gdn-tiny
pack
[ "$(left)" -gt 20 ] && e2e_trace_shape $B/replayssm nemotron-3-nano-4b new-nemotron-3-nano-4b
pack
