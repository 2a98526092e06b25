#!/usr/bin/env bash
# Session 31, call 1 (issue 18): session 30's call 2 (prepared, never lent a machine) with the
# tensor-core GEMM now loading its first round of W before its PDL wait (cuda_pdl.h) and, for
# an MLP's input projection, applying the activation in the same launch (mc_gemm_mma_act), plus
# the lab and the 4B shapes:
# (1) gpu_check_gemm_lab (every variant, shape and row count against fp64 and its bound;
#     mc_gemm_mma_act bit for bit against mc_gemm_mma + mc_swiglu_bf16 / mc_relu2_bf16);
# (2) `bench gemm` bf16 cublas / mma4 / mma8 at 16 rows: the step-in-graph figures against
#     session 30's (H100: qwen-tiny cublas 162.9 / mma8 95.0 us, nemo-tiny 102.4 / 74.8);
# (3) `bench e2e` bf16 K = 16 on both fixtures, RSSM_GEMM_BF16=auto (the tensor-core kernel on
#     the batch's RT token rows) against cublas, alternating, twice, transformers' decode after
#     each auto run of the first round (its timing is host-bound and moved 10.0 -> 15.5 ms
#     between sessions 29 and 30);
# (4) gpu_check_mc_forward with auto (check 8: the bf16 fixtures on the tensor-core kernel);
# (5) the 4B shapes at K = 64 (bf16, cuBLAS by the same rule) for the bar's 0.70 of the limit;
# (6) Nsight Compute's per-kernel durations of two steps of each fixture model (auto), as time
#     allows.
# Everything is written under /tmp/w and packed into $OUT/call.tgz after each stage (the device
# returns at most 8 files); e2e.csv also goes to $OUT. Carry .devrun.txz (replayssm,
# gpu_check_mc_forward, gpu_check_gemm_lab); trim keeping results/h200-2026-12-07-s31,
# tests/fixtures and data/models/*/model.safetensors. ~250 s.
set -u
cd "$(dirname "$0")/../../.."
: "${OUT:?set OUT}"
T0=$(date +%s); LIMIT=${CALL_LIMIT:-300}
left() { echo $((LIMIT - ($(date +%s) - T0))); }
stamp() { echo "[$(($(date +%s) - T0)) s] $*" | tee -a "$W/stamps.txt"; }
W=/tmp/w; rm -rf "$W"; mkdir -p "$W"
pack() { tar czf "$OUT/call.tgz" -C "$W" . ; cp "$W/e2e.csv" "$OUT/" 2>/dev/null; }
tar -xJf .devrun.txz || { echo "cannot unpack the bundle"; exit 2; }
export LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64
B=.devrun/bin
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$W/gpu.txt"

timeout 150 $B/gpu_check_gemm_lab > "$W/gemm-lab-check.txt" 2>&1
stamp "gemm lab check rc=$?"; grep -E "FAIL|^act" "$W/gemm-lab-check.txt" | head -24; tail -1 "$W/gemm-lab-check.txt"
timeout 100 $B/replayssm bench gemm --prec bf16 --variants cublas,mma4,mma8 --rows 16 \
  --shape qwen-tiny,nemo-tiny > "$W/bench-gemm.txt" 2>&1
stamp "bench gemm rc=$?"; grep -E "FAIL|best|step in graph" "$W/bench-gemm.txt" | head -20
pack

for rep in 1 2; do
  [ $rep = 1 ] || [ "$(left)" -gt 170 ] || { stamp "rep 2 skipped"; break; }
  for m in qwen35-gdn-tiny nemotronh-m2-tiny; do
    for k in auto cublas; do
      HF=(); [ $k = auto ] && [ $rep = 1 ] && HF=(--transformers python3 --transformers-json "$W/hf_$m.json")
      RSSM_GEMM_BF16=$k timeout 90 $B/replayssm bench e2e \
        --model data/models/$m --streams 16 --steps 64 --warmup 8 --gemm bf16 \
        --configs 'conventional state=fp32' --label $m-$k "${HF[@]}" --out "$W/e2e.csv" \
        >> "$W/e2e.log" 2>&1
      stamp "e2e $m $k rc=$? $(tail -n 1 "$W/e2e.csv" | cut -d, -f11,26,27)"
    done
  done
  pack
done
RSSM_GEMM_BF16=auto timeout 90 $B/gpu_check_mc_forward tests/fixtures 64 > "$W/forward.txt" 2>&1
stamp "forward (auto: mma for the bf16 fixtures) rc=$?"; grep -E "^bf16|ok:|FAIL" "$W/forward.txt" | tail -8
pack
for s in qwen3.5-4b nemotron-3-nano-4b; do
  [ "$(left)" -gt 90 ] || { stamp "skip $s"; continue; }
  timeout 100 $B/replayssm bench e2e --shape $s --streams 64 --steps 32 --warmup 4 --gemm bf16 \
    --micro off --configs 'conventional state=fp32' --label $s --out "$W/e2e.csv" >> "$W/e2e.log" 2>&1
  stamp "e2e $s rc=$? $(tail -n 1 "$W/e2e.csv" | cut -d, -f11,20)"
done
pack
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for m in qwen35-gdn-tiny:1140:200 nemotronh-m2-tiny:780:140; do
  IFS=: read -r name skip count <<< "$m"
  [ "$(left)" -gt 40 ] || break
  RSSM_GEMM_BF16=auto timeout $(( $(left) - 10 )) "$NCU" --metrics gpu__time_duration.sum --csv --launch-skip $skip \
    --launch-count $count $B/replayssm bench e2e --model data/models/$name --streams 16 \
    --steps 8 --warmup 8 --block 8 --gemm bf16 --graph off --configs 'conventional state=fp32' \
    > "$W/ncu-$name.csv" 2>> "$W/e2e.log"
  stamp "ncu $name rc=$? $(grep -c gpu__time_duration "$W/ncu-$name.csv") kernels"
  pack
done
