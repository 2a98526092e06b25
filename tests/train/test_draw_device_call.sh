#!/usr/bin/env bash
# scripts/draw_device_call.sh with stand-ins for train_device_call.sh, install_trained_models.sh
# and gpu_reproductions.sh: the training gets the design as one VARIANTS entry, from scratch,
# with its drift checks; its weights are installed into data/models/MODEL and the reproductions
# run on that model with the time left, their exit status the call's; no weights -> exit 1 and
# no reproductions; bad inputs exit 2 before anything runs; no time left -> no reproductions.
set -uo pipefail
ROOT=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "test_draw_device_call: FAIL: $*"; exit 1; }
R=$T/tree
mkdir -p "$R/scripts" "$R/data/models/nemotronh-m2-tiny" "$R/data/models/qwen35-gdn-tiny"
cp "$ROOT/scripts/draw_device_call.sh" "$R/scripts/"
echo old >"$R/data/models/nemotronh-m2-tiny/model.safetensors"
# stand-in training: records its environment, writes OUT/TAG/MODEL.safetensors unless NO_WEIGHTS
cat >"$R/scripts/train_device_call.sh" <<'SH'
echo "train ONLY=$ONLY SKIP_SMOKE=$SKIP_SMOKE M2_INIT_FROM=[${M2_INIT_FROM-unset}] GDN_INIT_FROM=[${GDN_INIT_FROM-unset}] DRIFT_CHECK=$DRIFT_CHECK CONTEXT_CHECK=$CONTEXT_CHECK TRAIN_SECONDS=$TRAIN_SECONDS CALL_TIMEOUT=$CALL_TIMEOUT VARIANTS=$VARIANTS" >"$OUT/train.env"
tag=${VARIANTS%%=*}
mkdir -p "$OUT/$tag"
[ -n "${NO_WEIGHTS:-}" ] || echo "weights of $tag" >"$OUT/$tag/$ONLY.safetensors"
exit 0
SH
cat >"$R/scripts/install_trained_models.sh" <<'SH'
# stand-in: FROM DEST -> DEST/MODEL/model.safetensors from FROM/MODEL.safetensors
for f in "$1"/*.safetensors; do m=$(basename "$f" .safetensors); mkdir -p "$2/$m"; cp "$f" "$2/$m/model.safetensors"; done
SH
cat >"$R/scripts/gpu_reproductions.sh" <<'SH'
echo "repro ONLY=$ONLY OUT=$OUT STEPS_KL=$STEPS_KL reads: $(cat data/models/$ONLY/model.safetensors)" >"$REPRO_LOG"
exit "${REPRO_RC:-0}"
SH
run() { (cd "$R" && REPRO_LOG=$T/repro.log bash scripts/draw_device_call.sh) >"$T/stdout" 2>&1; }

mkdir -p "$T/o1"
OUT=$T/o1 TAG=m2x OPTIONS="--cap-memory 16 --seed 9" run; rc=$?
[ $rc = 0 ] || fail "exit $rc: $(cat "$T/stdout")"
grep -qx "train ONLY=nemotronh-m2-tiny SKIP_SMOKE=1 M2_INIT_FROM=\[\] GDN_INIT_FROM=\[\] DRIFT_CHECK=1 CONTEXT_CHECK=0 TRAIN_SECONDS=420 CALL_TIMEOUT=470 VARIANTS=m2x=--cap-memory 16 --seed 9" "$T/o1/train.env" ||
  fail "training environment: $(cat "$T/o1/train.env")"
grep -qx "weights of m2x" "$R/data/models/nemotronh-m2-tiny/model.safetensors" || fail "the trained weights were not installed"
grep -qx "repro ONLY=nemotronh-m2-tiny OUT=$T/o1/repro STEPS_KL=32768 reads: weights of m2x" "$T/repro.log" ||
  fail "reproductions: $(cat "$T/repro.log")"

# the reproductions' status is the call's; MODEL picks the model
mkdir -p "$T/o2"; rm -f "$T/repro.log"
OUT=$T/o2 TAG=g1 OPTIONS="--seed 3" MODEL=qwen35-gdn-tiny REPRO_RC=124 run; rc=$?
[ $rc = 124 ] || fail "reproductions' exit 124 came back as $rc"
grep -q "^repro ONLY=qwen35-gdn-tiny .* reads: weights of g1$" "$T/repro.log" || fail "MODEL: $(cat "$T/repro.log")"

# no weights: exit 1, no reproductions, the installed model untouched
mkdir -p "$T/o3"; rm -f "$T/repro.log"; echo kept >"$R/data/models/nemotronh-m2-tiny/model.safetensors"
OUT=$T/o3 TAG=m2y OPTIONS="--seed 4" NO_WEIGHTS=1 run; rc=$?
[ $rc = 1 ] || fail "no weights: exit $rc, expected 1"
[ ! -e "$T/repro.log" ] || fail "the reproductions ran without weights"
grep -qx kept "$R/data/models/nemotronh-m2-tiny/model.safetensors" || fail "no weights: the installed model changed"

# no time left for the reproductions: exit 124, none run
mkdir -p "$T/o4"
# (bash starts its SECONDS from the environment's: a call 575 s old, of the default 590)
OUT=$T/o4 TAG=m2z OPTIONS="--seed 5" SECONDS=575 run; rc=$?
[ $rc = 124 ] && [ ! -e "$T/repro.log" ] && grep -q "no time for the reproductions" "$T/stdout" ||
  fail "15 s left: exit $rc, $(cat "$T/stdout")"

# bad inputs: exit 2, one line, nothing run
for bad in "TAG=" "TAG=a/b" "OPTIONS=" "MODEL=other" "CALL_LIMIT=x" "OUT=" "TRAIN_LIMIT=40" "TRAIN_LIMIT=600"; do
  mkdir -p "$T/o5"; rm -f "$T/o5/train.env"
  env OUT="$T/o5" TAG=ok OPTIONS="--seed 1" "$bad" bash -c 'cd "$0" && bash scripts/draw_device_call.sh' "$R" >"$T/stdout" 2>&1; rc=$?
  [ $rc = 2 ] || fail "$bad: exit $rc, expected 2"
  [ "$(wc -l <"$T/stdout")" = 1 ] && grep -q "^draw_device_call: " "$T/stdout" || fail "$bad: message $(cat "$T/stdout")"
  [ ! -e "$T/o5/train.env" ] || fail "$bad: the training ran"
done
echo "test_draw_device_call: passed"
