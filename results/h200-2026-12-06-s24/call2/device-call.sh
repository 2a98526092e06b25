#!/usr/bin/env bash
# Session 24 call 2 (issue 15): m2ml123 (call 1: fixed heads 240 and 192 in SSM layers 1-3 only)
# with TWO slow heads a layer (4096..8192) and 3500 steps. Why: call 1 met the window sweep for
# the first time with a tight interval (1.143 [1.04, 1.38]; removing layer 0's fixed heads removed
# the rise with L, as session 23's probes said), but its shared growth was 6.1: the shared curve
# saturates by ~512 tokens (the medium heads' accumulation) and the one slow head a layer adds
# little. A second slow head a layer is the lever for growth; 200 more steps for bits per byte
# (call 1: 2.107, the held-out evaluation moving +-0.02 between the last evaluations).
# Carry .corpus.txz, .devrun.txz, data/moby-dick.txt; the tree trimmed with
# `bash scripts/device_tree.sh trim results/h200-2026-12-06-s24`.
OUT=$OUT ONLY=nemotronh-m2-tiny SKIP_SMOKE=1 M2_INIT_FROM= DRIFT_CHECK=1 CONTEXT_CHECK=1 \
  CONTEXT_TIMEOUT=80 TRAIN_SECONDS=500 CALL_TIMEOUT=575 TAIL_LINES=40 \
  VARIANTS="m2ml123s2=--cap-memory 16 --slow-per-layer 2 --slow-range 4096:8192 --medium-memory 240,192 --medium-layers 1,2,3 --train-steps 3500" \
  bash scripts/train_device_call.sh
