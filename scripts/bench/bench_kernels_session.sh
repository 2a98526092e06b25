#!/bin/sh
# One device session for issue 9 (docs/bench-kernels.md): the SSM engine's bit-identity check,
# then `replayssm bench kernels` (full), everything written into $OUT (4 files). Under 5 minutes.
# (Until 2026-12-01 it also timed the first-generation kernels, since deleted: issue 17 point 2.)
#
# Prepared on the CPU machine (repository root):
#   cmake -S . -B build-bench -DRSSM_WERROR=ON && cmake --build build-bench -j2 --target replayssm gpu_check_ssm
#   mkdir -p .devrun/bin && cp build-bench/replayssm build-bench/tests/gpu/gpu_check_ssm .devrun/bin/
#   /work/shared/device/bundle-libs.sh .devrun .devrun/bin/replayssm .devrun/bin/gpu_check_ssm
# Run on the device machine, from the repository root (.devrun carried):
#   sh scripts/bench/bench_kernels_session.sh
# Extra arguments go to `replayssm bench kernels` (e.g. --quick, --shapes nano).
set -u
: "${OUT:?OUT must name the output folder}"
export LD_LIBRARY_PATH=.devrun/lib:/usr/local/cuda/lib64
BIN=.devrun/bin
start=$(date +%s)
bash "$(dirname "$0")/device_info.sh" > "$OUT/device.txt"

# 1. bit-identity of the engine (and of the snapshot baseline) against the CPU reference
timeout -s INT 130 "$BIN/gpu_check_ssm" > "$OUT/gpu_check_ssm.log" 2>&1
echo "gpu_check_ssm: exit $? after $(( $(date +%s) - start )) s" | tee -a "$OUT/device.txt"
tail -n 3 "$OUT/gpu_check_ssm.log"

# 2. the benchmark: tables on stdout, every measurement in the CSV (rewritten after each table,
#    so a run cut short keeps what it finished)
t1=$(date +%s)
timeout -s INT 140 "$BIN/replayssm" bench kernels --out "$OUT/bench_kernels.csv" "$@" \
  > "$OUT/bench_kernels.log" 2>&1
echo "replayssm bench kernels: exit $? after $(( $(date +%s) - t1 )) s" | tee -a "$OUT/device.txt"
grep -E '^(copy|check .*FAIL|PASS|FAIL)' "$OUT/bench_kernels.log" | head -20

nvidia-smi --query-gpu=temperature.gpu,clocks.sm,clocks.mem,power.draw --format=csv >> "$OUT/device.txt" 2>&1
echo "total $(( $(date +%s) - start )) s"
