#!/usr/bin/env bash
# Prepared in session 24, NOT RUN (~150 s): is training repeatable at full speed with
# `--deterministic cudnn` (cuDNN's attention, torch strict; new in session 24)? Session 24's
# call 5 found `--deterministic` (math attention) repeatable but 2.65x slower (53 s against 20 s
# for 150 steps), too slow for a 3500-step draw in one call. Two runs of 150 steps with cudnn,
# one after the other; equal sha256 and ~20 s each would let a good draw be retrained exactly.
# A strict run stops at the first operation without a deterministic form: its log names it.
# Carried: .corpus.txz, data/moby-dick.txt; the tree trimmed.
mkdir -p /tmp/c && tar -xJf .corpus.txz -C /tmp/c && gzip -1 -n -f /tmp/c/*.txt
D="--cap-memory 16 --slow-per-layer 2 --slow-range 4096:8192 --medium-memory 240 --medium-layers 1,2,3"
for t in cudnn1 cudnn2; do
  timeout 100 python3 scripts/train_fixture_models.py --model nemotronh-m2-tiny --out /tmp/o$t \
    --work /tmp/w$t --corpus /tmp/c $D --warmup 20 --train-steps 150 --deterministic cudnn \
    >"$OUT/$t.log" 2>&1
  echo "$t exit $?"
done
grep -H "fp32 weights sha256\|trained \|step   150\|Error\|rror:" "$OUT"/*.log | cut -c1-240
