#!/usr/bin/env bash
# scripts/device_tree.sh in a scratch git repository: trim moves the installed weights,
# tests/fixtures and results/ (but the KEEP folder) out and reports the bytes left; a second trim
# is refused; restore refuses to overwrite a path that came back and moves nothing then; restore
# puts every file back byte for byte and leaves git status clean; bad KEEP and usage exit 2.
set -uo pipefail
ROOT=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "test_device_tree: FAIL: $*"; exit 1; }
R=$T/repo
mkdir -p "$R/scripts" "$R/data/models/m1" "$R/data/models/m2" "$R/tests/fixtures" "$R/results/old" "$R/results/call"
cp "$ROOT/scripts/device_tree.sh" "$R/scripts/"
cp "$ROOT/.gitignore" "$R/"
head -c 3000 /dev/urandom >"$R/data/models/m1/model.safetensors"
head -c 2000 /dev/urandom >"$R/data/models/m2/model.safetensors"
echo '{}' >"$R/data/models/m1/config.json"
head -c 500 /dev/urandom >"$R/tests/fixtures/f.bin"
echo old >"$R/results/old/a.txt"
echo call >"$R/results/call/device-call.sh"
git -C "$R" init -q && git -C "$R" add -A && git -C "$R" -c user.email=t@t -c user.name=t commit -qm t
before=$(cd "$R" && find data tests results -type f | sort | xargs sha256sum)

out=$(bash "$R/scripts/device_tree.sh" trim results/call/ 2>&1) || fail "trim: $out"
for p in data/models/m1/model.safetensors data/models/m2/model.safetensors tests/fixtures results/old; do
  [ ! -e "$R/$p" ] || fail "trim left $p"
  [ -e "$R/.device-trim/tree/$p" ] || fail "trim lost $p"
done
[ -f "$R/results/call/device-call.sh" ] && [ -f "$R/data/models/m1/config.json" ] || fail "trim moved a kept path"
# left: config.json (3) + device-call.sh (5) + device_tree.sh + .gitignore
want=$(( 3 + 5 + $(stat -c %s "$R/scripts/device_tree.sh") + $(stat -c %s "$R/.gitignore") ))
grep -q "moved 4 path(s) to .device-trim/; the tree now carries $want bytes" <<<"$out" || fail "trim's report: $out (expected $want bytes)"
[ -z "$(git -C "$R" status --porcelain --untracked-files=all | grep -v '^ D')" ] || fail ".device-trim/ is not ignored"
bash "$R/scripts/device_tree.sh" status >/dev/null && fail "status: trimmed tree reported as clean"

bash "$R/scripts/device_tree.sh" trim >/dev/null 2>&1; [ $? = 2 ] || fail "second trim not refused"
echo back >"$R/results/old"
out=$(bash "$R/scripts/device_tree.sh" restore 2>&1); rc=$?
[ $rc = 2 ] && grep -q "results/old exists again" <<<"$out" || fail "restore over an existing path: rc $rc, $out"
[ ! -e "$R/data/models/m1/model.safetensors" ] || fail "a refused restore moved files"
rm "$R/results/old"
out=$(bash "$R/scripts/device_tree.sh" restore 2>&1) || fail "restore: $out"
grep -q "restored 4 path(s)" <<<"$out" || fail "restore's report: $out"
after=$(cd "$R" && find data tests results -type f | sort | xargs sha256sum)
[ "$before" = "$after" ] || fail "restored files differ"
[ ! -e "$R/.device-trim" ] || fail ".device-trim/ left behind"
[ -z "$(git -C "$R" status --porcelain)" ] || fail "git status not clean after restore: $(git -C "$R" status --porcelain)"
out=$(bash "$R/scripts/device_tree.sh" status) && grep -q "nothing trimmed" <<<"$out" || fail "status after restore: $out"

bash "$R/scripts/device_tree.sh" restore >/dev/null 2>&1; [ $? = 2 ] || fail "restore with nothing trimmed not refused"
bash "$R/scripts/device_tree.sh" trim results/none >/dev/null 2>&1; [ $? = 2 ] || fail "missing KEEP not refused"
[ -e "$R/data/models/m1/model.safetensors" ] || fail "a refused trim moved files"
bash "$R/scripts/device_tree.sh" push >/dev/null 2>&1; [ $? = 2 ] || fail "unknown command not refused"
echo "test_device_tree: passed"
