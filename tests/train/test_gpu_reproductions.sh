#!/usr/bin/env bash
# scripts/gpu_reproductions.sh with stand-ins for replayssm, python3 and nvidia-smi (no GPU): two
# calls in a row on one machine each run every job into a folder of their own (session 26's
# second call on a warm machine reused the first call's folder, its runs refused to overwrite the
# earlier HDF5 files and the first model's results were packed as the second's); a run that fails
# ends the script with exit 1 and packs only its logs, no analysis; an OUT that already holds
# results is refused with exit 2 before anything runs.
set -uo pipefail
ROOT=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "test_gpu_reproductions: FAIL: $*"; exit 1; }

mkdir -p "$T/bin" "$T/tmp"
# replayssm: `summary FILE` prints FILE; `run ... --out FILE` refuses an existing FILE, as the
# real one does without --force, and otherwise writes the call's tag (RUN_TAG) into it;
# FAIL_RUN=NAME makes that run fail
cat >"$T/bin/replayssm" <<'EOF'
#!/usr/bin/env bash
[ "$1" = summary ] && { cat "$2"; exit 0; }
out=
while [ $# -gt 0 ]; do [ "$1" = --out ] && out=$2; shift; done
[ -n "$out" ] || exit 3
[ ! -e "$out" ] || { echo "replayssm run: $out: exists (use --force to overwrite it)" >&2; exit 2; }
case $out in *"/${FAIL_RUN:-none}.h5") echo "replayssm run: made to fail" >&2; exit 2 ;; esac
echo "$RUN_TAG" >"$out"
EOF
# python3: each analysis step writes nothing but a line into the log; the bpb step prints {}
cat >"$T/bin/python3" <<'EOF'
#!/usr/bin/env bash
echo "fake python3 $*"
[ "$1" = - ] && { cat >/dev/null; echo '{}'; }
exit 0
EOF
printf '#!/bin/sh\necho "NVIDIA stand-in"\n' >"$T/bin/nvidia-smi"
chmod +x "$T/bin"/*
export PATH=$T/bin:$PATH TMPDIR=$T/tmp BIN=$T/bin/replayssm ONLY=nemotronh-m2-tiny
S=$ROOT/scripts/gpu_reproductions.sh

members() { tar -xOf "$1" "$2" 2>/dev/null; }
RUN_TAG=first OUT=$T/out1 bash "$S" >"$T/log1" 2>&1 || fail "first call: exit $? ($(tail -n 3 "$T/log1"))"
RUN_TAG=second OUT=$T/out2 bash "$S" >"$T/log2" 2>&1 || fail "second call: exit $? ($(tail -n 3 "$T/log2"))"
for n in 1 2; do
  [ -s "$T/out$n/repro.tar" ] || fail "call $n: no repro.tar"
  grep -q "kl-nemotronh-m2-tiny: exit 0" "$T/log$n" || fail "call $n: the KL run did not succeed: $(cat "$T/log$n")"
done
# the summaries are the stand-in's HDF5 files: each call's own tag
[ "$(members "$T/out2/repro.tar" figures/kl-nemotronh-m2-tiny.summary.txt)" = second ] ||
  fail "second call packed '$(members "$T/out2/repro.tar" figures/kl-nemotronh-m2-tiny.summary.txt)', not its own runs"
[ "$(tar -xzOf "$T/out2/h5-nemotronh-m2-tiny.tar.gz" window-nemotronh-m2-tiny.h5)" = second ] ||
  fail "second call's HDF5 archive holds another call's file"
[ "$(grep -c ': exit' <(members "$T/out2/repro.tar" logs/times.txt))" = 5 ] ||
  fail "second call's times.txt has other calls' lines: $(members "$T/out2/repro.tar" logs/times.txt)"
[ -z "$(ls -A "$T/tmp")" ] || fail "work folders left behind: $(ls "$T/tmp")"

# a failing run: exit 1, logs packed, no analysis, no repro.tar
FAIL_RUN=window-nemotronh-m2-tiny RUN_TAG=third OUT=$T/out3 bash "$S" >"$T/log3" 2>&1; rc=$?
[ $rc = 1 ] || fail "a failed run: exit $rc (expected 1): $(tail -n 3 "$T/log3")"
grep -q "gpu_reproductions: 1 run(s) failed: no analysis" "$T/log3" || fail "a failed run's message: $(tail -n 3 "$T/log3")"
[ ! -e "$T/out3/repro.tar" ] || fail "a failed run still packed repro.tar"
members "$T/out3/repro-logs.tar" logs/window-nemotronh-m2-tiny.log | grep -q "made to fail" ||
  fail "repro-logs.tar lacks the failed run's log"
grep -q "fake python3" "$T/log3" && fail "the analysis ran after a failed run"

# an OUT with earlier results: exit 2 before anything runs
for n in 1 3; do
  before=$(ls -l --time-style=+%s.%N "$T/out$n")
  RUN_TAG=again OUT=$T/out$n bash "$S" >"$T/log4" 2>&1; rc=$?
  [ $rc = 2 ] || fail "OUT with earlier results (out$n): exit $rc (expected 2)"
  grep -q "gpu_reproductions: $T/out$n/repro.*exists" "$T/log4" || fail "refusal's message: $(cat "$T/log4")"
  [ "$before" = "$(ls -l --time-style=+%s.%N "$T/out$n")" ] || fail "a refused call changed out$n"
done
echo "test_gpu_reproductions: passed"
