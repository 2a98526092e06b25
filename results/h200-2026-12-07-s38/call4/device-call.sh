#!/usr/bin/env bash
# Session 38, call 4 (issue 18): call 3 cut to what ~200 s of device time holds (the session's
# last, after eight refused starts): the kernel, forward and attention-lab checks, the 4B shapes
# against e4727b7 with and without the L2 prefetches, the qwen3.5-4b step traced with and without,
# the fixtures old/new, the same-call ratio if time is left. gpu_session.sh stays for call 3.
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=190
. scripts/device_call_lib.sh
O=.devrun/old/replayssm
gpu_check kernels 40 $B/gpu_check_mc_kernels
gpu_check forward 40 $B/gpu_check_mc_forward tests/fixtures 64
gpu_check attn-lab 40 $B/gpu_check_attn_lab
pack
for s in qwen3.5-4b nemotron-3-nano-4b; do
  e2e_shape $O $s old-$s
  e2e_shape $B/replayssm $s new-$s
  RSSM_L2_PREFETCH=16 e2e_shape $B/replayssm $s pf16-$s
  RSSM_L2_PREFETCH_STATE=16 e2e_shape $B/replayssm $s st16-$s
  RSSM_L2_PREFETCH=16 RSSM_L2_PREFETCH_STATE=16 e2e_shape $B/replayssm $s pf16st16-$s
done
pack
e2e_trace_shape $B/replayssm qwen3.5-4b new-qwen3.5-4b
pack
RSSM_L2_PREFETCH=16 RSSM_L2_PREFETCH_STATE=16 e2e_trace_shape $B/replayssm qwen3.5-4b pf-qwen3.5-4b
pack
ab_rounds 1 $O $B/replayssm nemotronh-m2-tiny qwen35-gdn-tiny
pack
hf_rounds 1 nemotronh-m2-tiny qwen35-gdn-tiny
pack
