#!/bin/bash
# session 16, call 9: Nsight Compute profile of the conventional step and the flush (std part, qwen4b)
tar -xJf .devrun.txz; export LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64
mkdir -p $OUT/p; NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
S=""; for sec in SpeedOfLight Occupancy LaunchStats WarpStateStats ComputeWorkloadAnalysis MemoryWorkloadAnalysis InstructionStats; do S="$S --section $sec"; done
timeout -s INT 50 $NCU --graph-profiling node --profile-from-start off -f --export $OUT/p/profile-qwen4b $S \
  --kernel-name-base demangled -k 'regex:mat|store|plan' --launch-count 16 \
  .devrun/bin/replayssm bench kernels --targets-only --parts std --shapes qwen4b --batches 256 --iters 1 --warmup 0 --check-batch 3 > $OUT/p/profile-qwen4b.log 2>&1
echo "ncu rc=$?"
$NCU --import $OUT/p/profile-qwen4b.ncu-rep --csv --page details > $OUT/p/profile-qwen4b.csv; rm -f $OUT/p/profile-qwen4b.ncu-rep
python3 scripts/bench/kernels_profile_summary.py $OUT/p/profile-qwen4b.csv > $OUT/p/summary.txt 2>&1; cut -c1-200 $OUT/p/summary.txt
