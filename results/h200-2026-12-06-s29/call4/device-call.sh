#!/usr/bin/env bash
# Session 29, call 4 (issue 18): where a fixture step's time goes, per kernel. Nsight Compute
# (one metric, gpu__time_duration, so one pass a kernel) over two steady-state steps of each
# fixture model, bf16 GEMMs, K = 16, launched kernel by kernel (--graph off: the kernels'
# durations, not the gaps between them); first the launch lab again (its rowdot rewritten with
# register accumulators after call 1: is a warp-per-row GEMM faster than cuBLAS's ~3 us in a
# graph?). Carry .devrun.txz (the full bundle: gpu_launch_lab) and nothing else; trim keeping
# data/models/*/model.safetensors.
set -u
cd "$(dirname "$0")/../../.."
: "${OUT:?set OUT}"
tar -xJf .devrun.txz || { echo "cannot unpack the bundle"; exit 2; }
export LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 60 .devrun/bin/gpu_launch_lab 200 > "$OUT/launch-lab.txt" 2>&1
echo "gpu_launch_lab rc=$?"; cat "$OUT/launch-lab.txt"
# launches per step: ~65 (nemotronh-m2-tiny), ~95 (qwen35-gdn-tiny); skip the first 12 steps
for m in nemotronh-m2-tiny:780:140 qwen35-gdn-tiny:1140:200; do
  IFS=: read -r name skip count <<< "$m"
  timeout 120 "$NCU" --metrics gpu__time_duration.sum --csv --launch-skip "$skip" \
    --launch-count "$count" .devrun/bin/replayssm bench e2e --model "data/models/$name" \
    --streams 16 --steps 8 --warmup 8 --block 8 --gemm bf16 --graph off \
    --configs 'conventional state=fp32' > "$OUT/ncu-$name.csv" 2> "$OUT/ncu-$name.err"
  echo "$name rc=$? $(grep -c gpu__time_duration "$OUT/ncu-$name.csv") kernels"
done
