#!/usr/bin/env bash
# scripts/install_trained_models.sh on made-up training outputs: a model directory is replaced as
# a whole (old files gone, the card kept, train.log from train-logs.tar); incomplete outputs are
# refused with one line and exit 2 before anything is written.
set -euo pipefail
ROOT=$1
S=$ROOT/scripts/install_trained_models.sh
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "test_install_models: $*"; exit 1; }

make_from() { # DIR NAME: a complete training output for NAME
  mkdir -p "$1/r"
  for f in config.json eval.json loss.csv tokens.npy ref_logits.npy; do echo "$2 $f" >"$1/r/$f"; done
  (cd "$1/r" && tar -cf "../$2-rest.tar" config.json eval.json loss.csv tokens.npy ref_logits.npy)
  echo "weights of $2" >"$1/$2.safetensors"
  mkdir -p "$1/l" && echo "log of $2" >"$1/l/full-$2.log" && echo smoke >"$1/l/smoke-$2.log"
  (cd "$1/l" && tar -cf "../train-logs.tar" .)
  rm -rf "$1/r" "$1/l"
}

# a good install over an existing model
make_from "$T/from" m1
mkdir -p "$T/dest/m1" && echo card >"$T/dest/m1/README.md" && echo stale >"$T/dest/m1/old.bin"
bash "$S" "$T/from" "$T/dest" >/dev/null
[ "$(cat "$T/dest/m1/model.safetensors")" = "weights of m1" ] || fail "weights not installed"
[ "$(cat "$T/dest/m1/README.md")" = card ] || fail "the card was not kept"
[ "$(cat "$T/dest/m1/train.log")" = "log of m1" ] || fail "train.log is not the full run's log"
[ ! -e "$T/dest/m1/old.bin" ] || fail "a file of the old model survived"
[ "$(cat "$T/dest/m1/eval.json")" = "m1 eval.json" ] || fail "the rest was not unpacked"
[ -z "$(ls -A "$T/dest" | grep '^\.')" ] || fail "temporary directories left in DEST"

# refusals: one line on stderr, exit 2, DEST untouched
check_refused() { # WHAT EXPECTED-TEXT
  local before after rc=0 err
  before=$(cd "$T/dest" && find . -type f -exec cat {} + | md5sum)
  err=$(bash "$S" "$T/bad" "$T/dest" 2>&1 >/dev/null) || rc=$?
  [ "$rc" = 2 ] || fail "$1: exit $rc, expected 2"
  [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] || fail "$1: not one line: $err"
  grep -q "$2" <<<"$err" || fail "$1: '$err' does not say '$2'"
  after=$(cd "$T/dest" && find . -type f -exec cat {} + | md5sum)
  [ "$before" = "$after" ] || fail "$1: DEST changed"
}
rm -rf "$T/bad" && make_from "$T/bad" m1 && make_from "$T/bad" m2 && rm "$T/bad/m2-rest.tar"
check_refused "a missing rest" "m2-rest.tar: missing"
rm -rf "$T/bad" && make_from "$T/bad" m1 && : >"$T/bad/m1.safetensors"
check_refused "empty weights" "m1.safetensors: empty"
rm -rf "$T/bad" && make_from "$T/bad" m1 && (cd "$T/bad" && tar --delete -f m1-rest.tar eval.json)
check_refused "a rest without eval.json" "no member 'eval.json'"
rm -rf "$T/bad" && mkdir -p "$T/bad"
check_refused "no weights" "no NAME.safetensors"
echo "test_install_models: ok"
