#!/bin/bash
# session 17, call 3 (issue 17): the build to ship (plan kernel's chunked copies; mat4 4-row
# batches for the GDN conventional step; ro4 4-row batches for every instance, fp32 included):
# checks, targets, skip=; the lab build whose verification fp32 instances keep 8 rows
# (replayssm-v8 / gpu_check_ssm-v8, -DRSSM_RO4_VERIFY_ROWS=8) against it on part spec, and its
# checks; Nsight Compute of the 4-row fp32 readout (std, non-flush), the spec round's readout on
# all four shapes, the GDN nvfp4 reads that call 2's launch count did not reach.
tar -xJf .devrun.txz; export LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64
B=.devrun/bin; NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu); W=$OUT/w; mkdir -p $W/p
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
OUT=$W bash scripts/bench/kernels_session.sh > $W/session.txt 2>&1; el session; tail -34 $W/session.txt
for v in replayssm-v8 replayssm; do
  timeout -s INT 40 $B/$v bench kernels --targets-only --parts std,spec --batches 256 --iters 7 --warmup 2 \
    --check-batch 3 --out $W/lab-$v.csv > $W/lab-$v.log 2>&1; el lab $v rc=$?
done
grep -E '^(verify_t8|targets)' $W/lab-*.log
S=""; for sec in SpeedOfLight Occupancy LaunchStats WarpStateStats ComputeWorkloadAnalysis; do S="$S --section $sec"; done
prof() { # tag limit [ncu args] -- bench args
  local tag=$1 lim=$2; shift 2; local na=(); while [ "$1" != -- ]; do na+=("$1"); shift; done; shift
  timeout -s INT $lim $NCU --graph-profiling node --profile-from-start off -f --export $W/p/$tag $S \
    --kernel-name-base demangled "${na[@]}" \
    $B/replayssm bench kernels "$@" --iters 1 --warmup 0 --check-batch 3 > $W/p/$tag.log 2>&1
  echo "ncu $tag rc=$?"
  $NCU --import $W/p/$tag.ncu-rep --csv --page details > $W/p/$tag.csv 2>>$W/p/$tag.log; rm -f $W/p/$tag.ncu-rep
}
for s in nano super qwen4b qwen122b; do
  prof nf-$s 25 -k 'regex:ro4_kernel' --launch-count 2 -- --parts std --shapes $s --batches 256
  prof spec-$s 30 -k 'regex:ro4_kernel' --launch-count 3 -- --targets-only --parts spec --shapes $s
done; el nf spec
for s in qwen4b qwen122b; do prof lp4-$s 40 -k 'regex:ro4_kernel' --launch-skip 64 --launch-count 16 -- --targets-only --parts lp --shapes $s; done; el lp
for f in $W/p/*.csv; do python3 scripts/bench/kernels_profile_summary.py --min-us 0 $f > ${f%.csv}.txt 2>&1; done
for f in $W/p/*.txt; do sed -n 3,4p $f | cut -c1-150; done
timeout -s INT 100 $B/gpu_check_ssm-v8 0.5 > $W/check-v8.log 2>&1; el check v8 rc=$?; grep -E '^(PASS|FAIL)' $W/check-v8.log
cd $OUT && tar -czf call3.tgz w && rm -rf w; el done
