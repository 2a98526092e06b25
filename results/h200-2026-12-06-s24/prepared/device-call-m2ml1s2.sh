#!/usr/bin/env bash
# Prepared in session 24, NOT RUN: m2ml1s2 trained to the end of a longer schedule (session 24's
# call 6 trained it for 1500 steps only, 98M tokens: every drift bar and the sweep met on the GPU
# check, growth 11.4, split 2.54, ratio 20.8, sweep 1.12, at 2.145 bits per byte). STEPS steps,
# default 2600 (~350 s of training, ~450 s of wall time), not 3500: the 3300- and 3500-step runs
# of this session each grew one learned head to ~12.5 tokens on Moby-Dick, and probes put the
# lost growth there (results/cpu-2026-12-06-s24/probe-learned-m2ml123s2.txt: 3.6 with it, 15 with
# it shortened), while their held-out bits per byte were no better after ~2000 steps (m2ml123s2:
# 2.067 at 2000, 2.076 at 3500). STEPS=3500: the schedule of m2ml123s2 (2.076).
# If its GPU check meets bits per byte and the drift bars: within 30 s,
# results/h200-2026-12-06-s23/prepared/device-call-repro.sh with FROM=.m2init/sNNout/m2ml1s2
# (the returned files copied there first).
# Carry .corpus.txz, .devrun.txz, data/moby-dick.txt; the tree trimmed with
# `bash scripts/device_tree.sh trim results/h200-DATE-sN`. A new draw: add --seed S.
OUT=$OUT ONLY=nemotronh-m2-tiny SKIP_SMOKE=1 M2_INIT_FROM= DRIFT_CHECK=1 CONTEXT_CHECK=1 \
  CONTEXT_TIMEOUT=80 TRAIN_SECONDS=500 CALL_TIMEOUT=575 TAIL_LINES=40 \
  VARIANTS="m2ml1s2=--cap-memory 16 --slow-per-layer 2 --slow-range 4096:8192 --medium-memory 240 --medium-layers 1,2,3 --train-steps ${STEPS:-2600}" \
  bash scripts/train_device_call.sh
