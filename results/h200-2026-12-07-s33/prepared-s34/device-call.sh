#!/usr/bin/env bash
# Prepared at the end of session 33 for the next session's first call (issue 18), on the build of
# session 33's last code (f0e1bdc: the default step with the tensor-core GEMM's X loads grouped),
# which has not yet been through a whole GPU session:
# (1) tests/gpu/gpu_session.sh: every GPU check (the logs of failed checks kept);
# (2) bench e2e bf16 K = 16 on both fixtures, twice, each followed by transformers (same-call
#     ratios for the 40x bar);
# (3) the 4B shapes at K = 64 (bf16, cuBLAS): the bar is 0.70 of the byte limit on an H200, so
#     the figure counts only if gpu.txt names one;
# (4) gpu_launch_lab: us a kernel of a PDL chain in a graph against us a phase of one cooperative
#     kernel with grid.sync between phases (case 4, new and not yet run): whether a persistent
#     step kernel would beat the ~3 us a kernel the fixture steps pay now.
# Build: BUILD_DIR=build bash scripts/setup.sh (a CUDA build), then the bundle as in
# docs/next-session.md (replayssm, every gpu_check_*, gpu_golden_bytes, gpu_launch_lab, the libraries the machine
# lacks; `tar -I 'xz -T2 -9'`: the -9 dictionary keeps it near 6-18 MB). Carry .devrun.txz; trim
# keeping results/h200-2026-12-07-s33, tests/fixtures and data/models/*/model.safetensors.
# ~300 s (CALL_LIMIT caps it).
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=320
. scripts/device_call_lib.sh # W, B, left, stamp, pack; the bundle unpacked
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
gpu_session_run 240
pack
for rep in 1 2; do
  for m in qwen35-gdn-tiny nemotronh-m2-tiny; do
    [ "$(left)" -gt 40 ] || { stamp "skip $m"; continue; }
    e2e_fixture $B/replayssm $m $m-$rep "$W/hf_$m-$rep.json"
  done
  pack
done
for s in qwen3.5-4b nemotron-3-nano-4b; do
  [ "$(left)" -gt 20 ] || { stamp "skip $s"; continue; }
  e2e_shape $B/replayssm $s $s
done
pack
if [ -x $B/gpu_launch_lab ] && [ "$(left)" -gt 15 ]; then
  timeout 30 $B/gpu_launch_lab 200 > "$W/launch-lab.txt" 2>&1
  stamp "launch lab rc=$? $(grep -E 'grid.sync|hops +pdl-trigger' "$W/launch-lab.txt" | tr -s ' ' | cut -c1-120 | tr '\n' ';')"
fi
pack
