#!/bin/bash
# session 15 device call: ro4 readout (issue 17), word loads
tar -xJf .devrun.txz; export LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64
B=.devrun/bin
date -u
timeout 170 $B/gpu_check_ssm 0.5 > $OUT/check.log 2>&1; echo "gpu_check_ssm rc=$?"; grep -E 'FAIL|PASS' $OUT/check.log | tail -5
for v in replayssm replayssm-w3; do
  timeout 120 $B/$v bench kernels --targets-only --out $OUT/bench-$v.csv --targets $OUT/targets-$v.csv > $OUT/bench-$v.log 2>&1
  echo "== $v rc=$?"; grep -E "^(std|spec)," $OUT/bench-$v.csv | cut -d, -f1-13; grep -E '^(fp32|bf16|fp8|nvfp4) |^== non-flush|^conv_pct|^replay|^lp_|^verify|^targets|FAIL' $OUT/bench-$v.log | head -60
done
date -u
