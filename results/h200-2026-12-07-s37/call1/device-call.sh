#!/usr/bin/env bash
# Session 37, call 1 (issue 18; session 36 call 4 as prepared): call 3's chunked norms
# made the fixtures' steps 13.6 / 15.8 us slower; now the norm kernels are instantiated per chunk
# (norm_chunk_for: the per-element code where a thread has <= 4 elements, as before session 36)
# and the chunked ones run 512 threads a block (norm_threads_for). The norms' checks, the fixtures
# against a6ea872 (.devrun/old), the 4B shapes. With CALL_LIMIT=400 (a fresh session's first
# call) also: every GPU check, the 4B shapes' timelines, two same-call transformers ratios.
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=75
. scripts/device_call_lib.sh
gpu_check kernels 40 $B/gpu_check_mc_kernels
gpu_check forward 40 $B/gpu_check_mc_forward tests/fixtures 64
gpu_check forward-plain 40 env RSSM_FUSED_NORMS=0 RSSM_FUSED_STEP=0 $B/gpu_check_mc_forward tests/fixtures 64
pack
ab_rounds 2 .devrun/old/replayssm $B/replayssm nemotronh-m2-tiny qwen35-gdn-tiny
pack
for s in nemotron-3-nano-4b qwen3.5-4b; do
  [ "$(left)" -gt 8 ] && e2e_shape $B/replayssm $s new-$s
done
pack
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
[ "$(left)" -gt 250 ] && { gpu_session_run 230; pack; }
for s in qwen3.5-4b nemotron-3-nano-4b; do
  [ "$(left)" -gt 30 ] && e2e_trace_shape $B/replayssm $s $s
done
pack
hf_rounds 2 nemotronh-m2-tiny qwen35-gdn-tiny
pack
