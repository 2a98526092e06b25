#!/usr/bin/env bash
# Session 24 call 4: is training repeatable with --deterministic? Call 3 ran session 23's prepared
# check (results/h200-2026-12-06-s23/prepared/device-call-determinism.sh): two concurrent 12-step
# runs differed, the one warning cuDNN's attention backward. This is that check again after
# --deterministic chose the math attention, the runs one after the other (its first try ran them
# at once: one ran out of GPU memory, the math attention's scores at 16384 positions).
# Carried: .corpus.txz, data/moby-dick.txt; the tree trimmed.
mkdir -p /tmp/c && tar -xJf .corpus.txz -C /tmp/c && gzip -1 -n -f /tmp/c/*.txt
D="--cap-memory 16 --slow-per-layer 1 --slow-range 4096:8192 --medium-memory 240,192"
for t in a b; do
  timeout 45 python3 scripts/train_fixture_models.py --model nemotronh-m2-tiny --out /tmp/o$t \
    --work /tmp/w$t --corpus /tmp/c $D --warmup 5 --train-steps 12 --deterministic \
    >"$OUT/det-$t.log" 2>&1
done
grep -h "fp32 weights sha256\|trained \|step    1 \|etermini" "$OUT"/det-*.log | cut -c1-300
