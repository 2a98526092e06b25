#!/bin/bash
# session 17, call 4 (issue 17): the build that ships (call 3's build with the verification's
# fp32 instances at 8 rows, as its lab build replayssm-v8, and 8-row fp32 steps on grids of at
# most one block an SM): checks, targets, skip=; part std over the batch sizes 1..256.
tar -xJf .devrun.txz; export LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64
B=.devrun/bin; W=$OUT/w; mkdir -p $W
t0=$(date +%s); el() { echo "[$(( $(date +%s) - t0 )) s] $*"; }
OUT=$W bash scripts/bench/kernels_session.sh > $W/session.txt 2>&1; el session; tail -34 $W/session.txt
timeout -s INT 90 $B/replayssm bench kernels --parts std --batches 1,2,4,8,16,64,256 --iters 7 --warmup 2 \
  --check-batch 3 --out $W/std-batches.csv > $W/std-batches.log 2>&1; el std batches rc=$?
grep -E '^==|^ +[0-9]+ +[0-9]+ \|' $W/std-batches.log
cd $OUT && tar -czf call4.tgz w && rm -rf w; el done
