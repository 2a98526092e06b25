#!/usr/bin/env bash
# Session 33, call 8 (issue 18): the norm kernels (rmsnorm_group's scaling loop, stage_group,
# add_rmsnorm's residual loop, mamba2_gate_norm's gate loop) load LOAD_AHEAD elements a thread
# before storing any (a store through a pointer that may alias the next source had kept each load
# behind the previous store: a chain of L2 round trips), and mamba2_conv_prep loads the head's
# step size before the conv's window stores. Meant to give the same bits.
#   old  .devrun/old: 8276935 (the X-load grouping of call 6)
#   new  .devrun/bin: the change
# (1) gpu_check_mc_kernels new (every norm and fused kernel bit for bit against the CPU) and old,
#     their outputs compared; gpu_check_mc_forward new and old, their reports compared;
# (2) bench e2e bf16 K = 16 on both fixtures, new / old alternating, twice; transformers after
#     the first new run of each.
# Carry .devrun.txz; trim keeping results/h200-2026-12-07-s33, tests/fixtures and
# data/models/*/model.safetensors. ~110 s.
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=160
. scripts/device_call_lib.sh # W, B, left, stamp, pack; the bundle unpacked
O=.devrun/old
for v in new old; do
  bin=$B; [ $v = old ] && bin=$O
  timeout 60 $bin/gpu_check_mc_kernels > "$W/kernels-$v.txt" 2>&1
  stamp "mc kernels ($v) rc=$? $(tail -n 1 "$W/kernels-$v.txt")"
  timeout 60 $bin/gpu_check_mc_forward tests/fixtures 64 > "$W/forward-$v.txt" 2>&1
  stamp "forward ($v) rc=$? $(tail -n 1 "$W/forward-$v.txt")"
done
stamp "kernels old vs new: $(diff "$W/kernels-old.txt" "$W/kernels-new.txt" | grep -c '^[<>]') differing lines; forward: $(diff "$W/forward-old.txt" "$W/forward-new.txt" | grep -c '^[<>]') differing lines"
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
