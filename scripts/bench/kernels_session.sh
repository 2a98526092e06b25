#!/bin/bash
# Device session of issue 17 (docs/bench-kernels.md): the SSM kernels' bit-identity checks and
# the issue's targets (met / missed) for the kernels that ship (docs/ssm-cuda.md, "Kernels").
#
# Needs, in .devrun/bin, the binaries of these build targets (cmake -S . -B build-cuda
# -DRSSM_WERROR=ON; cmake --build build-cuda -j2 --target replayssm gpu_check_ssm):
#   replayssm        (build-cuda/replayssm)
#   gpu_check_ssm    (build-cuda/tests/gpu/gpu_check_ssm)
# and their libraries in .devrun/lib (/work/shared/device/bundle-libs.sh .devrun
# .devrun/bin/replayssm .devrun/bin/gpu_check_ssm). Run from the repository root with .devrun
# carried and $OUT the output folder:
#   bash scripts/bench/kernels_session.sh
#
# Steps (each under `timeout`; at most 170 s of timeouts, under 3 minutes in all):
#   1. gpu_check_ssm, every check at half the steps (the readouts, the mixed-T verification of
#      point 4, skip=, the B = 1 conventional step, the decoders, the snapshot baseline)
#   2. replayssm bench kernels --targets-only: the measurements the targets need (std B = 1,
#      256; spec T = 8 a = 1; lp fp32, bf16, fp8, nvfp4), each configuration checked bit for bit
#      first (3 rows), and the verdict table (targets.csv is rewritten after every table, so a
#      run stopped by its timeout still leaves the verdicts it reached)
#   3. replayssm bench kernels --parts skip on nano and qwen4b: Appendix F's skip= timed
#      (non-flush step with and without the threshold), appended to bench.log
# Writes 5 files into $OUT: device.txt, check.log, bench.log, bench.csv, targets.csv
# (target,shape,value,unit,goal,sense,verdict). Prints a compact summary: the checks' verdict
# lines and the target table.
set -u
: "${OUT:?OUT must name the output folder}"
export LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64
BIN=.devrun/bin
start=$(date +%s)
bash "$(dirname "$0")/device_info.sh" > "$OUT/device.txt"
for b in replayssm gpu_check_ssm; do
  [ -x "$BIN/$b" ] || echo "missing $BIN/$b" | tee -a "$OUT/device.txt"
done

step() { # name timeout_s log command...: runs it into log, records its exit status and time
  local name=$1 lim=$2 log=$3 t0
  shift 3
  t0=$(date +%s)
  timeout -s INT "$lim" "$@" > "$log" 2>&1
  local rc=$?
  echo "$name: exit $rc after $(( $(date +%s) - t0 )) s" | tee -a "$OUT/device.txt"
}

# 1. bit identity against the CPU engine
step "gpu_check_ssm" 100 "$OUT/check.log" "$BIN/gpu_check_ssm" 0.5
# 2. the targets (CSV rewritten after each table: a time-out keeps what finished)
step "bench kernels --targets-only" 55 "$OUT/bench.log" "$BIN/replayssm" bench kernels --targets-only \
  --iters 7 --warmup 2 --check-batch 3 --out "$OUT/bench.csv" --targets "$OUT/targets.csv"
# 3. Appendix F's skip= timed, two shapes, appended to bench.log
step "bench kernels --parts skip" 15 "$OUT/skip.tmp" "$BIN/replayssm" bench kernels \
  --parts skip --shapes nano,qwen4b --iters 5 --warmup 1 --check-batch 3
{ echo; echo "==== --parts skip --shapes nano,qwen4b"; cat "$OUT/skip.tmp"; } >> "$OUT/bench.log"
rm -f "$OUT/skip.tmp"
nvidia-smi --query-gpu=temperature.gpu,clocks.sm,clocks.mem,power.draw --format=csv >> "$OUT/device.txt" 2>&1

echo "== summary ($(( $(date +%s) - start )) s)"
echo "-- check: $(grep -c 'FAIL' "$OUT/check.log") FAIL line(s)"
grep -E '^(decoders|PASS|FAIL)|FAIL$' "$OUT/check.log" | head -12
echo "-- skip=: $(grep -E '^timed' "$OUT/bench.log" | wc -l) timed line(s)"
grep -E '^(timed|check .*skip.*FAIL)' "$OUT/bench.log" | cut -c1-160
echo "-- bench"
grep -E '^(copy bandwidth|check .*FAIL|PASS:|FAIL:)' "$OUT/bench.log" | head -8
if grep -q '^== issue 17 targets' "$OUT/bench.log"; then
  awk '/^== issue 17 targets/{on=1} on{print substr($0,1,74)} on&&/^targets:/{exit}' "$OUT/bench.log"
else
  echo "(run cut short: the verdicts it reached)"
  tail -n +2 "$OUT/targets.csv" 2>/dev/null
fi
