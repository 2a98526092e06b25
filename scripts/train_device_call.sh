#!/usr/bin/env bash
# One training call on the GPU machine: what the device-call scripts of sessions 16-18 repeated
# by hand before and after scripts/train_fixture_session.sh. Unpacks the MIN=1 bundle
# (.devrun.txz, scripts/bundle_device.sh), rebuilds the held-out token
# stream from data/moby-dick.txt (the stream is not carried: the device call's 64 MiB), runs
# scripts/train_fixture_session.sh with the caller's environment (ONLY, VARIANTS, TRAIN_SECONDS,
# DRIFT_CHECK, ...: see that script) under a time limit, its output into $OUT/session.log, and
# prints the log's end. A call script then holds only its design and its reasons:
#   OUT=$OUT ONLY=nemotronh-m2-tiny SKIP_SMOKE=1 M2_INIT_FROM= DRIFT_CHECK=1 CONTEXT_CHECK=1 \
#     TRAIN_SECONDS=450 VARIANTS="a=...;b=..." bash scripts/train_device_call.sh
#   OUT           the folder whose files come back (required)
#   CALL_TIMEOUT  seconds for train_fixture_session.sh (default 575: a command has 600)
#   TAIL_LINES    lines of session.log printed at the end (default 60)
# Exit status: train_fixture_session.sh's (124 when it ran out of time), 2 for a missing input.
set -uo pipefail
cd "$(dirname "$0")/.."
die() { echo "train_device_call: $*" >&2; exit 2; }
[ -n "${OUT:-}" ] || die "OUT: not set (expected the device's \$OUT)"
mkdir -p "$OUT" || die "$OUT: cannot create"
date -u
# always unpacked when carried: the device keeps ignored files between calls, so a .devrun/ left
# by an earlier call could hold an older build
if [ -f .devrun.txz ]; then
  tar -xJf .devrun.txz || die ".devrun.txz: not an xz tar archive"
elif [ ! -x .devrun/bin/replayssm ]; then
  die ".devrun.txz missing (carry it: MIN=1 bash scripts/bundle_device.sh)"
fi
[ -s data/moby-dick.txt ] || die "data/moby-dick.txt missing (carry it: scripts/fetch_data.sh)"
LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64 .devrun/bin/replayssm tokens --force \
  --out data/moby-dick.tok.zst data/moby-dick.txt || die "replayssm tokens failed"
timeout -k 10 "${CALL_TIMEOUT:-575}" bash scripts/train_fixture_session.sh >"$OUT/session.log" 2>&1
rc=$?
echo "train_device_call: train_fixture_session.sh exit $rc"
tail -n "${TAIL_LINES:-60}" "$OUT/session.log"
date -u
exit $rc
