#!/usr/bin/env bash
# Session 34, call 6 (issue 18): call 5 made the GDN fixture's step 2.5 us slower while the
# Mamba-2 fixture's gained 2.2 us; the suspect is the tensor-core GEMM's partial sums in dynamic
# shared memory (every GEMM, the GDN fixture has 33). Now static up to 8 warps again, dynamic only
# at 16. (1) gpu_check_gemm_lab and gpu_check_mc_forward on the new build; (2) bench e2e bf16
# K = 16: old (600c0ad), mid (call 5's build) and new in turn, three rounds per fixture; (3) the
# same-call ratio against transformers, new build.
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=230
. scripts/device_call_lib.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
timeout 110 $B/gpu_check_gemm_lab > "$W/gemm-lab.txt" 2>&1; stamp "gemm lab rc=$? $(tail -n 1 "$W/gemm-lab.txt")"
timeout 30 $B/gpu_check_mc_forward tests/fixtures 64 > "$W/forward.txt" 2>&1; stamp "forward rc=$? $(tail -n 1 "$W/forward.txt")"
pack
for rep in 1 2 3; do
  for m in nemotronh-m2-tiny qwen35-gdn-tiny; do
    e2e_fixture .devrun/old/replayssm $m old-$m-$rep
    e2e_fixture .devrun/mid/replayssm $m mid-$m-$rep
    e2e_fixture $B/replayssm $m new-$m-$rep
  done
done
pack
for m in nemotronh-m2-tiny qwen35-gdn-tiny; do
  [ "$(left)" -gt 25 ] || { stamp "skip $m"; continue; }
  e2e_fixture $B/replayssm $m hf-$m "$W/hf_$m.json"
done
pack
