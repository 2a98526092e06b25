#!/usr/bin/env bash
# Session 32, call 1 (issue 18), A/B against session 31's build (8a3ea6c, "base") in one call:
# - the norms staged in shared memory (norm_stage_bytes: every thread copies its elements, then
#   rmsnorm_group's 8 lanes sum from shared memory; gdn_conv_prep's key heads likewise) and the
#   embedding copied by the first norm (mc_embed_rmsnorm): RSSM_NORM_IN_GEMM=0 ("staged");
# - each block's input norm done by its input projection (mc_gemm_mma_norm, the default with the
#   tensor-core kernel: "fused"): one launch less per block and for the final norm.
# (1) gpu_check_mc_kernels (the staged kernels and mc_embed_rmsnorm against the CPU, bit for
#     bit), gpu_check_gemm_lab (mc_gemm_mma_norm bit for bit against the launches it replaces),
#     gpu_check_mc_forward tests/fixtures 64 fused and staged;
# (2) `bench e2e` bf16 K = 16 on both fixtures, fused / staged / base, alternating, twice;
#     transformers' decode after the first round's fused runs: the same-call ratio;
# (3) the 4B shapes at K = 64 (bf16) for the bar's 0.70 of the byte limit;
# (4) Nsight Systems' per-kernel durations inside the step's graph (--cuda-graph-trace=node).
# Outputs under /tmp/w, packed into $OUT/call.tgz after each stage. Carry .devrun.txz
# (replayssm, replayssm-base, gpu_check_mc_kernels, gpu_check_mc_forward, gpu_check_gemm_lab);
# trim keeping results/h200-2026-12-07-s32, tests/fixtures and data/models/*/model.safetensors.
# ~170 s.
set -u
cd "$(dirname "$0")/../../.."
: "${OUT:?set OUT}"
T0=$(date +%s); LIMIT=${CALL_LIMIT:-240}
left() { echo $((LIMIT - ($(date +%s) - T0))); }
W=/tmp/w; rm -rf "$W"; mkdir -p "$W"
stamp() { echo "[$(($(date +%s) - T0)) s] $*" | tee -a "$W/stamps.txt"; }
pack() { tar czf "$OUT/call.tgz" -C "$W" . ; cp "$W/e2e.csv" "$OUT/" 2>/dev/null; }
tar -xJf .devrun.txz || { echo "cannot unpack the bundle"; exit 2; }
export LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64
B=.devrun/bin
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$W/gpu.txt"

timeout 60 $B/gpu_check_mc_kernels > "$W/kernels-check.txt" 2>&1
stamp "mc kernels check rc=$? ($(grep -c FAIL "$W/kernels-check.txt") FAIL lines)"; grep FAIL "$W/kernels-check.txt" | head -5; tail -1 "$W/kernels-check.txt"
timeout 60 $B/gpu_check_gemm_lab > "$W/gemm-lab-check.txt" 2>&1
stamp "gemm lab check rc=$? ($(grep -c FAIL "$W/gemm-lab-check.txt") FAIL lines)"; grep FAIL "$W/gemm-lab-check.txt" | head -5; tail -1 "$W/gemm-lab-check.txt"
timeout 60 $B/gpu_check_mc_forward tests/fixtures 64 > "$W/forward.txt" 2>&1
stamp "forward (fused) rc=$?"; grep -E "FAIL|failing" "$W/forward.txt" | head -4; tail -1 "$W/forward.txt"
RSSM_NORM_IN_GEMM=0 timeout 60 $B/gpu_check_mc_forward tests/fixtures 64 > "$W/forward-staged.txt" 2>&1
stamp "forward (staged) rc=$?"; tail -1 "$W/forward-staged.txt"
pack
for rep in 1 2; do
  for m in qwen35-gdn-tiny nemotronh-m2-tiny; do
    for k in fused staged base; do
      [ "$(left)" -gt 40 ] || { stamp "skip $m $k"; continue; }
      X=$B/replayssm; [ $k = base ] && X=$B/replayssm-base
      NIG=1; [ $k = staged ] && NIG=0
      HF=(); [ $k = fused ] && [ $rep = 1 ] && HF=(--transformers python3 --transformers-json "$W/hf_$m.json")
      RSSM_NORM_IN_GEMM=$NIG timeout 90 $X bench e2e --model data/models/$m --streams 16 --steps 64 --warmup 8 --gemm bf16 \
        --configs 'conventional state=fp32' --label $m-$k "${HF[@]}" --out "$W/e2e.csv" \
        >> "$W/e2e.log" 2>&1
      stamp "e2e $m $k rc=$? $(tail -n 1 "$W/e2e.csv" | cut -d, -f11,26,27)"
    done
  done
  pack
done
for s in qwen3.5-4b nemotron-3-nano-4b; do
  [ "$(left)" -gt 70 ] || { stamp "skip $s"; continue; }
  timeout 60 $B/replayssm bench e2e --shape $s --streams 64 --steps 32 --warmup 4 --gemm bf16 \
    --micro off --configs 'conventional state=fp32' --label $s --out "$W/e2e.csv" >> "$W/e2e.log" 2>&1
  stamp "e2e $s rc=$? $(tail -n 1 "$W/e2e.csv" | cut -d, -f11,20)"
done
pack
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
for m in nemotronh-m2-tiny qwen35-gdn-tiny; do
  [ -n "$NSYS" ] && [ "$(left)" -gt 40 ] || { stamp "nsys skipped ($NSYS)"; break; }
  timeout 40 "$NSYS" profile -o "$W/nsys-$m" --force-overwrite true --trace cuda \
    --cuda-graph-trace node $B/replayssm bench e2e --model data/models/$m --streams 16 \
    --steps 32 --warmup 8 --gemm bf16 --micro off --configs 'conventional state=fp32' \
    --label nsys --out "$W/nsys-e2e.csv" >> "$W/nsys.log" 2>&1
  stamp "nsys $m rc=$?"
  timeout 30 "$NSYS" stats --report cuda_gpu_kern_sum --format csv -o "$W/nsys-$m" \
    "$W/nsys-$m.nsys-rep" >> "$W/nsys.log" 2>&1
  timeout 30 "$NSYS" stats --report cuda_gpu_trace --format csv -o "$W/nsys-$m" \
    "$W/nsys-$m.nsys-rep" >> "$W/nsys.log" 2>&1
  rm -f "$W/nsys-$m.nsys-rep" "$W/nsys-$m.sqlite"
  stamp "nsys stats $m rc=$? $(ls "$W" | grep -c "nsys-$m")"
  pack
done
