#!/usr/bin/env bash
# Session 32, call 1 (issue 18), prepared and never lent a machine (session 32's device time went
# on refused starts). Session 32's changes are opt-in (RSSM_FUSED_NORMS, mc_fused.h;
# RSSM_FUSED_STEP, ssm_cuda_api.cu) until this call passes; one binary runs every mode:
#   plain   the step as in session 31;
#   staged  every norm stages its row in shared memory before rmsnorm_group's 8 ordered lane
#           sums, gdn_conv_prep's key heads likewise, the first norm copies the embedding;
#   gemm    staged, and each block's input norm inside its input projection on the tensor-core
#           GEMM (mc_gemm_mma_norm);
#   all     gemm, and the SSM engine's conventional step in one launch (plan + mat4 + book:
#           step_fuse).
# (1) gpu_check_mc_kernels (every norm kernel plain and staged, mc_embed_rmsnorm: bit for bit
#     against the CPU), gpu_check_gemm_lab (mc_gemm_mma_norm bit for bit against the launches it
#     replaces), gpu_check_ssm 0.5 conventional with the fused step (bit for bit against the CPU
#     engine), gpu_check_mc_forward tests/fixtures 64 in each mode (its report, which has no
#     timings, must be the same text in every mode);
# (2) `bench e2e` bf16 K = 16 on both fixtures in each mode, alternating, twice; transformers'
#     decode after the first round's `all` runs: the same-call ratio (issue 18's 40x bar);
# (3) the 4B shapes at K = 64 (bf16, plain and all) for the bar's 0.70 of the byte limit;
# (4) Nsight Systems' per-kernel durations inside the step's graph (--cuda-graph-trace=node),
#     mode all, as time allows.
# Where every check passes, the next commit makes the passing modes the default. Outputs under
# /tmp/w, packed into $OUT/call.tgz after each stage. Carry .devrun.txz (replayssm,
# gpu_check_mc_kernels, gpu_check_mc_forward, gpu_check_gemm_lab, gpu_check_ssm); trim keeping
# results/h200-2026-12-07-s32, tests/fixtures and data/models/*/model.safetensors.
# ~200 s (CALL_LIMIT caps it).
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=220
. scripts/device_call_lib.sh # W, B, left, stamp, pack; the bundle unpacked
mode_env() {  # the environment of a mode
  case $1 in
    plain) echo RSSM_FUSED_NORMS=0 RSSM_FUSED_STEP=0 ;;
    staged) echo RSSM_FUSED_NORMS=staged RSSM_FUSED_STEP=0 ;;
    gemm) echo RSSM_FUSED_NORMS=1 RSSM_FUSED_STEP=0 ;;
    all) echo RSSM_FUSED_NORMS=1 RSSM_FUSED_STEP=1 ;;
  esac
}

timeout 60 $B/gpu_check_mc_kernels > "$W/kernels-check.txt" 2>&1
stamp "mc kernels check rc=$? ($(grep -c FAIL "$W/kernels-check.txt") FAIL lines)"; grep FAIL "$W/kernels-check.txt" | head -5; tail -1 "$W/kernels-check.txt"
timeout 60 $B/gpu_check_gemm_lab > "$W/gemm-lab-check.txt" 2>&1
stamp "gemm lab check rc=$? ($(grep -c FAIL "$W/gemm-lab-check.txt") FAIL lines)"; grep FAIL "$W/gemm-lab-check.txt" | head -5; tail -1 "$W/gemm-lab-check.txt"
RSSM_FUSED_STEP=1 timeout 90 $B/gpu_check_ssm 0.5 conventional > "$W/ssm-check-fused-step.txt" 2>&1
stamp "gpu_check_ssm conventional, fused step rc=$? ($(grep -c FAIL "$W/ssm-check-fused-step.txt") FAIL lines)"; tail -2 "$W/ssm-check-fused-step.txt"
for mode in all gemm staged plain; do
  env $(mode_env $mode) timeout 60 $B/gpu_check_mc_forward tests/fixtures 64 > "$W/forward-$mode.txt" 2>&1
  stamp "forward ($mode) rc=$?"; grep -E "FAIL|failing" "$W/forward-$mode.txt" | head -3; tail -1 "$W/forward-$mode.txt"
done
# the same bits in every mode print the same report (no timings in it)
for mode in staged gemm all; do
  cmp -s "$W/forward-plain.txt" "$W/forward-$mode.txt" && r="the same as plain" || r="DIFFERS from plain"
  stamp "forward report ($mode): $r"
done
pack
for rep in 1 2; do
  for m in qwen35-gdn-tiny nemotronh-m2-tiny; do
    for mode in all gemm staged plain; do
      [ "$(left)" -gt 40 ] || { stamp "skip $m $mode"; continue; }
      HF=(); [ $mode = all ] && [ $rep = 1 ] && HF=(--transformers python3 --transformers-json "$W/hf_$m.json")
      env $(mode_env $mode) timeout 90 $B/replayssm bench e2e --model data/models/$m \
        --streams 16 --steps 64 --warmup 8 --gemm bf16 --configs 'conventional state=fp32' \
        --label $m-$mode "${HF[@]}" --out "$W/e2e.csv" >> "$W/e2e.log" 2>&1
      stamp "e2e $m $mode rc=$? $(tail -n 1 "$W/e2e.csv" | cut -d, -f11,26,27)"
    done
  done
  pack
done
for s in qwen3.5-4b nemotron-3-nano-4b; do
  for mode in all plain; do
    [ "$(left)" -gt 50 ] || { stamp "skip $s $mode"; continue; }
    env $(mode_env $mode) timeout 60 $B/replayssm bench e2e --shape $s --streams 64 \
      --steps 32 --warmup 4 --gemm bf16 --micro off --configs 'conventional state=fp32' \
      --label $s-$mode --out "$W/e2e.csv" >> "$W/e2e.log" 2>&1
    stamp "e2e $s $mode rc=$? $(tail -n 1 "$W/e2e.csv" | cut -d, -f11,20)"
  done
done
pack
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
for m in nemotronh-m2-tiny qwen35-gdn-tiny; do
  [ -n "$NSYS" ] && [ "$(left)" -gt 40 ] || { stamp "nsys skipped ($NSYS)"; break; }
  env $(mode_env all) timeout 40 "$NSYS" profile -o "$W/nsys-$m" --force-overwrite true --trace cuda \
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
