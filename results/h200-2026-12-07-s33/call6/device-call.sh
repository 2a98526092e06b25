#!/usr/bin/env bash
# Session 33, call 6 (issue 18): the tensor-core GEMM loads X for several k-steps and tiles
# before one __syncwarp (the synchronisation per step and tile had made the X loads a chain of L2
# round trips); meant to give the same bits.
#   old  .devrun/old: 15c9009 (the lab's bits fingerprints, the kernel as before)
#   new  .devrun/bin: the change
# (1) gpu_check_gemm_lab old and new: every line the same text (each case prints the FNV-1a of
#     its output bits), and the new one passes; gpu_check_mc_forward (new);
# (2) bench e2e bf16 K = 16 on both fixtures, old and new alternating, twice; transformers after
#     the first new run of each.
# Carry .devrun.txz; trim keeping results/h200-2026-12-07-s33, tests/fixtures and
# data/models/*/model.safetensors. ~150 s (CALL_LIMIT caps it).
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=180
. scripts/device_call_lib.sh # W, B, left, stamp, pack; the bundle unpacked
O=.devrun/old
timeout 60 $B/gpu_check_gemm_lab > "$W/gemm-lab-new.txt" 2>&1
stamp "gemm lab (new) rc=$? $(tail -n 1 "$W/gemm-lab-new.txt")"
timeout 60 $O/gpu_check_gemm_lab > "$W/gemm-lab-old.txt" 2>&1
stamp "gemm lab (old) rc=$? $(tail -n 1 "$W/gemm-lab-old.txt")"
stamp "gemm lab old vs new: $(diff "$W/gemm-lab-old.txt" "$W/gemm-lab-new.txt" | grep -c '^[<>]') differing lines of $(wc -l < "$W/gemm-lab-new.txt"); $(grep -c 'bits' "$W/gemm-lab-new.txt") lines with bits"
timeout 60 $B/gpu_check_mc_forward tests/fixtures 64 > "$W/forward.txt" 2>&1
stamp "forward (new) rc=$? $(tail -n 1 "$W/forward.txt")"
pack
for rep in 1 2; do
  for m in qwen35-gdn-tiny nemotronh-m2-tiny; do
    for v in new old; do
      [ "$(left)" -gt 25 ] || { stamp "skip $m $v"; continue; }
      bin=$B/replayssm; [ $v = old ] && bin=$O/replayssm
      HF=(); [ $v = new ] && [ $rep = 1 ] && HF=(--transformers python3 --transformers-json "$W/hf_$m.json")
      timeout 60 $bin bench e2e --model data/models/$m --streams 16 --steps 64 --warmup 8 \
        --gemm bf16 --configs 'conventional state=fp32' --label $m-$v "${HF[@]}" \
        --out "$W/e2e.csv" >> "$W/e2e.log" 2>&1
      stamp "e2e $m $v rc=$? $(tail -n 1 "$W/e2e.csv" | cut -d, -f11,26,27)"
    done
  done
  pack
done
