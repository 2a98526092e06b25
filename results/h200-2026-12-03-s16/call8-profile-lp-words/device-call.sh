#!/bin/bash
# session 16, call 8: Nsight Compute profile of the nvfp4 / fp8 / word-kind ro4 instances (lp part, nano)
tar -xJf .devrun.txz; export LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64
mkdir -p $OUT/p; NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
S=""; for sec in SpeedOfLight Occupancy LaunchStats WarpStateStats ComputeWorkloadAnalysis MemoryWorkloadAnalysis InstructionStats; do S="$S --section $sec"; done
timeout -s INT 70 $NCU --graph-profiling node --profile-from-start off -f --export $OUT/p/profile-nano $S \
  --kernel-name-base demangled -k 'regex:ro4_kernel<\(int\)4, \(int\)[2-7]' --launch-count 24 \
  .devrun/bin/replayssm bench kernels --targets-only --parts lp --shapes nano --batches 256 --iters 1 --warmup 0 --check-batch 3 > $OUT/p/profile-nano.log 2>&1
echo "ncu rc=$?"
$NCU --import $OUT/p/profile-nano.ncu-rep --csv --page details > $OUT/p/profile-nano.csv; rm -f $OUT/p/profile-nano.ncu-rep
python3 scripts/bench/kernels_profile_summary.py $OUT/p/profile-nano.csv > $OUT/p/summary.txt 2>&1; cut -c1-200 $OUT/p/summary.txt
