#!/usr/bin/env bash
# Session 33, call 10 (issue 18): two changes meant to keep the bits, from call 9's map, in three
# builds:
#   old  .devrun/old: 9e2b5b4 (the src of main at this call)
#   A    .devrun/A:   mat4_kernel loads its first batch of state rows before staging the records
#                     (the fused step's ring stores had held the row loads back)
#   B    .devrun/bin: A, and rmsnorm_group loads the thread's first 4 weights before its barriers
# (1) gpu_check_ssm 0.5 conventional (A; fused and unfused) and 0.25 replay (A: mat4's flushes),
#     bit for bit against the CPU; gpu_check_mc_kernels old and B (outputs compared);
#     gpu_check_mc_forward old, A, B (reports compared);
# (2) bench e2e bf16 K = 16 on both fixtures, old / A / B in turn, twice; transformers after the
#     first B run of each.
# Carry .devrun.txz; trim keeping results/h200-2026-12-07-s33, tests/fixtures and
# data/models/*/model.safetensors. ~150 s.
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=200
. scripts/device_call_lib.sh # W, B, left, stamp, pack; the bundle unpacked
declare -A DIR=([old]=.devrun/old [A]=.devrun/A [B]=$B)
timeout 60 ${DIR[A]}/gpu_check_ssm 0.5 conventional > "$W/ssm-A-conv.txt" 2>&1
stamp "ssm A conventional rc=$? $(tail -n 1 "$W/ssm-A-conv.txt")"
RSSM_FUSED_STEP=0 timeout 60 ${DIR[A]}/gpu_check_ssm 0.5 conventional > "$W/ssm-A-conv-unfused.txt" 2>&1
stamp "ssm A conventional unfused rc=$? $(tail -n 1 "$W/ssm-A-conv-unfused.txt")"
timeout 70 ${DIR[A]}/gpu_check_ssm 0.25 replay > "$W/ssm-A-replay.txt" 2>&1
stamp "ssm A replay rc=$? $(tail -n 1 "$W/ssm-A-replay.txt")"
for v in old B; do
  timeout 60 ${DIR[$v]}/gpu_check_mc_kernels > "$W/kernels-$v.txt" 2>&1
  stamp "mc kernels ($v) rc=$? $(tail -n 1 "$W/kernels-$v.txt")"
done
stamp "kernels old vs B: $(diff "$W/kernels-old.txt" "$W/kernels-B.txt" | grep -c '^[<>]') differing lines"
for v in old A B; do
  timeout 60 ${DIR[$v]}/gpu_check_mc_forward tests/fixtures 64 > "$W/forward-$v.txt" 2>&1
  stamp "forward ($v) rc=$? $(tail -n 1 "$W/forward-$v.txt")"
done
stamp "forward old vs A: $(diff "$W/forward-old.txt" "$W/forward-A.txt" | grep -c '^[<>]'), old vs B: $(diff "$W/forward-old.txt" "$W/forward-B.txt" | grep -c '^[<>]') differing lines"
pack
for rep in 1 2; do
  for m in qwen35-gdn-tiny nemotronh-m2-tiny; do
    for v in old A B; do
      [ "$(left)" -gt 20 ] || { stamp "skip $m $v"; continue; }
      HF=(); [ $v = B ] && [ $rep = 1 ] && HF=(--transformers python3 --transformers-json "$W/hf_$m.json")
      timeout 60 ${DIR[$v]}/replayssm bench e2e --model data/models/$m --streams 16 --steps 64 \
        --warmup 8 --gemm bf16 --configs 'conventional state=fp32' --label $m-$v "${HF[@]}" \
        --out "$W/e2e.csv" >> "$W/e2e.log" 2>&1
      stamp "e2e $m $v rc=$? $(tail -n 1 "$W/e2e.csv" | cut -d, -f11,26,27)"
    done
  done
  pack
done
