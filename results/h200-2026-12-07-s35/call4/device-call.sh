#!/usr/bin/env bash
# Session 35, call 4 (issue 18): what call 2 skipped for time, on the warm machine: the 4B shapes
# with session 34's build (call 1's best switches) and this one (mat4's launch bounds at B = 64),
# then one more same-call ratio per fixture. ~70 s.
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=100
. scripts/device_call_lib.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
O=.devrun/old/replayssm
for s in nemotron-3-nano-4b qwen3.5-4b; do
  RSSM_GRAPH_STEPS=1 RSSM_ATTN_FULL_GRID=1 e2e_shape $O $s s34best-$s
  e2e_shape $B/replayssm $s default-$s
done
pack
for m in nemotronh-m2-tiny qwen35-gdn-tiny; do
  [ "$(left)" -gt 22 ] || { stamp "skip $m"; continue; }
  e2e_fixture $B/replayssm $m hf-$m-3 "$W/hf_$m-3.json"
done
pack
