#!/usr/bin/env bash
# Session 35, call 1 (issue 18): session 34's prepared call (results/h200-2026-12-07-s34/prepared-s35/
# device-call.sh: every GPU check on session 34's last code, the A/B of its switches per fixture,
# the timelines, two same-call ratios per fixture) plus Nsight Compute's full set for one
# launch each of mat4, add_rmsnorm and the Mamba-2 conv + prep in the M2 fixture's step (caches
# warm, clocks free: their stall reasons by SASS line, for the next cut). Carry
# .devrun.txz; trim keeping results/h200-2026-12-07-s34 and data/models/*/model.safetensors.
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=380
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
pack
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ -n "$NCU" ] && [ "$(left)" -gt 50 ]; then
  timeout $(( $(left) - 30 )) "$NCU" --set full --import-source no --cache-control none --clock-control none \
    -k 'regex:mat4_kernel|add_rmsnorm_kernel|mamba2_conv_prep' --launch-skip 24 -c 6 \
    -o "$W/mat4" $B/replayssm bench e2e --model data/models/nemotronh-m2-tiny --streams 16 --steps 4 \
    --warmup 1 --gemm bf16 --micro off --profile off --configs 'conventional state=fp32' --label ncu \
    --out "$W/ncu-e2e.csv" > "$W/ncu-mat4.log" 2>&1
  stamp "ncu mat4 rc=$?"
  "$NCU" -i "$W/mat4.ncu-rep" --page raw --csv > "$W/ncu-mat4-raw.csv" 2>>"$W/ncu-mat4.log"
  "$NCU" -i "$W/mat4.ncu-rep" --page details --print-details all > "$W/ncu-mat4-details.txt" 2>>"$W/ncu-mat4.log"
  "$NCU" -i "$W/mat4.ncu-rep" --page source --csv --print-source sass > "$W/ncu-mat4-sass.csv" 2>>"$W/ncu-mat4.log"
  rm -f "$W/mat4.ncu-rep"
  stamp "ncu mat4 reports $(wc -c < "$W/ncu-mat4-sass.csv") bytes of sass"
else
  stamp "ncu skipped ($NCU, $(left) s left)"
fi
for rep in 1 2; do
  for m in nemotronh-m2-tiny qwen35-gdn-tiny; do
    [ "$(left)" -gt 25 ] || { stamp "skip $m"; continue; }
    e2e_fixture $B/replayssm $m hf-$m-$rep "$W/hf_$m-$rep.json"
  done
done
pack
