#!/usr/bin/env bash
# Prepared in session 27, not run yet. An m2ml1s2 draw (the design of call1/device-call.sh) on the
# 2600-step schedule but ended by `--stop-below ${STOP:-2.095}` at the first held-out evaluation
# (every 100 steps) at or below it, then its GPU reproductions in the same call
# (scripts/draw_device_call.sh). Why (docs/trained-models.md "Session 27"): every 2600-step draw
# crossed 2.1 bits per byte in one stretch of a few hundred steps (steps 1500-2200 by seed) and had
# lost window 0's growth by step 2600 (6.1 / 7.1 / 7.6); the draws stopped before it kept growth
# (15.9, 11.4) but missed bits per byte (2.125, 2.145). This asks where in that stretch the growth
# goes. Defaults SEED=1239 (a new draw) and STOP=2.095 (the fp32 evaluation of 4 x 2048 has read
# within 0.0005 of the training's bf16 one). Training ~230-300 s to the stop, its checks ~30 s, the
# reproductions ~100 s: ~400 s.
# Install only if CPU window 0 meets growth >= 10 and bits per byte <= 2.1 and the sweep <= 1.5
# (eval.json's stopped_below says where it stopped).
# Carry .corpus.txz, .devrun.txz, data/moby-dick.txt; the tree trimmed with
# `bash scripts/device_tree.sh trim results/h200-DATE-sN`. Needs a checkout from session 27 on
# (--stop-below, scripts/draw_device_call.sh); the scripts travel with the tree, not the bundle.
set -uo pipefail
OUT=$OUT TAG=m2ml1s2 OPTIONS="--cap-memory 16 --slow-per-layer 2 --slow-range 4096:8192 \
--medium-memory 240 --medium-layers 1,2,3 --train-steps ${STEPS:-2600} --seed ${SEED:-1239} \
--stop-below ${STOP:-2.095}" bash scripts/draw_device_call.sh
