#!/usr/bin/env bash
# Session 33, call 3 (issue 18). Call 2 passed every check in every mode; the staged norms and the
# fused SSM step are now the default, and the in-GEMM norm's prologue was rewritten (every thread
# stages the rows' inputs with 16-byte loads before the sums: the first version cost ~8 us a GEMM).
# Modes (one binary, environment switches):
#   default  staged norms + fused step (no variable set)
#   gemm     the norms inside the tensor-core GEMMs + fused step (RSSM_FUSED_NORMS=1)
#   plain    session 31's step (RSSM_FUSED_NORMS=0 RSSM_FUSED_STEP=0)
# (1) gpu_check_gemm_lab (mc_gemm_mma_norm bit for bit against the launches it replaces),
#     gpu_check_mc_forward in each mode (the same report text), gpu_check_ssm 0.5 conventional
#     unfused (the default is call 2's fused run);
# (2) bench e2e bf16 K = 16 on both fixtures in each mode, twice, transformers after the first
#     round's default run (issue 18's 40x bar in the same call);
# (3) Nsight Compute: each kernel's duration in the Mamba-2 fixture's step (default mode; each
#     kernel alone, so the sizes of the pieces rather than the step's overlap);
# (4) the 4B shapes at K = 64 (default mode) as time allows.
# Carry .devrun.txz (replayssm, gpu_check_mc_forward, gpu_check_gemm_lab, gpu_check_ssm,
# gpu_check_mc_kernels); trim keeping results/h200-2026-12-07-s33, tests/fixtures and
# data/models/*/model.safetensors. ~200 s (CALL_LIMIT caps it).
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=220
. scripts/device_call_lib.sh # W, B, left, stamp, pack; the bundle unpacked
mode_env() {  # the environment of a mode
  case $1 in
    default) echo RSSM_MODE=default ;;
    gemm) echo RSSM_FUSED_NORMS=1 ;;
    plain) echo RSSM_FUSED_NORMS=0 RSSM_FUSED_STEP=0 ;;
  esac
}

timeout 60 $B/gpu_check_gemm_lab > "$W/gemm-lab-check.txt" 2>&1
stamp "gemm lab check rc=$? ($(grep -c FAIL "$W/gemm-lab-check.txt") FAIL lines)"; grep FAIL "$W/gemm-lab-check.txt" | head -5; tail -1 "$W/gemm-lab-check.txt"
for mode in default gemm plain; do
  env $(mode_env $mode) timeout 60 $B/gpu_check_mc_forward tests/fixtures 64 > "$W/forward-$mode.txt" 2>&1
  stamp "forward ($mode) rc=$?"; grep -E "FAIL|failing" "$W/forward-$mode.txt" | head -3
done
for mode in gemm plain; do
  cmp -s "$W/forward-default.txt" "$W/forward-$mode.txt" && r="the same as default" || r="DIFFERS from default"
  stamp "forward report ($mode): $r"
done
RSSM_FUSED_STEP=0 timeout 90 $B/gpu_check_ssm 0.5 conventional > "$W/ssm-check-unfused.txt" 2>&1
stamp "gpu_check_ssm conventional, unfused rc=$? ($(grep -c FAIL "$W/ssm-check-unfused.txt") FAIL lines)"; tail -1 "$W/ssm-check-unfused.txt"
pack
for rep in 1 2; do
  for m in qwen35-gdn-tiny nemotronh-m2-tiny; do
    for mode in default gemm plain; do
      [ "$(left)" -gt 50 ] || { stamp "skip $m $mode"; continue; }
      HF=(); [ $mode = default ] && [ $rep = 1 ] && HF=(--transformers python3 --transformers-json "$W/hf_$m.json")
      env $(mode_env $mode) timeout 90 $B/replayssm bench e2e --model data/models/$m \
        --streams 16 --steps 64 --warmup 8 --gemm bf16 --configs 'conventional state=fp32' \
        --label $m-$mode "${HF[@]}" --out "$W/e2e.csv" >> "$W/e2e.log" 2>&1
      stamp "e2e $m $mode rc=$? $(tail -n 1 "$W/e2e.csv" | cut -d, -f11,26,27)"
    done
  done
  pack
done
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ -n "$NCU" ] && [ "$(left)" -gt 60 ]; then
  timeout $(( $(left) - 30 )) "$NCU" --metrics gpu__time_duration.sum --csv --print-units base -c 300 \
    $B/replayssm bench e2e --model data/models/nemotronh-m2-tiny --streams 16 --steps 4 --warmup 1 \
    --gemm bf16 --micro off --profile off --configs 'conventional state=fp32' --label ncu \
    --out "$W/ncu-e2e.csv" > "$W/ncu-m2.csv" 2> "$W/ncu.log"
  stamp "ncu m2 rc=$? $(grep -c gpu__time_duration "$W/ncu-m2.csv") kernels"
else
  stamp "ncu skipped ($NCU, $(left) s left)"
fi
pack
for s in qwen3.5-4b nemotron-3-nano-4b; do
  [ "$(left)" -gt 25 ] || { stamp "skip $s"; continue; }
  timeout 20 $B/replayssm bench e2e --shape $s --streams 64 \
    --steps 32 --warmup 4 --gemm bf16 --micro off --configs 'conventional state=fp32' \
    --label $s-default --out "$W/e2e.csv" >> "$W/e2e.log" 2>&1
  stamp "e2e $s default rc=$? $(tail -n 1 "$W/e2e.csv" | cut -d, -f11,20)"
done
pack
