#!/usr/bin/env bash
# Session 34, call 4 (issue 18): call 3's fused step I/O was no faster (M2 +2.4 us). Now the
# head kernel's egress is done by its last block only (no fence behind a write to host memory);
# checked (gpu_check_mc_kernels, gpu_check_mc_forward) and timed against 600c0ad (.devrun/old)
# with lab switches: RSSM_LAB_INGEST=0 (the inputs by the ingest kernel), RSSM_LAB_HEAD=0 (the
# three metrics kernels), both 0 (600c0ad's launches), three rounds per fixture.
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=150
. scripts/device_call_lib.sh
$B/gpu_check_mc_kernels > "$W/kernels.txt" 2>&1; stamp "kernels rc=$? $(grep -E 'row_head|embed_rmsnorm_in' "$W/kernels.txt" | tr -s ' ' | tr '\n' ';')"
timeout 60 $B/gpu_check_mc_forward tests/fixtures 64 > "$W/forward.txt" 2>&1; stamp "forward rc=$? $(tail -n 1 "$W/forward.txt")"
pack
for rep in 1 2 3; do
  for m in nemotronh-m2-tiny qwen35-gdn-tiny; do
    e2e_fixture .devrun/old/replayssm $m old-$m-$rep
    e2e_fixture $B/replayssm $m new-$m-$rep
    RSSM_LAB_INGEST=0 e2e_fixture $B/replayssm $m noingest-$m-$rep
    RSSM_LAB_HEAD=0 e2e_fixture $B/replayssm $m nohead-$m-$rep
    RSSM_LAB_HEAD=0 RSSM_LAB_INGEST=0 e2e_fixture $B/replayssm $m neither-$m-$rep
  done
done
pack
# the graphs' kernel timelines (tests/gpu/kernel_trace.c), old and new, both fixtures
for m in nemotronh-m2-tiny qwen35-gdn-tiny; do
  for v in old new; do
    bin=$B/replayssm; [ $v = old ] && bin=.devrun/old/replayssm
    CUDA_INJECTION64_PATH=$PWD/.devrun/lib/librssm_kernel_trace.so RSSM_TRACE_OUT=$W/trace-$v-$m.csv \
      timeout 60 $bin bench e2e --model data/models/$m --streams 16 --steps 64 --warmup 8 --gemm bf16 \
      --configs 'conventional state=fp32' --label trace-$v-$m --out "$W/e2e-trace.csv" >> "$W/e2e.log" 2>&1
    stamp "trace $v $m rc=$? $(tail -n 1 "$W/e2e-trace.csv" | cut -d, -f11) $(wc -l < $W/trace-$v-$m.csv) lines"
    python3 tests/gpu/kernel_trace.py $W/trace-$v-$m.csv > $W/trace-$v-$m.txt 2>&1
    stamp "$(grep '^step' $W/trace-$v-$m.txt)"
    xz -9 $W/trace-$v-$m.csv
  done
done
pack
