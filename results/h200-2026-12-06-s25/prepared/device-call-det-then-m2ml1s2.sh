#!/usr/bin/env bash
# Prepared in session 25, NOT RUN (no device time that session): session 24's
# prepared det-cudnn and m2ml1s2 calls in one, saving a start: (a) is training repeatable at
# full speed with `--deterministic cudnn`? Two runs of 100 steps of the m2ml1s2 design, one after
# the other (prepared/device-call-det-cudnn.sh at 100 steps instead of 150, to fit); (b) the
# m2ml1s2 draw on 2600 steps (prepared/device-call-m2ml1s2.sh), with --deterministic cudnn only
# if (a)'s runs both finished, gave equal sha256 and trained at <= 0.15 s a step (plain: ~0.133), else as prepared.
# CALL_TIMEOUT: 585 s less the seconds (a) took (~60 s).
# Carry .corpus.txz, .devrun.txz, data/moby-dick.txt; the tree trimmed.
set -uo pipefail
mkdir -p /tmp/c && tar -xJf .corpus.txz -C /tmp/c && gzip -1 -n -f /tmp/c/*.txt
D="--cap-memory 16 --slow-per-layer 2 --slow-range 4096:8192 --medium-memory 240 --medium-layers 1,2,3"
# The second run only when the first finished (strict mode runs its evaluation and head memories
# too) at full speed, so that a slow strict mode costs at most ~45 s of the call.
seconds_of() { grep -ho "trained 100 steps ([^)]*) in [0-9.]* s" "$1" | awk '{print $(NF-1)}'; }
hash_of() { grep -ho "fp32 weights sha256 [0-9a-f]*" "$1"; }
DET=
for t in cudnn1 cudnn2; do
  timeout 40 python3 scripts/train_fixture_models.py --model nemotronh-m2-tiny --out /tmp/o$t \
    --work /tmp/w$t --corpus /tmp/c $D --warmup 20 --train-steps 100 --deterministic cudnn \
    >"$OUT/$t.log" 2>&1
  rc=$?; s=$(seconds_of "$OUT/$t.log")
  echo "$t exit $rc, trained in ${s:-?} s, $(hash_of "$OUT/$t.log")"
  [ $rc = 0 ] && [ -n "$s" ] && awk -v s="$s" 'BEGIN{exit !(s <= 15)}' || break
  [ $t = cudnn2 ] && [ "$(hash_of "$OUT/cudnn1.log")" = "$(hash_of "$OUT/cudnn2.log")" ] && DET=cudnn
done
grep -H "Error\|rror:" "$OUT"/cudnn*.log | cut -c1-240
left=$((585 - SECONDS))
echo "determinism check: DET=${DET:-none} after $SECONDS s; CALL_TIMEOUT $left"
OUT=$OUT ONLY=nemotronh-m2-tiny SKIP_SMOKE=1 M2_INIT_FROM= DRIFT_CHECK=1 CONTEXT_CHECK=1 \
  CONTEXT_TIMEOUT=80 TRAIN_SECONDS=440 CALL_TIMEOUT=$left TAIL_LINES=40 \
  VARIANTS="m2ml1s2=--cap-memory 16 --slow-per-layer 2 --slow-range 4096:8192 --medium-memory 240 --medium-layers 1,2,3 --train-steps ${STEPS:-2600}${DET:+ --deterministic $DET}" \
  bash scripts/train_device_call.sh
