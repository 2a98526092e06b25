#!/usr/bin/env bash
# Session 24 call 5: what --deterministic (math attention, deterministic algorithms) costs in
# training speed: 150 steps of the m2x1s192 design with and without it, one after the other
# (each alone on the GPU, as a training call runs), and whether the deterministic run is
# still repeatable at 150 steps (its hash against a second deterministic run's).
# Carried: .corpus.txz, data/moby-dick.txt; the tree trimmed.
mkdir -p /tmp/c && tar -xJf .corpus.txz -C /tmp/c && gzip -1 -n -f /tmp/c/*.txt
D="--cap-memory 16 --slow-per-layer 1 --slow-range 4096:8192 --medium-memory 240,192"
for t in det1 det2 plain; do
  extra=--deterministic; [ "$t" = plain ] && extra=
  timeout 100 python3 scripts/train_fixture_models.py --model nemotronh-m2-tiny --out /tmp/o$t \
    --work /tmp/w$t --corpus /tmp/c $D --warmup 20 --train-steps 150 $extra \
    >"$OUT/$t.log" 2>&1
  echo "$t exit $?"
done
grep -H "fp32 weights sha256\|trained \|step   150\|Error" "$OUT"/*.log | cut -c1-200
