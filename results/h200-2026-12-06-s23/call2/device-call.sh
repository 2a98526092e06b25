#!/usr/bin/env bash
# Run as session 23, call 2 (as written in session 22: results/h200-2026-12-06-s22/prepared/). Prepared in session 22 (234 s of device time were left then). Design m2x1s208 alone, from
# scratch, 450 s: fixed heads of 264 and 208 tokens + one slow head a layer (4096..8192), five
# learned heads capped at 16 -- between session 21's m2x1s (288, 224: shared growth 22.4, window
# sweep 2.58 rising with L) and session 22's m2x1s192 (240, 192: growth 7.8, pooled over 4 windows
# 4.8, sweep 1.15). Along this axis the growth and sweep bars pull apart (docs/trained-models.md,
# "Session 22"); this is the point where both might hold. Carried as session 22's calls
# (.corpus.txz, .devrun.txz, data/moby-dick.txt; the tree trimmed by scripts/device_tree.sh trim).
OUT=$OUT ONLY=nemotronh-m2-tiny SKIP_SMOKE=1 M2_INIT_FROM= DRIFT_CHECK=1 CONTEXT_CHECK=1 \
  CONTEXT_TIMEOUT=80 TRAIN_SECONDS=450 CALL_TIMEOUT=580 \
  VARIANTS="m2x1s208=--cap-memory 16 --slow-per-layer 1 --slow-range 4096:8192 --medium-memory 264,208" \
  bash scripts/train_device_call.sh
