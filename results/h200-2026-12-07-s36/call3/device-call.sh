#!/usr/bin/env bash
# Session 36, call 3 (issue 18): the 4B shapes' slow glue fixed, on the build of this session's
# last code: the norms' loads in chunks before their stores (mc_device.cuh NORM_CHUNK: 16-21 us a
# norm at H 2560-3136 in call 2's traces), the attention grid trimmed when it is large
# (trim_grid: ~50 us an attention layer of empty blocks at K = 64), 4-row mat4 batches at B = 64.
# (1) bench e2e, fixtures K = 16, three rounds of old (.devrun/old: a6ea872) and new;
# (2) the 4B shapes K = 64: old, new, new with RSSM_ATTN_TRIM=0, nano with RSSM_MAT4_ROWS=8;
# (3) tests/gpu/gpu_session.sh: every GPU check on the new code (the norm kernels' bits);
# (4) the kernel tracer on both 4B shapes (new); (5) one same-call transformers ratio per fixture.
set -u
cd "$(dirname "$0")/../../.."
DEVICE_CALL_LIMIT=330
. scripts/device_call_lib.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# (0) first, the checks of the changed kernels' bits (the norms against their CPU references,
#     the forward in both modes, the attention lab), in case the call is cut short
chk() { # NAME COMMAND...
  local n=$1; shift
  timeout 90 "$@" > "$W/chk-$n.log" 2>&1
  stamp "check $n rc=$? $(tail -n 1 "$W/chk-$n.log")"
}
chk kernels $B/gpu_check_mc_kernels
chk forward $B/gpu_check_mc_forward tests/fixtures 64
chk forward-plain env RSSM_FUSED_NORMS=0 RSSM_FUSED_STEP=0 $B/gpu_check_mc_forward tests/fixtures 64
chk attn-lab $B/gpu_check_attn_lab
pack
for rep in 1 2 3; do
  for m in nemotronh-m2-tiny qwen35-gdn-tiny; do
    e2e_fixture .devrun/old/replayssm $m old-$m-$rep
    e2e_fixture $B/replayssm $m new-$m-$rep
  done
done
pack
for s in qwen3.5-4b nemotron-3-nano-4b; do
  e2e_shape .devrun/old/replayssm $s old-$s
  e2e_shape $B/replayssm $s new-$s
  RSSM_ATTN_TRIM=0 e2e_shape $B/replayssm $s notrim-$s
done
RSSM_MAT4_ROWS=8 e2e_shape $B/replayssm nemotron-3-nano-4b rows8-nemotron-3-nano-4b
pack
[ "$(left)" -gt 190 ] && { gpu_session_run $(( $(left) - 60 )); pack; }
for s in qwen3.5-4b nemotron-3-nano-4b; do
  [ "$(left)" -gt 30 ] || { stamp "skip trace $s"; continue; }
  e2e_trace_shape $B/replayssm $s $s
done
pack
hf_rounds 1 nemotronh-m2-tiny qwen35-gdn-tiny
pack
