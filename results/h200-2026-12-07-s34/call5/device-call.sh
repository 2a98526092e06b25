#!/usr/bin/env bash
# Session 34, call 5 (issue 18), on the working tree after call 4 (the fused step I/O of calls 3-4
# dropped): (a) the attention stream kernel launched over the splits a position below max_ctx can
# use (attn_lab_stream.cuh splits_launched; the same bits), (b) 16 warps a block for a tensor-core
# GEMM whose blocks fit the SMs and whose W would take two rounds with 8 (mc_gemm_mma_warps: the
# Mamba-2 fixture's MLP down projection; other bits for that GEMM, within gemm_lab_bound_mma).
# (1) tests/gpu/gpu_session.sh (the gemm lab with mma16, the attention checks);
# (2) bench e2e bf16 K = 16, old (.devrun/old: 600c0ad) and new alternately, three rounds;
# (3) the new graphs' kernel timelines (tests/gpu/kernel_trace.c);
# (4) transformers once per fixture after a new run (the same-call ratio).
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=300
. scripts/device_call_lib.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
gpu_session_run 200
pack
for rep in 1 2 3; do
  for m in nemotronh-m2-tiny qwen35-gdn-tiny; do
    e2e_fixture .devrun/old/replayssm $m old-$m-$rep
    e2e_fixture $B/replayssm $m new-$m-$rep
  done
done
pack
for m in nemotronh-m2-tiny qwen35-gdn-tiny; do
  CUDA_INJECTION64_PATH=$PWD/.devrun/lib/librssm_kernel_trace.so RSSM_TRACE_OUT=$W/trace-new-$m.csv \
    timeout 60 $B/replayssm bench e2e --model data/models/$m --streams 16 --steps 64 --warmup 8 --gemm bf16 \
    --configs 'conventional state=fp32' --label trace-new-$m --out "$W/e2e-trace.csv" >> "$W/e2e.log" 2>&1
  python3 tests/gpu/kernel_trace.py $W/trace-new-$m.csv > $W/trace-new-$m.txt 2>&1
  stamp "trace $m: $(grep '^step' $W/trace-new-$m.txt)"
  xz -9 $W/trace-new-$m.csv
done
pack
for m in nemotronh-m2-tiny qwen35-gdn-tiny; do
  [ "$(left)" -gt 30 ] || { stamp "skip $m"; continue; }
  e2e_fixture $B/replayssm $m hf-$m "$W/hf_$m.json"
done
pack
