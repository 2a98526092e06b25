#!/usr/bin/env bash
# Session 31, call 2 (issue 18): mat4_kernel with fewer rows a warp below B = 64
# (mat4_rows_per_warp: at K = 16 a GDN head's 64 rows on 8 warps instead of 2, a Mamba-2 head's
# 32 on 4 instead of 1; the bits must not move):
# (1) gpu_check_ssm 0.5 (half the steps): the CUDA SSM engine at B = 37 (now on the new row split) against B CPU
#     states, every strategy, bit for bit;
# (2) gpu_check_mc_forward tests/fixtures 64 (fp32 logits against the CPU, bf16 check 8);
# (3) `bench e2e` bf16 K = 16 on both fixtures (default kernel choice), twice, against call 1's
#     0.3198 / 0.3221 (GDN) and 0.2021 / 0.2028 ms (M2) on an H100, then transformers once.
# Outputs under /tmp/w, packed into $OUT/call.tgz after each stage. Carry .devrun.txz
# (replayssm, gpu_check_ssm, gpu_check_mc_forward); trim keeping results/h200-2026-12-07-s31,
# tests/fixtures and data/models/*/model.safetensors. ~120 s.
set -u
cd "$(dirname "$0")/../../.."
: "${OUT:?set OUT}"
T0=$(date +%s); LIMIT=${CALL_LIMIT:-200}
left() { echo $((LIMIT - ($(date +%s) - T0))); }
W=/tmp/w; rm -rf "$W"; mkdir -p "$W"
stamp() { echo "[$(($(date +%s) - T0)) s] $*" | tee -a "$W/stamps.txt"; }
pack() { tar czf "$OUT/call.tgz" -C "$W" . ; cp "$W/e2e.csv" "$OUT/" 2>/dev/null; }
tar -xJf .devrun.txz || { echo "cannot unpack the bundle"; exit 2; }
export LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64
B=.devrun/bin
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$W/gpu.txt"

timeout 90 $B/gpu_check_ssm 0.5 > "$W/ssm-check.txt" 2>&1
stamp "gpu_check_ssm rc=$? ($(grep -c FAIL "$W/ssm-check.txt") FAIL lines)"; grep -E "FAIL" "$W/ssm-check.txt" | head -5; tail -2 "$W/ssm-check.txt"
pack
timeout 90 $B/gpu_check_mc_forward tests/fixtures 64 > "$W/forward.txt" 2>&1
stamp "forward rc=$?"; grep -E "FAIL|^ok|failing" "$W/forward.txt" | tail -4
pack
for rep in 1 2; do
  for m in qwen35-gdn-tiny nemotronh-m2-tiny; do
    [ "$(left)" -gt 40 ] || { stamp "skip $m"; continue; }
    HF=(); [ $rep = 2 ] && [ "$(left)" -gt 80 ] && HF=(--transformers python3 --transformers-json "$W/hf_$m.json")
    timeout 90 $B/replayssm bench e2e --model data/models/$m --streams 16 --steps 64 --warmup 8 \
      --gemm bf16 --configs 'conventional state=fp32' --label $m "${HF[@]}" --out "$W/e2e.csv" \
      >> "$W/e2e.log" 2>&1
    stamp "e2e $m rc=$? $(tail -n 1 "$W/e2e.csv" | cut -d, -f11,26,27)"
  done
  pack
done
