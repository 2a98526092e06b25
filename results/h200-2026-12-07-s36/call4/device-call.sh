#!/usr/bin/env bash
# Session 36, call 4 (issue 18; short: ~200 s of device time were left): call 3's chunked norms
# made the fixtures' steps 13.6 / 15.8 us slower; now the norm kernels are instantiated per chunk
# (norm_chunk_for: the per-element code where a thread has <= 4 elements, as before session 36)
# and the chunked ones run 512 threads a block (norm_threads_for). The norms' checks, the fixtures
# against a6ea872 (.devrun/old), the 4B shapes.
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=75
. scripts/device_call_lib.sh
chk() { # NAME COMMAND...
  local n=$1; shift
  timeout 40 "$@" > "$W/chk-$n.log" 2>&1
  stamp "check $n rc=$? $(tail -n 1 "$W/chk-$n.log")"
}
chk kernels $B/gpu_check_mc_kernels
chk forward $B/gpu_check_mc_forward tests/fixtures 64
chk forward-plain env RSSM_FUSED_NORMS=0 RSSM_FUSED_STEP=0 $B/gpu_check_mc_forward tests/fixtures 64
pack
for rep in 1 2; do
  for m in nemotronh-m2-tiny qwen35-gdn-tiny; do
    e2e_fixture .devrun/old/replayssm $m old-$m-$rep
    e2e_fixture $B/replayssm $m new-$m-$rep
  done
done
pack
for s in nemotron-3-nano-4b qwen3.5-4b; do
  [ "$(left)" -gt 8 ] && e2e_shape $B/replayssm $s new-$s
done
pack
