#!/usr/bin/env bash
# Session 35, call 3 (issue 18): the checks call 2's gpu_session.sh did not reach (its 170 s ran
# out): the Mamba-2 fixture's spec run on the CPU and on the GPU and their agreement
# (tests/gpu/gpu_session.sh's loop body for data/models/nemotronh-m2-tiny). Warm machine, ~60 s.
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=100
. scripts/device_call_lib.sh
m=data/models/nemotronh-m2-tiny; f=spec-nemotronh-m2-tiny; ini=$W/$f.ini
cat > "$ini" <<EOT
model = $PWD/$m
tokens = $PWD/$m/tokens.npy
steps = 200
sequences = 2
seed = 5
block = 32
checkpoint_every = 64

[config speccontrol]
spec = spec L=16 T=4 ckpt=fp32 accept=uniform

[config std]
spec = replay L=16 hp=fp32 lp=nvfp4

[config specsplit]
spec = spec L=16 T=8 hp=fp32 lp=nvfp4 accept=geom:0.7

[config conv]
spec = conventional state=fp32
EOT
timeout 60 $B/replayssm run "$ini" --device cuda --out "$W/$f.dev.h5" --quiet; stamp "cuda rc=$?"
timeout 80 $B/replayssm run "$ini" --device cpu --out "$W/$f.cpu.h5" --quiet; stamp "cpu rc=$?"
python3 tests/gpu/compare_runs.py "$W/$f.cpu.h5" "$W/$f.dev.h5" --fp32 speccontrol > "$W/agree.txt" 2>&1
stamp "agree rc=$? $(tail -n 2 "$W/agree.txt" | tr '\n' ' ')"
rm -f "$W"/*.h5
pack
