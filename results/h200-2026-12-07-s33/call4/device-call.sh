#!/usr/bin/env bash
# Session 33, call 4 (issue 18): the default step (staged norms, fused SSM step) as call 3 built it.
# (1) bench e2e bf16 K = 16 on both fixtures, twice, transformers after the first run of each
#     (a second same-call ratio for the 40x bar: transformers' step has moved 9.7-19 ms between
#     calls);
# (2) the 4B shapes at K = 64 with the bf16 GEMMs on cuBLAS (the default for weights over 64 MiB)
#     and on the tensor-core kernel (RSSM_GEMM_BF16=mma), alternating, twice: whether the kernel
#     that won on the fixtures moves the 4B bar (0.70 of the byte limit).
# Carry .devrun.txz; trim keeping results/h200-2026-12-07-s33 and data/models/*/model.safetensors.
# ~150 s (CALL_LIMIT caps it).
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=170
. scripts/device_call_lib.sh # W, B, left, stamp, pack; the bundle unpacked
for rep in 1 2; do
  for m in qwen35-gdn-tiny nemotronh-m2-tiny; do
    [ "$(left)" -gt 40 ] || { stamp "skip $m"; continue; }
    HF=(); [ $rep = 1 ] && HF=(--transformers python3 --transformers-json "$W/hf_$m.json")
    timeout 90 $B/replayssm bench e2e --model data/models/$m --streams 16 --steps 64 --warmup 8 \
      --gemm bf16 --configs 'conventional state=fp32' --label $m-default "${HF[@]}" \
      --out "$W/e2e.csv" >> "$W/e2e.log" 2>&1
    stamp "e2e $m rc=$? $(tail -n 1 "$W/e2e.csv" | cut -d, -f11,26,27)"
  done
done
pack
for rep in 1 2; do
  for s in qwen3.5-4b nemotron-3-nano-4b; do
    for g in cublas mma; do
      [ "$(left)" -gt 15 ] || { stamp "skip $s $g"; continue; }
      RSSM_GEMM_BF16=$g timeout 25 $B/replayssm bench e2e --shape $s --streams 64 --steps 32 \
        --warmup 4 --gemm bf16 --micro off --configs 'conventional state=fp32' --label $s-$g \
        --out "$W/e2e.csv" >> "$W/e2e.log" 2>&1
      stamp "e2e $s $g rc=$? $(tail -n 1 "$W/e2e.csv" | cut -d, -f11,20)"
    done
  done
  pack
done
