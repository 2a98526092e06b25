#!/usr/bin/env bash
# Session 35, call 2 (issue 18): call 1's findings applied. mat4 (the fused fp32 SSM step) with
# launch bounds (256, 1) (at (256, 2) the Mamba-2 variant spilled, and its spill stores held the
# row loads back: Nsight Compute, call 1) and 4-row batches for any conventional step below
# MAT4_WIDE_B rows (8 warps of 4 rows for a Mamba-2 head of dv = 32 at B = 16); the 8-step graphs
# and the trimmed attention grid removed (both slower in call 1). (1) every GPU check on this
# code; (2) bench e2e per fixture, three rounds of: session 34's last build (25381f1, in
# .devrun/old), that build with call 1's best switches (RSSM_GRAPH_STEPS=1 RSSM_ATTN_FULL_GRID=1),
# this build, this build with RSSM_MAT4_ROWS=8 (the launch bounds alone); (3) the 4B shapes, old
# and new (mat4's occupancy at B = 64); (4) the default's timelines; (5) transformers twice per
# fixture after a default run. Carry .devrun.txz; trim keeping results/h200-2026-12-07-s35 and
# data/models/*/model.safetensors. ~230 s.
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=240
. scripts/device_call_lib.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
gpu_session_run 170
pack
O=.devrun/old/replayssm
for rep in 1 2 3; do
  for m in nemotronh-m2-tiny qwen35-gdn-tiny; do
    e2e_fixture $O $m s34-$m-$rep
    RSSM_GRAPH_STEPS=1 RSSM_ATTN_FULL_GRID=1 e2e_fixture $O $m s34best-$m-$rep
    e2e_fixture $B/replayssm $m default-$m-$rep
    RSSM_MAT4_ROWS=8 e2e_fixture $B/replayssm $m rows8-$m-$rep
  done
done
pack
for s in qwen3.5-4b nemotron-3-nano-4b; do
  [ "$(left)" -gt 60 ] || { stamp "skip $s"; continue; }
  RSSM_GRAPH_STEPS=1 RSSM_ATTN_FULL_GRID=1 e2e_shape $O $s s34best-$s
  e2e_shape $B/replayssm $s default-$s
done
pack
for m in nemotronh-m2-tiny qwen35-gdn-tiny; do e2e_trace $B/replayssm $m $m; done
pack
for rep in 1 2; do
  for m in nemotronh-m2-tiny qwen35-gdn-tiny; do
    [ "$(left)" -gt 22 ] || { stamp "skip $m"; continue; }
    e2e_fixture $B/replayssm $m hf-$m-$rep "$W/hf_$m-$rep.json"
  done
done
pack
