#!/usr/bin/env bash
# Session 34, call 2 (issue 18): where the Mamba-2 fixture's 0.144 ms step goes, from the step
# time of random-weight models at its shape with only one kind of block (4 and 8 SSM blocks, 4 and
# 8 MLP blocks, 2 and 6 attention blocks: the difference of each pair is the graph's time of that
# many blocks of the kind, the rest the head and the step's I/O), each twice; the fixture itself
# and its random-weight twin (m2-full) for the link; one --profile run (per-block events, no
# graph). Bundle: session 34 call 1's (600c0ad). ~120 s.
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=200
. scripts/device_call_lib.sh
S=results/h200-2026-12-07-s34/call2/shapes
[ -d $S ] || python3 results/h200-2026-12-07-s34/call2/make_shapes.py
one() { # LABEL ARGS...
  local l=$1; shift
  timeout 40 $B/replayssm bench e2e "$@" --streams 16 --steps 64 --warmup 8 --gemm bf16 \
    --micro off --configs 'conventional state=fp32' --label "$l" --out "$W/e2e.csv" >> "$W/e2e.log" 2>&1
  stamp "e2e $l rc=$? $(tail -n 1 "$W/e2e.csv" | cut -d, -f11)"
}
for rep in 1 2; do
  one fixture-$rep --model data/models/nemotronh-m2-tiny
  for v in m2-full m2-ssm4 m2-ssm8 m2-mlp4 m2-mlp8 m2-attn2 m2-attn6; do one $v-$rep --shape $S/$v; done
  pack
done
timeout 40 $B/replayssm bench e2e --model data/models/nemotronh-m2-tiny --streams 16 --steps 64 \
  --warmup 8 --gemm bf16 --configs 'conventional state=fp32' --profile on > "$W/profile.txt" 2>&1
stamp "profile rc=$?"
pack
