#!/usr/bin/env bash
# scripts/bench/kernels_profile.sh's options reach ncu as written, with a stand-in ncu that records
# its arguments (no GPU): KERNEL_BASE and SKIP (session 16: template instances can only be picked
# with --kernel-name-base demangled), their defaults, and one clear line and exit 2 for bad values.
#   bash tests/bench_kernels/test_kernels_profile.sh SOURCE_DIR
set -u
SRC=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cat >"$T/ncu" <<'NCU'
#!/bin/sh
# --version, the profiled run and --import: record each call's arguments, one line a call
echo "$*" >>"$(dirname "$0")/calls"
exit 0
NCU
chmod +x "$T/ncu"
fail() { echo "test_kernels_profile: $*"; exit 1; }
cd "$SRC" || exit 1

OUT=$T/a NCU=$T/ncu SHAPES=nano KERNELS='ro4_kernel<\(int\)4' KERNEL_BASE=demangled SKIP=12 \
  bash scripts/bench/kernels_profile.sh >/dev/null 2>&1 || fail "a good run exited non-zero"
grep -q -- "--launch-skip 12 --kernel-name-base demangled -k regex:ro4_kernel<\\\\(int\\\\)4 " "$T/calls" ||
  fail "KERNEL_BASE / SKIP / KERNELS not passed: $(cat "$T/calls")"
grep -q -- "--shapes nano " "$T/calls" || fail "SHAPES not passed"
rm -f "$T/calls"
OUT=$T/b NCU=$T/ncu SHAPES=nano bash scripts/bench/kernels_profile.sh >/dev/null 2>&1 ||
  fail "a run with the defaults exited non-zero"
grep -q -- "--launch-skip 0 --kernel-name-base function " "$T/calls" || fail "defaults: $(cat "$T/calls")"
grep -q -- " -k " "$T/calls" && fail "no KERNELS, yet a -k filter"
for bad in "KERNEL_BASE=full" "SKIP=-3" "SKIP=x"; do
  rm -f "$T/calls"
  msg=$(env "$bad" OUT=$T/c NCU=$T/ncu SHAPES=nano bash scripts/bench/kernels_profile.sh 2>&1)
  rc=$?
  [ "$rc" = 2 ] || fail "$bad: exit $rc, expected 2"
  [ "$(printf '%s\n' "$msg" | wc -l)" = 1 ] && [[ "$msg" == kernels_profile:* ]] || fail "$bad: message '$msg'"
  [ ! -f "$T/calls" ] || fail "$bad: ncu ran"
done
echo "ok"
