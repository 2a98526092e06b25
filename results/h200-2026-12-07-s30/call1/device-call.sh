#!/usr/bin/env bash
# Session 30, call 1 (issue 18): the tensor-core bf16 GEMM (src/model_cuda/mc_gemm_mma.h) against
# cuBLAS. (1) `bench gemm` bf16: cublas, mma4, mma8 checked against fp64 and timed on every
# distinct GEMM of the fixture models and the 4B shapes at 16 and 64 rows; (2) `bench e2e` bf16
# with RSSM_GEMM_BF16=cublas / mma alternating: fixtures at K = 16 (transformers' decode once,
# in the same call), then the 4B shapes at K = 64;
# (3) gpu_check_mc_forward with RSSM_GEMM_BF16=mma (check 8: bf16 GEMMs within their bound);
# (4) gpu_check_gemm_lab (every variant, every shape and row count); (5) the launch lab and
# Nsight Compute's per-kernel durations of two fixture steps, as time allows.
# Carry .devrun.txz (replayssm, gpu_check_gemm_lab, gpu_check_mc_forward, gpu_launch_lab); trim
# keeping results/h200-2026-12-07-s30, tests/fixtures and data/models/*/model.safetensors.
set -u
cd "$(dirname "$0")/../../.."
: "${OUT:?set OUT}"
T0=$(date +%s); LIMIT=${CALL_LIMIT:-540}
left() { echo $((LIMIT - ($(date +%s) - T0))); }
stamp() { echo "[$(($(date +%s) - T0)) s] $*"; }
tar -xJf .devrun.txz || { echo "cannot unpack the bundle"; exit 2; }
export LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64
B=.devrun/bin
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"

timeout 150 $B/replayssm bench gemm --prec bf16 --variants cublas,mma4,mma8 --rows 16,64 \
  > "$OUT/bench-gemm.txt" 2>&1
stamp "bench gemm rc=$?"; grep -E "FAIL|best|step in graph|PASS|mma.*(not|FAIL)" "$OUT/bench-gemm.txt" | head -60

for rep in 1 2; do
  for m in qwen35-gdn-tiny nemotronh-m2-tiny; do
    for k in cublas mma; do
      HF=(); [ $rep = 1 ] && [ $k = mma ] && HF=(--transformers python3 --transformers-json "$OUT/hf_$m.json")
      RSSM_GEMM_BF16=$k timeout 90 $B/replayssm bench e2e --model data/models/$m --streams 16 \
        --steps 64 --warmup 8 --gemm bf16 --configs 'conventional state=fp32' --label $m-$k \
        "${HF[@]}" --out "$OUT/e2e.csv" >> "$OUT/e2e.log" 2>&1
      stamp "e2e $m $k rc=$? $(tail -n 1 "$OUT/e2e.csv" | cut -d, -f11)"
    done
  done
done
for s in qwen3.5-4b nemotron-3-nano-4b; do
  for k in cublas mma; do
    [ "$(left)" -gt 200 ] || { stamp "skip $s $k"; continue; }
    RSSM_GEMM_BF16=$k timeout 100 $B/replayssm bench e2e --shape $s --streams 64 --steps 32 \
      --warmup 4 --gemm bf16 --micro off --configs 'conventional state=fp32' --label $s-$k \
      --out "$OUT/e2e.csv" >> "$OUT/e2e.log" 2>&1
    stamp "e2e $s $k rc=$? $(tail -n 1 "$OUT/e2e.csv" | cut -d, -f11,20)"
  done
done

RSSM_GEMM_BF16=mma timeout 90 $B/gpu_check_mc_forward tests/fixtures 64 > "$OUT/forward-mma.txt" 2>&1
stamp "forward (mma) rc=$?"; grep -iE "check 8|bf16|fail|ok:" "$OUT/forward-mma.txt" | tail -12

if [ "$(left)" -gt 170 ]; then
  timeout 150 $B/gpu_check_gemm_lab > "$OUT/gemm-lab-check.txt" 2>&1
  stamp "gemm lab check rc=$?"; grep -E "FAIL|mma" "$OUT/gemm-lab-check.txt" | head -30; tail -1 "$OUT/gemm-lab-check.txt"
fi
if [ "$(left)" -gt 60 ]; then
  timeout 40 $B/gpu_launch_lab 200 > "$OUT/launch-lab.txt" 2>&1
  stamp "launch lab rc=$?"; cat "$OUT/launch-lab.txt"
fi
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for m in nemotronh-m2-tiny:780:140 qwen35-gdn-tiny:1140:200; do
  IFS=: read -r name skip count <<< "$m"
  [ "$(left)" -gt 50 ] || break
  RSSM_GEMM_BF16=mma timeout $(( $(left) - 15 )) "$NCU" --metrics gpu__time_duration.sum --csv \
    --launch-skip "$skip" --launch-count "$count" $B/replayssm bench e2e --model "data/models/$name" \
    --streams 16 --steps 8 --warmup 8 --block 8 --gemm bf16 --graph off \
    --configs 'conventional state=fp32' >> "$OUT/ncu.csv" 2>> "$OUT/e2e.log"
  stamp "ncu $name rc=$?"
done
