#!/usr/bin/env bash
# scripts/train_device_call.sh with stand-ins for the bundle's replayssm and for
# train_fixture_session.sh: the bundle is unpacked, the token stream rebuilt from the held-out
# text, the session runs with the caller's environment and its log lands in OUT/session.log,
# its exit status comes back; a missing OUT, bundle or text exits 2 before anything runs.
set -uo pipefail
ROOT=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "test_train_device_call: FAIL: $*"; exit 1; }
R=$T/tree
mkdir -p "$R/scripts" "$R/data" "$T/pack/.devrun/bin" "$T/pack/.devrun/lib"
cp "$ROOT/scripts/train_device_call.sh" "$R/scripts/"
cat >"$T/pack/.devrun/bin/replayssm" <<'SH'
#!/bin/sh
# stand-in: replayssm tokens --force --out FILE TEXT -> FILE holds "tokens of TEXT"
[ "$1" = tokens ] && [ "$2" = --force ] && [ "$3" = --out ] || exit 9
echo "tokens of $5" >"$4"
SH
chmod +x "$T/pack/.devrun/bin/replayssm"
tar -C "$T/pack" -cJf "$R/.devrun.txz" .devrun
cat >"$R/scripts/train_fixture_session.sh" <<'SH'
echo "session ONLY=$ONLY VARIANTS=$VARIANTS tokens: $(cat data/moby-dick.tok.zst)"
exit 3
SH
echo "Call me Ishmael." >"$R/data/moby-dick.txt"

out=$(cd "$R" && OUT=$T/out ONLY=nemotronh-m2-tiny VARIANTS="a=--x 1" bash scripts/train_device_call.sh 2>&1); rc=$?
[ $rc = 3 ] || fail "exit $rc, expected the session's 3: $out"
[ -x "$R/.devrun/bin/replayssm" ] || fail "the bundle was not unpacked"
grep -qx "tokens of data/moby-dick.txt" "$R/data/moby-dick.tok.zst" || fail "token stream: $(cat "$R/data/moby-dick.tok.zst")"
grep -qx "session ONLY=nemotronh-m2-tiny VARIANTS=a=--x 1 tokens: tokens of data/moby-dick.txt" "$T/out/session.log" ||
  fail "session.log: $(cat "$T/out/session.log")"
grep -q "train_fixture_session.sh exit 3" <<<"$out" && grep -q "^session ONLY=" <<<"$out" || fail "output: $out"

# a stale .devrun/ (an earlier call's, kept by the device) is replaced by the carried bundle
echo stale >"$R/.devrun/bin/replayssm"
(cd "$R" && OUT=$T/out3 bash scripts/train_device_call.sh >/dev/null 2>&1)
grep -q "stand-in" "$R/.devrun/bin/replayssm" || fail "a stale .devrun/ was used"
(cd "$R" && bash scripts/train_device_call.sh >/dev/null 2>&1); [ $? = 2 ] || fail "no OUT not refused"
rm -rf "$R/.devrun" "$R/.devrun.txz"
(cd "$R" && OUT=$T/out2 bash scripts/train_device_call.sh >/dev/null 2>&1); [ $? = 2 ] || fail "no bundle not refused"
[ ! -e "$T/out2/session.log" ] || fail "the session ran without a bundle"
echo "test_train_device_call: passed"
