#!/bin/bash
# session 17, call 2 (issue 17): the candidate build (plan kernel's chunked copies, mat4 with
# 4-row batches for the GDN conventional step): checks, targets, skip=; the lab build with
# 4-row fp32 readout batches (replayssm-f32r4, -DRSSM_RO4_F32_ROWS=4) against it on parts std
# and lp; Nsight Compute of the misses not yet profiled on every shape: the low-precision reads
# (4 shapes), the spec round (super, qwen122b), the GDN conventional step with 4-row batches, the
# replay step at B = 1 (nano, super).
tar -xJf .devrun.txz; export LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64
B=.devrun/bin; NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu); W=$OUT/w; mkdir -p $W/p
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
OUT=$W bash scripts/bench/kernels_session.sh > $W/session.txt 2>&1; el session; tail -34 $W/session.txt
for v in replayssm-f32r4 replayssm; do
  timeout -s INT 60 $B/$v bench kernels --parts std,lp --batches 256 --iters 7 --warmup 2 --check-batch 3 \
    --out $W/lab-$v.csv > $W/lab-$v.log 2>&1; el lab $v rc=$?
done
S=""; for sec in SpeedOfLight Occupancy LaunchStats WarpStateStats ComputeWorkloadAnalysis; do S="$S --section $sec"; done
prof() { # tag limit [ncu args] -- bench args
  local tag=$1 lim=$2; shift 2; local na=(); while [ "$1" != -- ]; do na+=("$1"); shift; done; shift
  timeout -s INT $lim $NCU --graph-profiling node --profile-from-start off -f --export $W/p/$tag $S \
    --kernel-name-base demangled "${na[@]}" \
    $B/replayssm bench kernels "$@" --iters 1 --warmup 0 --check-batch 3 > $W/p/$tag.log 2>&1
  echo "ncu $tag rc=$?"
  $NCU --import $W/p/$tag.ncu-rep --csv --page details > $W/p/$tag.csv 2>>$W/p/$tag.log; rm -f $W/p/$tag.ncu-rep
}
for s in qwen4b qwen122b; do prof conv4-$s 30 -k 'regex:mat4_kernel' --launch-count 1 -- --parts std --shapes $s --batches 256; done; el conv
for s in nano super qwen4b qwen122b; do prof lp-$s 45 -k 'regex:ro4_kernel' --launch-count 64 -- --targets-only --parts lp --shapes $s; done; el lp
for s in super qwen122b; do prof spec-$s 40 --launch-count 63 -- --targets-only --parts spec --shapes $s; done; el spec
prof b1-nano 35 --launch-skip 120 --launch-count 12 -- --parts std --shapes nano --batches 1
prof b1-super 35 --launch-skip 114 --launch-count 12 -- --parts std --shapes super --batches 1; el b1
for f in $W/p/*.csv; do python3 scripts/bench/kernels_profile_summary.py --min-us 0 $f > ${f%.csv}.txt 2>&1
  python3 scripts/bench/kernels_profile_summary.py --per-launch --min-us 0 $f > ${f%.csv}-each.txt 2>&1; done
grep -E '^ +256' $W/lab-*.log; grep -h -E 'F32|BF16|E4M3|NVFP4' $W/p/lp-*.txt | cut -c1-150
cd $OUT && tar -czf call2.tgz w && rm -rf w; el done
