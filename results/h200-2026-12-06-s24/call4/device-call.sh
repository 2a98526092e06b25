#!/usr/bin/env bash
# Session 24 call 4: call 3.s check (results/h200-2026-12-06-s23/prepared/device-call-determinism.sh) again after --deterministic chose the math attention (run one after the
# other: two math attentions at 16384 positions at once ran out of GPU memory, session 24's first try): is training repeatable
# with --deterministic (new in session 23)? Call 3's two concurrent 30-step runs of one design,
# seed and --train-steps had different fp32 weights (train bpb at step 25 3.80705 / 3.8072).
# Two concurrent 12-step runs (warm-up 5) with --deterministic, straight through the training
# script (no session script, no bundle: the time), each stopped after 45 s; the fp32 hash is
# logged before the evaluations. Carried: .corpus.txz, data/moby-dick.txt; the tree trimmed.
mkdir -p /tmp/c && tar -xJf .corpus.txz -C /tmp/c && gzip -1 -n -f /tmp/c/*.txt
D="--cap-memory 16 --slow-per-layer 1 --slow-range 4096:8192 --medium-memory 240,192"
for t in a b; do
  timeout 45 python3 scripts/train_fixture_models.py --model nemotronh-m2-tiny --out /tmp/o$t \
    --work /tmp/w$t --corpus /tmp/c $D --warmup 5 --train-steps 12 --deterministic \
    >"$OUT/det-$t.log" 2>&1
done
grep -h "fp32 weights sha256\|trained \|step    1 \|etermini" "$OUT"/det-*.log | cut -c1-300
