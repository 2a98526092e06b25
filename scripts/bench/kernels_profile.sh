#!/bin/bash
# Issue 17's missed targets need "the measured bound that stops it (bytes, issue slots or
# latency, with numbers)": this profiles the kernels that `bench kernels --targets-only` times,
# with Nsight Compute, so that each kernel's DRAM throughput, achieved occupancy, issue-slot use
# and warp-stall reasons sit beside its time (docs/bench-kernels.md, "Why a target is missed").
#
#   OUT=DIR bash scripts/bench/kernels_profile.sh      # on the device, from the repository root
#
#   SHAPES=LIST   bench kernels shapes to profile (default qwen4b,nano: one GDN, one Mamba-2)
#   LIMIT=S       seconds per shape (default 150)
#   NCU=PATH      the ncu binary (default: ncu on PATH, else /usr/local/cuda/bin/ncu)
#   BATCHES=LIST  batch sizes (default 256: at B = 1 the bench replays ~40 copies of the state per
#                 step against the L2, and session 7's profile spent its 70 s on those)
#   COUNT=N       kernel launches profiled per shape (default 300: ncu replays each one ~20 times)
#   SECTIONS=LIST Nsight Compute sections, space-separated (default: the seven that the summary reads)
#   KERNELS=RE    profile only kernels whose name matches the regular expression (ncu -k regex:RE);
#                 ncu matches the function's base name (ro4_kernel) unless KERNEL_BASE says otherwise
#   KERNEL_BASE=B ncu --kernel-name-base B: function (default), demangled (then RE can pick template
#                 instances, e.g. 'ro4_kernel<\(int\)4, \(int\)[2-7]': session 16) or mangled
#   SKIP=N        launches of the matching kernels skipped before COUNT are profiled (ncu
#                 --launch-skip; e.g. to pass a part's small check launches and reach B = 256)
#   PARTS=LIST    bench kernels parts (default: those of --targets-only; lp alone reaches the
#                 low-precision readouts within the limit, which std and spec otherwise use up)
#
# Writes $OUT/profile-SHAPE.csv (the report through ncu --import --csv --page details: one row
# per kernel launch and metric of the sections SpeedOfLight, Occupancy, LaunchStats,
# WarpStateStats, ComputeWorkloadAnalysis, MemoryWorkloadAnalysis), $OUT/profile-SHAPE.log
# (ncu's and the bench's messages) and $OUT/profile.log; the bench runs one timed replay
# per measurement (its timings are not the figures of record: ncu serialises and replays each
# kernel). scripts/bench/kernels_profile_summary.py turns the CSVs into one line per kernel.
set -u
: "${OUT:?OUT must name the output folder}"
export LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64
BIN=.devrun/bin
SHAPES=${SHAPES:-qwen4b,nano}
LIMIT=${LIMIT:-150}
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
mkdir -p "$OUT"
case "${KERNEL_BASE:-function}" in
  function|demangled|mangled) ;;
  *) echo "kernels_profile: KERNEL_BASE='$KERNEL_BASE': expected function, demangled or mangled"; exit 2 ;;
esac
case "${SKIP:-0}" in
  ''|*[!0-9]*) echo "kernels_profile: SKIP='$SKIP': expected a count of launches (0, 1, ...)"; exit 2 ;;
esac
if [ ! -x "$NCU" ]; then
  echo "kernels_profile: no ncu (looked on PATH and at /usr/local/cuda/bin/ncu)" | tee "$OUT/profile.log"
  exit 2
fi
"$NCU" --version > "$OUT/profile.log" 2>&1
SECTION_ARGS=""
for sec in ${SECTIONS:-SpeedOfLight Occupancy LaunchStats WarpStateStats ComputeWorkloadAnalysis MemoryWorkloadAnalysis InstructionStats}; do
  SECTION_ARGS="$SECTION_ARGS --section $sec"
done
rc_all=0
for s in ${SHAPES//,/ }; do
  # graph kernel nodes are profiled one by one (--graph-profiling node), and only inside the
  # bench's timed replays (cudaProfilerStart/Stop in time_graphs, --profile-from-start off): the
  # 3-row CPU checks' launches are not (session 7's first profile spent its 95 s on them)
  timeout -s INT "$LIMIT" "$NCU" --graph-profiling node --profile-from-start off -f \
    --export "$OUT/profile-$s" \
    $SECTION_ARGS \
    --launch-count "${COUNT:-300}" --launch-skip "${SKIP:-0}" \
    --kernel-name-base "${KERNEL_BASE:-function}" ${KERNELS:+-k "regex:$KERNELS"} \
    "$BIN/replayssm" bench kernels --targets-only ${PARTS:+--parts "$PARTS"} --shapes "$s" \
    --batches "${BATCHES:-256}" \
    --iters 1 --warmup 0 \
    --check-batch 3 > "$OUT/profile-$s.log" 2>&1
  rc=$?
  # the report to CSV (the bench's own output stays in the log), then the report goes: it is
  # large, and $OUT brings back at most 8 files
  "$NCU" --import "$OUT/profile-$s.ncu-rep" --csv --page details > "$OUT/profile-$s.csv" \
    2>> "$OUT/profile-$s.log" || rc=1
  rm -f "$OUT/profile-$s.ncu-rep"
  echo "kernels_profile: $s exit $rc, $(grep -c . "$OUT/profile-$s.csv") CSV lines" | tee -a "$OUT/profile.log"
  [ "$rc" = 0 ] || rc_all=1
done
exit $rc_all
