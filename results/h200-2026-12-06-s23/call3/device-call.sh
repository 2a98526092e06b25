#!/usr/bin/env bash
# session 23, call 3 (issue 15): m2x1s192 once more, on a schedule of steps (--train-steps, new in
# session 23) instead of the clock, so that a run can be trained again in a later session: the
# same design twice under the clock (session 22 call 2, session 23 call 1; 216.5M and 225.3M
# tokens) ended 5 and 3 of the 7 bars apart, and the better one was lost with its machine.
# 3300 steps ~ session 22's good run (216.5M tokens = 3304 steps); --train-seconds 470 only
# stops a run that is too slow (eval.json says so). Then a determinism check: two concurrent
# runs of the same design for 30 steps (warm-up 10); their fp32 weights' sha256 (eval.json,
# new in session 23) equal means a run of steps is repeatable on this machine.
# Carried: .corpus.txz, .devrun.txz, data/moby-dick.txt; the tree trimmed as call 1.
D="--cap-memory 16 --slow-per-layer 1 --slow-range 4096:8192 --medium-memory 240,192"
OUT=$OUT/full ONLY=nemotronh-m2-tiny SKIP_SMOKE=1 M2_INIT_FROM= DRIFT_CHECK=1 CONTEXT_CHECK=1 \
  CONTEXT_TIMEOUT=80 TRAIN_SECONDS=470 CALL_TIMEOUT=515 TAIL_LINES=40 \
  VARIANTS="m2x1s192n=$D --train-steps 3300" \
  bash scripts/train_device_call.sh
echo "call3: full run exit $?"
OUT=$OUT/det ONLY=nemotronh-m2-tiny SKIP_SMOKE=1 M2_INIT_FROM= WORK_ROOT=/tmp/det \
  TRAIN_SECONDS=120 CALL_TIMEOUT=60 TAIL_LINES=0 \
  VARIANTS="det1=$D --warmup 10 --train-steps 30;det2=$D --warmup 10 --train-steps 30" \
  bash scripts/train_device_call.sh
echo "call3: determinism runs exit $?"
for t in det1 det2; do
  tar -xOf "$OUT/det/$t/nemotronh-m2-tiny-rest.tar" eval.json 2>/dev/null |
    python3 -c "import json,sys; e=json.load(sys.stdin); print('$t', e.get('steps'), e.get('fp32_weights_sha256'))"
  sha256sum "$OUT/det/$t/nemotronh-m2-tiny.safetensors"
  rm -f "$OUT/det/$t/nemotronh-m2-tiny.safetensors" "$OUT/det/$t/train-logs.tar"
done
grep -h "fp32 weights sha256\|trained .* steps" /tmp/det/rssm-logs/*.log 2>/dev/null
