#!/usr/bin/env bash
# Session 30, call 2 (issue 18; prepared, not run: no machine was lent). The tensor-core GEMM as
# RSSM_GEMM_BF16=auto uses it (the fixture models by mc_gemm_mma_for_model, on the batch's RT
# token rows instead of the padded Rpad = 64) against cuBLAS (RSSM_GEMM_BF16=cublas): `bench
# e2e` bf16 K = 16 on both fixture models, alternating, twice, transformers' decode after each
# auto run (its timing is host-bound and moved 10.0 -> 15.5 ms between sessions 29 and 30);
# gpu_check_mc_forward with auto (its bf16 fixtures then take the tensor-core kernel: check 8);
# Nsight Compute's per-kernel durations of two steps of each fixture model if time allows.
# Carry .devrun.txz (replayssm, gpu_check_mc_forward); trim keeping results/h200-2026-12-07-s30,
# tests/fixtures and data/models/*/model.safetensors. ~150 s.
set -u
cd "$(dirname "$0")/../../.."
: "${OUT:?set OUT}"
T0=$(date +%s); LIMIT=${CALL_LIMIT:-200}
left() { echo $((LIMIT - ($(date +%s) - T0))); }
stamp() { echo "[$(($(date +%s) - T0)) s] $*"; }
tar -xJf .devrun.txz || { echo "cannot unpack the bundle"; exit 2; }
export LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64
B=.devrun/bin
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
for rep in 1 2; do
  [ $rep = 1 ] || [ "$(left)" -gt 100 ] || { stamp "rep 2 skipped"; break; }
  for m in qwen35-gdn-tiny nemotronh-m2-tiny; do
    for k in auto cublas; do
      HF=(); [ $k = auto ] && HF=(--transformers python3)
      [ $k = auto ] && [ $rep = 1 ] && HF+=(--transformers-json "$OUT/hf_$m.json")
      RSSM_GEMM_BF16=$k timeout 90 $B/replayssm bench e2e \
        --model data/models/$m --streams 16 --steps 64 --warmup 8 --gemm bf16 \
        --configs 'conventional state=fp32' --label $m-$k "${HF[@]}" --out "$OUT/e2e.csv" \
        >> "$OUT/e2e.log" 2>&1
      stamp "e2e $m $k rc=$? $(tail -n 1 "$OUT/e2e.csv" | cut -d, -f11,26,27)"
    done
  done
done
RSSM_GEMM_BF16=auto timeout 90 $B/gpu_check_mc_forward tests/fixtures 64 > "$OUT/forward.txt" 2>&1
stamp "forward (auto: mma for the bf16 fixtures) rc=$?"; grep -E "^bf16|ok:|FAIL" "$OUT/forward.txt" | tail -8
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for m in qwen35-gdn-tiny:1140:200 nemotronh-m2-tiny:780:140; do
  IFS=: read -r name skip count <<< "$m"
  [ "$(left)" -gt 40 ] || break
  RSSM_GEMM_BF16=auto timeout $(( $(left) - 10 )) "$NCU" --metrics gpu__time_duration.sum --csv --launch-skip $skip \
    --launch-count $count $B/replayssm bench e2e --model data/models/$name --streams 16 \
    --steps 8 --warmup 8 --block 8 --gemm bf16 --graph off --configs 'conventional state=fp32' \
    > "$OUT/ncu-$name.csv" 2>> "$OUT/e2e.log"
  stamp "ncu $name rc=$? $(grep -c gpu__time_duration "$OUT/ncu-$name.csv") kernels"
done
