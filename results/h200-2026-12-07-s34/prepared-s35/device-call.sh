#!/usr/bin/env bash
# Prepared at the end of session 34 for the next session's first call (issue 18), on the build of
# session 34's last code, which has not run on a GPU: mat4 (the fused fp32 SSM step) and the
# Mamba-2 conv + prep loading their inputs in one batch, the weighted norms their weights before
# the PDL wait (the same bits; fewer L2 round trips on the critical path), submissions replaying
# graphs of 8 steps (the gap between graph launches once per 8 steps), the tensor-core GEMM's
# partial sums back in
# static shared memory up to 8 warps (dynamic only at 16: call 5 had them dynamic throughout and
# the GDN fixture's step came out 2.5 us slower, cause not settled), and the two A/B switches
# RSSM_ATTN_FULL_GRID=1 (the attention grid over all nsplit splits) and RSSM_GEMM_MMA16=0 (8 warps
# where the rule picks 16), and RSSM_GRAPH_STEPS=1.
# (1) tests/gpu/gpu_session.sh: every GPU check on this code;
# (2) bench e2e bf16 K = 16 per fixture, three rounds of: default, full grid, no mma16, both
#     (both = the launches of 600c0ad): which of session 34's changes gain and which cost; and,
#     when the bundle has .devrun/old/replayssm (a build of 600c0ad: session 34's workspace has
#     it), that build first in each round: old against both is the batched loads and the
#     8-step graphs, and RSSM_GRAPH_STEPS=1 (one step a graph) tells the graphs' part;
# (3) the default's kernel timelines (tests/gpu/kernel_trace.c);
# (4) transformers twice per fixture after a default run (the same-call ratio for the 40x bar).
# Build: BUILD_DIR=build bash scripts/setup.sh (a CUDA build), then the bundle as in
# docs/next-session.md, with build/tests/gpu/librssm_kernel_trace.so and the CUDA toolkit's
# libcupti.so.13 in .devrun/lib. Trim keeping results/h200-2026-12-07-s34, tests/fixtures and
# data/models/*/model.safetensors. ~330 s (CALL_LIMIT caps it).
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=340
. scripts/device_call_lib.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
gpu_session_run 200
pack
for rep in 1 2 3; do
  for m in nemotronh-m2-tiny qwen35-gdn-tiny; do
    [ -x .devrun/old/replayssm ] && e2e_fixture .devrun/old/replayssm $m old-$m-$rep
    e2e_fixture $B/replayssm $m default-$m-$rep
    RSSM_ATTN_FULL_GRID=1 e2e_fixture $B/replayssm $m fullgrid-$m-$rep
    RSSM_GEMM_MMA16=0 e2e_fixture $B/replayssm $m nomma16-$m-$rep
    RSSM_ATTN_FULL_GRID=1 RSSM_GEMM_MMA16=0 e2e_fixture $B/replayssm $m both-$m-$rep
    RSSM_GRAPH_STEPS=1 e2e_fixture $B/replayssm $m onestep-$m-$rep
  done
done
pack
for m in nemotronh-m2-tiny qwen35-gdn-tiny; do e2e_trace $B/replayssm $m $m; done
pack
for rep in 1 2; do
  for m in nemotronh-m2-tiny qwen35-gdn-tiny; do
    [ "$(left)" -gt 25 ] || { stamp "skip $m"; continue; }
    e2e_fixture $B/replayssm $m hf-$m-$rep "$W/hf_$m-$rep.json"
  done
done
pack
