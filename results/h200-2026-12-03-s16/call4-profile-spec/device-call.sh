#!/bin/bash
# session 16, call 4: Nsight Compute profile of the spec round (output-only verification) and the
# low-precision reads of the shipped build (issue 17's bounds)
tar -xJf .devrun.txz
date -u
OUT=$OUT/p SHAPES=nano,qwen4b PARTS=spec,lp KERNELS='ro4|mat4|pre3|plan|commit|book' COUNT=80 LIMIT=85 \
  bash scripts/bench/kernels_profile.sh; echo "profile rc=$?"
python3 scripts/bench/kernels_profile_summary.py $OUT/p/profile-nano.csv $OUT/p/profile-qwen4b.csv > $OUT/p/summary.txt 2>&1
cat $OUT/p/summary.txt | cut -c1-200
ls -la $OUT/p
for f in $OUT/p/*.csv; do s=$(stat -c %s $f); [ $s -lt 15000000 ] || { xz -T8 -6 $f; }; done
date -u
