#!/bin/bash
# session 17, call 1 (issue 17): the shipped kernels' checks and targets with the plan kernel's
# per-token chunked copies; the lab A/B of mat4's 4-row batches (RSSM_MAT4_ROWS=4); Nsight
# Compute of the launches that had no profile: the conventional step and the flush at B = 256
# on all four shapes (per launch), the B = 1 step on nano, the spec round's plan kernel.
tar -xJf .devrun.txz; export LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64
B=.devrun/bin; NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu); W=$OUT/w; mkdir -p $W/p
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
# 1. the shipped build: checks, targets, skip= (scripts/bench/kernels_session.sh, ~170 s)
OUT=$W bash scripts/bench/kernels_session.sh > $W/session.txt 2>&1; el session; tail -40 $W/session.txt
# 2. mat4 with 4-row batches: the std part timed (each configuration checked bit for bit first)
RSSM_MAT4_ROWS=4 timeout -s INT 60 $B/replayssm bench kernels --parts std --batches 256 --iters 7 --warmup 2 \
  --check-batch 3 > $W/rows4-std.log 2>&1; el rows4 std; grep -E 'check|^ +256' $W/rows4-std.log
# 3. profiles, every launch kept apart (--per-launch in the summary)
S=""; for sec in SpeedOfLight Occupancy LaunchStats WarpStateStats ComputeWorkloadAnalysis MemoryWorkloadAnalysis InstructionStats; do S="$S --section $sec"; done
prof() { # tag limit launch-count [ncu args] -- bench args
  local tag=$1 lim=$2 cnt=$3; shift 3; local na=(); while [ "$1" != -- ]; do na+=("$1"); shift; done; shift
  timeout -s INT $lim $NCU --graph-profiling node --profile-from-start off -f --export $W/p/$tag $S \
    --kernel-name-base demangled --launch-count $cnt "${na[@]}" \
    $B/replayssm bench kernels "$@" --iters 1 --warmup 0 --check-batch 3 > $W/p/$tag.log 2>&1
  echo "ncu $tag rc=$?"
  $NCU --import $W/p/$tag.ncu-rep --csv --page details > $W/p/$tag.csv 2>>$W/p/$tag.log; rm -f $W/p/$tag.ncu-rep
}
for s in qwen4b qwen122b nano super; do # mat4 launches: the conventional step, 15 non-flush no-ops, the flush
  prof std-$s 40 17 -k 'regex:mat4_kernel' -- --parts std --shapes $s --batches 256
done; el std profiles
prof b1-nano 60 400 -- --parts std --shapes nano --batches 1; el b1
prof spec-plan 40 12 -k 'regex:plan_kernel' -- --targets-only --parts spec --shapes nano,qwen4b --batches 256; el spec plan
RSSM_MAT4_ROWS=4 timeout -s INT 90 $B/gpu_check_ssm 0.5 > $W/rows4-check.log 2>&1; el rows4 check rc=$?
grep -E '^(PASS|FAIL)|FAIL$' $W/rows4-check.log | head -5
for f in $W/p/*.csv; do python3 scripts/bench/kernels_profile_summary.py --per-launch --min-us 0 $f > ${f%.csv}.txt 2>&1; done
head -30 $W/p/std-qwen4b.txt
cd $OUT && tar -czf call1.tgz w && rm -rf w; ls -la $OUT; el done
