#!/usr/bin/env bash
# Prepared in session 24, NOT RUN, the fallback if the longer m2ml1s2 (device-call-m2ml1s2.sh)
# loses its growth (< 10): its fixed head at 288 tokens instead of 240. Probes of m2ml1s2
# (results/cpu-2026-12-06-s24/probe-heads-m2ml1s2.txt) put its growth, flat split and flat sweep
# in that one head: its accumulated roundings rise for ~4 memories (more growth with a longer
# head) while its split error fills in ~1 (split growth rises too; session 21: 224-288, 22.4 / 2.67).
# STEPS steps (default 2600), CALL_TIMEOUT 575, as device-call-m2ml1s2.sh. If it meets the bars: the reproductions
# (results/h200-2026-12-06-s23/prepared/device-call-repro.sh, FROM=.m2init/sNNout/m2ml1s288).
# Carry .corpus.txz, .devrun.txz, data/moby-dick.txt; the tree trimmed with
# `bash scripts/device_tree.sh trim results/h200-DATE-sN`. A new draw: add --seed S.
OUT=$OUT ONLY=nemotronh-m2-tiny SKIP_SMOKE=1 M2_INIT_FROM= DRIFT_CHECK=1 CONTEXT_CHECK=1 \
  CONTEXT_TIMEOUT=80 TRAIN_SECONDS=500 CALL_TIMEOUT=575 TAIL_LINES=40 \
  VARIANTS="m2ml1s288=--cap-memory 16 --slow-per-layer 2 --slow-range 4096:8192 --medium-memory 288 --medium-layers 1,2,3 --train-steps ${STEPS:-2600}" \
  bash scripts/train_device_call.sh
