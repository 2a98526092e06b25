#!/usr/bin/env bash
# Prepared at the end of session 35 for the next session's first call (issue 18), on the build of
# session 35's last code, which has not run on a GPU: mat4_kernel<4, 4> (the GDN conventional
# step's fused fp32 SSM step, and the Mamba-2 one below 64 rows) may have 16 warps a block, so
# the GDN fixture's head (dv = 64) at K = 16 folds one 4-row batch a warp on 16 warps rather than
# two on 8 (session 35 call 2: the Mamba-2 step's mat4 went from 7.2-9.0 to 4.3-5.3 us of the step with one batch a
# warp; the GDN step's mat4 is 6 x 8.2 us). RSSM_MAT4_WARPS=8 keeps 8 (session 35's 0d189fd
# launches), the A/B switch.
# (1) tests/gpu/gpu_session.sh: every GPU check on this code (230 s: session 35 call 2 ran out at
#     170 with 64 of 73 checks done);
# (2) bench e2e bf16 K = 16 per fixture, three rounds of: .devrun/old/replayssm (0d189fd, if the
#     bundle has it), default, RSSM_MAT4_WARPS=8;
# (3) the 4B shapes (they count for the bar on an H200 only);
# (4) the default's kernel timelines;
# (5) transformers twice per fixture after a default run (the same-call ratio for the 40x bar);
# (6) time left: Nsight Compute on one GDN mat4 launch.
# Build: BUILD_DIR=build bash scripts/setup.sh (a CUDA build), then the bundle as in
# docs/next-session.md, with build/tests/gpu/librssm_kernel_trace.so and the CUDA toolkit's
# libcupti.so.13 in .devrun/lib. Trim keeping results/h200-2026-12-07-s35, tests/fixtures and
# data/models/*/model.safetensors. ~350 s (CALL_LIMIT caps it).
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=360
. scripts/device_call_lib.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
gpu_session_run 230
pack
for rep in 1 2 3; do
  for m in nemotronh-m2-tiny qwen35-gdn-tiny; do
    [ -x .devrun/old/replayssm ] && e2e_fixture .devrun/old/replayssm $m old-$m-$rep
    e2e_fixture $B/replayssm $m default-$m-$rep
    RSSM_MAT4_WARPS=8 e2e_fixture $B/replayssm $m warps8-$m-$rep
  done
done
pack
for s in qwen3.5-4b nemotron-3-nano-4b; do
  [ "$(left)" -gt 60 ] || { stamp "skip $s"; continue; }
  e2e_shape $B/replayssm $s $s
done
pack
for m in nemotronh-m2-tiny qwen35-gdn-tiny; do e2e_trace $B/replayssm $m $m; done
pack
hf_rounds 2 nemotronh-m2-tiny qwen35-gdn-tiny
pack
# (6) if time is left: Nsight Compute's full set for one mat4 launch of the GDN fixture's step
# (its instructions a warp and stalls with 16 warps; session 35 call 1 did the M2 one)
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
if [ -n "$NCU" ] && [ "$(left)" -gt 45 ]; then
  timeout $(( $(left) - 20 )) "$NCU" --set full --import-source no --cache-control none --clock-control none \
    -k regex:mat4_kernel --launch-skip 12 -c 1 -o "$W/mat4" $B/replayssm bench e2e \
    --model data/models/qwen35-gdn-tiny --streams 16 --steps 4 --warmup 1 --gemm bf16 --micro off \
    --profile off --configs 'conventional state=fp32' --label ncu --out "$W/ncu-e2e.csv" \
    > "$W/ncu-mat4.log" 2>&1
  stamp "ncu mat4 rc=$?"
  "$NCU" -i "$W/mat4.ncu-rep" --page details --print-details all > "$W/ncu-mat4-details.txt" 2>>"$W/ncu-mat4.log"
  "$NCU" -i "$W/mat4.ncu-rep" --page source --csv --print-source sass 2>>"$W/ncu-mat4.log" |
    xz -9 > "$W/ncu-mat4-sass.csv.xz"
  rm -f "$W/mat4.ncu-rep"
  pack
fi
