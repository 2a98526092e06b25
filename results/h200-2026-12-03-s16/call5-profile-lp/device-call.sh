#!/bin/bash
# session 16, call 5: Nsight Compute profile of the
# low-precision reads of the shipped build (issue 17's bounds)
tar -xJf .devrun.txz
date -u
OUT=$OUT/p SHAPES=nano PARTS=lp KERNELS='ro4' COUNT=24 LIMIT=60 \
  bash scripts/bench/kernels_profile.sh; echo "profile rc=$?"
python3 scripts/bench/kernels_profile_summary.py $OUT/p/profile-nano.csv > $OUT/p/summary.txt 2>&1
cat $OUT/p/summary.txt | cut -c1-200
ls -la $OUT/p
for f in $OUT/p/*.csv; do s=$(stat -c %s $f); [ $s -lt 15000000 ] || { xz -T8 -6 $f; }; done
date -u
