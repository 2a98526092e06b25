#!/usr/bin/env bash
# Session 33, call 5 (issue 18), build f940a9e: the default step (staged norms, fused SSM step)
# with the in-GEMM norm removed.
# (1) tests/gpu/gpu_session.sh: every GPU check (now also the plain step's forward check and
#     gpu_check_ssm's conventional step fused and unfused); the logs of failed checks kept;
# (2) bench e2e bf16 K = 16 on both fixtures, twice, each run with transformers after it (two
#     same-call ratios per model for the 40x bar).
# Carry .devrun.txz (replayssm, every gpu_check_*, gpu_golden_bytes; the libraries the machine
# lacks); trim keeping results/h200-2026-12-07-s33, tests/fixtures, data/models/*/model.safetensors.
# ~270 s (CALL_LIMIT caps it).
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=300
. scripts/device_call_lib.sh # W, B, left, stamp, pack; the bundle unpacked
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
OUT=$W/gs BIN=$B timeout 240 bash tests/gpu/gpu_session.sh > "$W/gpu-session.txt" 2>&1
stamp "gpu_session rc=$? $(tail -n 1 "$W/gpu-session.txt")"
grep FAIL "$W/gpu-session.txt" | head -10
mkdir -p "$W/failed" && for n in $(grep '^FAIL' "$W/gpu-session.txt" | awk '{print $2}'); do
  cp "$W/gs/$n.log" "$W/failed/" 2>/dev/null; done
rm -rf "$W/gs"
pack
for rep in 1 2; do
  for m in qwen35-gdn-tiny nemotronh-m2-tiny; do
    [ "$(left)" -gt 25 ] || { stamp "skip $m"; continue; }
    timeout 60 $B/replayssm bench e2e --model data/models/$m --streams 16 --steps 64 --warmup 8 \
      --gemm bf16 --configs 'conventional state=fp32' --label $m-default-$rep \
      --transformers python3 --transformers-json "$W/hf_$m-$rep.json" \
      --out "$W/e2e.csv" >> "$W/e2e.log" 2>&1
    stamp "e2e $m rc=$? $(tail -n 1 "$W/e2e.csv" | cut -d, -f11,26,27)"
  done
  pack
done
