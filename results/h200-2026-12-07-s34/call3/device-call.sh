#!/usr/bin/env bash
# Session 34, call 3 (issue 18): the step's inputs taken in by the first norm and the metrics'
# stats, metrics and egress in one kernel (two launches less a lockstep step than 600c0ad's
# four: ingest, row_stats, row_metrics, egress -> row_head), checked and timed:
# (1) tests/gpu/gpu_session.sh on the new build (gpu_check_mc_kernels now checks
#     mc_embed_rmsnorm_in and mc_row_head_launch bit for bit against the separate kernels);
# (2) bench e2e bf16 K = 16, old (.devrun/old: 600c0ad) and new alternately, three times per
#     fixture; then the new build with transformers once per fixture (the same-call ratio).
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=330
. scripts/device_call_lib.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
gpu_session_run 220
pack
for rep in 1 2 3; do
  for m in nemotronh-m2-tiny qwen35-gdn-tiny; do
    e2e_fixture .devrun/old/replayssm $m old-$m-$rep
    e2e_fixture $B/replayssm $m new-$m-$rep
  done
done
pack
for m in nemotronh-m2-tiny qwen35-gdn-tiny; do
  [ "$(left)" -gt 30 ] || { stamp "skip $m"; continue; }
  e2e_fixture $B/replayssm $m hf-$m "$W/hf_$m.json"
done
pack
