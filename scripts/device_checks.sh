#!/bin/bash
# Every GPU check of the runtime in one device call (docs/next-session.md, the first call after
# a change to the CUDA code): tests/gpu/gpu_session.sh (the kernel checks, then the runs), and
# the 16-row GEMM
# tile's bit identity (scripts/device_tile_check.sh) on the fixtures and on a random 4B
# checkpoint. Each step runs under its own timeout, so a hung step costs its limit and the rest
# still run; the whole stays under 9 minutes. A device call brings back at most 8 files, so the
# logs are packed into $OUT/checks.tgz and a summary is written beside it.
#
#   OUT=$OUT bash scripts/device_checks.sh        # on the device, from the repository root
#
#   SKIP=LIST   steps to leave out (comma-separated names of the table below)
#   BIN=DIR     the executables (default .devrun/bin, libraries in .devrun/lib)
#   DEVICE=cpu  the same against the CPU (a dry run of the logic; gpu_session.sh and
#               device_tile_check.sh take it too; the 4B step is skipped)
#
# Files in $OUT: summary.txt (one line per step: name, exit status, seconds, the step's verdict
# line), checks.tgz (every log and the gpu_session / tile-check folders). Exit status: the
# number of steps that failed.
set -u
: "${OUT:?device_checks: set OUT to the output folder}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
BIN=${BIN:-.devrun/bin}
case $BIN in /*) ;; *) BIN=$ROOT/$BIN ;; esac
export LD_LIBRARY_PATH=$ROOT/.devrun/lib:/usr/local/cuda/lib64
W=$OUT/checks
mkdir -p "$W"
SUMMARY=$OUT/summary.txt
: > "$SUMMARY"
T0=$(date +%s)
failed=0

# step NAME LIMIT VERDICT_REGEX COMMAND...: run into $W/NAME.log; the summary line keeps the last
# line matching VERDICT_REGEX (the step's own verdict)
step() {
  local name=$1 lim=$2 re=$3
  shift 3
  case ",${SKIP:-}," in *",$name,"*) echo "skip  $name" | tee -a "$SUMMARY"; return ;; esac
  local t=$(date +%s)
  timeout -s INT -k 10 "$lim" "$@" > "$W/$name.log" 2>&1
  local rc=$?
  local v
  v=$(grep -E "$re" "$W/$name.log" | tail -1 | cut -c1-120)
  local tag=ok
  [ "$rc" = 0 ] || { tag=FAIL; failed=$((failed + 1)); }
  printf '%-5s %-22s rc=%-3s %4ss  %s\n' "$tag" "$name" "$rc" "$(( $(date +%s) - t ))" "$v" \
    | tee -a "$SUMMARY"
}

{ date -u +%FT%TZ; git rev-parse --short=12 HEAD 2> /dev/null; nvidia-smi -L 2>&1; } > "$W/device.txt"
# gpu_session.sh runs the kernel checks first (quant, mc_kernels, mc_forward, mc_spec, attn_lab)
step session      300 'failed check' env OUT="$W/session" BIN="$BIN" bash tests/gpu/gpu_session.sh
for m in qwen3_5_moe nemotron_h_moe qwen3_5_text; do
  step "tile16-$m" 45 'failed check' env RSSM_TEST_ROW_TILE=16 SPEC=1 \
    MODEL_DIR="tests/fixtures/$m" OUT="$W/tile16-$m" BIN="$BIN/replayssm" \
    bash scripts/device_tile_check.sh
done
left=$(( 530 - ($(date +%s) - T0) ))
if [ "${DEVICE:-cuda}" != cuda ]; then
  echo "skip  tile16-qwen4b (DEVICE=${DEVICE})" | tee -a "$SUMMARY"
elif [ "$left" -gt 150 ]; then
  step tile16-qwen4b "$left" 'failed check' env OUT="$W/tile16-qwen4b" \
    BIN="$BIN/replayssm" bash scripts/device_tile_check.sh
else
  echo "skip  tile16-qwen4b (only ${left}s left of the call)" | tee -a "$SUMMARY"
fi
echo "device_checks: $failed failed step(s) in $(( $(date +%s) - T0 )) s" | tee -a "$SUMMARY"
tar -czf "$OUT/checks.tgz" -C "$OUT" checks && rm -rf "$W"
exit "$failed"
