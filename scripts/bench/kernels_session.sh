#!/bin/bash
# Device session of issue 17 (docs/bench-kernels.md): the SSM kernels' bit-identity checks and
# the issue's targets (met / missed) for the v3 kernels and, for comparison, the v2 kernels.
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
# Steps (each under `timeout`; at most 230 s of timeouts, under 4 minutes in all):
#   1. gpu_check_ssm with RSSM_SSM_KERNELS=v3, every check at half the steps (the v3 readout, the
#      mixed-T verification of point 4, the decoders, the snapshot baseline)
#   2. gpu_check_ssm with v2, the mixed-T checks only (v2 passed the rest on the H200 before;
#      point 4 changed its readout's query plan)
#   3. replayssm bench kernels --targets-only with v3, then with v2: the measurements the targets
#      need (std B = 1, 256; spec T = 8 a = 1; lp fp32, bf16, fp8, nvfp4), each configuration
#      checked bit for bit first (3 rows), and the verdict table (targets_K.csv is rewritten after
#      every table, so a run stopped by its timeout still leaves the verdicts it reached)
#   4. replayssm bench kernels --parts skip --kernels v3 on nano and qwen4b: Appendix F's skip=
#      timed (non-flush step with and without the threshold), appended to bench_v3.log
# Writes 8 files into $OUT: device.txt, check_v3.log, check_v2.log, bench_v3.log, bench_v3.csv,
# bench_v2.log, bench_v2.csv, targets.csv (kernels,target,shape,value,unit,goal,sense,verdict).
# Prints a compact summary: the checks' verdict lines and both target tables.
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

# 1-2. bit identity against the CPU engine
RSSM_SSM_KERNELS=v3 step "gpu_check_ssm v3" 100 "$OUT/check_v3.log" "$BIN/gpu_check_ssm" 0.5
RSSM_SSM_KERNELS=v2 step "gpu_check_ssm v2 mixedT" 20 "$OUT/check_v2.log" "$BIN/gpu_check_ssm" 0.5 mixedT

# 3. the targets, v3 then v2 (CSV rewritten after each table: a time-out keeps what finished)
for k in v3 v2; do
  lim=55
  [ "$k" = v2 ] && lim=40
  step "bench kernels --targets-only --kernels $k" "$lim" "$OUT/bench_$k.log" "$BIN/replayssm" bench \
    kernels --targets-only --kernels "$k" --iters 7 --warmup 2 --check-batch 3 \
    --out "$OUT/bench_$k.csv" --targets "$OUT/targets_$k.csv"
done
# 4. Appendix F's skip= timed (v3 only), two shapes, appended to bench_v3.log
step "bench kernels --parts skip --kernels v3" 15 "$OUT/skip_v3.tmp" "$BIN/replayssm" bench kernels \
  --parts skip --kernels v3 --shapes nano,qwen4b --iters 5 --warmup 1 --check-batch 3
{ echo; echo "==== --parts skip --kernels v3 --shapes nano,qwen4b"; cat "$OUT/skip_v3.tmp"; } >> "$OUT/bench_v3.log"
rm -f "$OUT/skip_v3.tmp"
{
  echo "kernels,target,shape,value,unit,goal,sense,verdict"
  for k in v3 v2; do
    [ -f "$OUT/targets_$k.csv" ] && tail -n +2 "$OUT/targets_$k.csv" | sed "s/^/$k,/"
  done
} > "$OUT/targets.csv"
rm -f "$OUT/targets_v3.csv" "$OUT/targets_v2.csv"
nvidia-smi --query-gpu=temperature.gpu,clocks.sm,clocks.mem,power.draw --format=csv >> "$OUT/device.txt" 2>&1

echo "== summary ($(( $(date +%s) - start )) s)"
for f in check_v3 check_v2; do
  echo "-- $f: $(grep -c 'FAIL' "$OUT/$f.log") FAIL line(s)"
  grep -E '^(decoders|PASS|FAIL)|FAIL$' "$OUT/$f.log" | head -12
done
echo "-- skip= (v3): $(grep -E '^timed' "$OUT/bench_v3.log" | wc -l) timed line(s)"
grep -E '^(timed|check .*skip.*FAIL)' "$OUT/bench_v3.log" | cut -c1-160
for k in v3 v2; do
  echo "-- bench $k"
  grep -E '^(copy bandwidth|check .*FAIL|PASS:|FAIL:)' "$OUT/bench_$k.log" | head -8
  if grep -q '^== issue 17 targets' "$OUT/bench_$k.log"; then
    awk '/^== issue 17 targets/{on=1} on{print substr($0,1,74)} on&&/^targets:/{exit}' "$OUT/bench_$k.log"
  else
    echo "(run cut short: the verdicts it reached)"
    grep "^$k," "$OUT/targets.csv" | cut -d, -f2-
  fi
done
