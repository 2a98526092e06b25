#!/usr/bin/env bash
# Session 33, call 11 (issue 18): call 10's build B without its mat4 change (A was slower):
# rmsnorm_group loads the thread's first 4 weights before its barriers, alone.
#   old  .devrun/old: 9e2b5b4's src
#   new  .devrun/bin: the change
# gpu_check_mc_kernels and gpu_check_mc_forward (new; their text compared with call 10's old
# runs afterwards), then bench e2e bf16 K = 16, old / new in turn, three times each fixture.
# Carry .devrun.txz; trim as call 10. ~60 s.
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=100
. scripts/device_call_lib.sh # W, B, left, stamp, pack; the bundle unpacked
timeout 40 $B/gpu_check_mc_kernels > "$W/kernels-new.txt" 2>&1
stamp "mc kernels (new) rc=$? $(tail -n 1 "$W/kernels-new.txt")"
timeout 40 $B/gpu_check_mc_forward tests/fixtures 64 > "$W/forward-new.txt" 2>&1
stamp "forward (new) rc=$? $(tail -n 1 "$W/forward-new.txt")"
pack
for rep in 1 2 3; do
  for m in qwen35-gdn-tiny nemotronh-m2-tiny; do
    for v in old new; do
      [ "$(left)" -gt 10 ] || { stamp "skip $m $v"; continue; }
      bin=$B/replayssm; [ $v = old ] && bin=.devrun/old/replayssm
      timeout 30 $bin bench e2e --model data/models/$m --streams 16 --steps 64 --warmup 8 \
        --gemm bf16 --configs 'conventional state=fp32' --label $m-$v --out "$W/e2e.csv" \
        >> "$W/e2e.log" 2>&1
      stamp "e2e $m $v rc=$? $(tail -n 1 "$W/e2e.csv" | cut -d, -f11)"
    done
  done
done
pack
