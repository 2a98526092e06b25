#!/usr/bin/env bash
# Session 24 call 1 (prepared in session 23): a draw of m2x1s192 whose fixed heads (240 and 192 tokens) sit
# in the SSM layers after the first only (--medium-layers 1,2,3, new in session 23; layer 0's
# heads 5 and 6 learned under the cap). Why: probes of session 23's call-3 weights
# (results/cpu-2026-12-06-s23/probe-layers-m2x1s192n.txt) put both the split sweep's rise with L
# and most of the shared growth in layer 0's fixed heads; shortening them left growth 3.5 (the
# probe was not retrained). Whether a model trained without them keeps growth >= 10 is the
# question. On 3300 steps, CALL_TIMEOUT 560 so that the GPU checks finish (session 23's call 3
# was cut at 515). Carry .corpus.txz, .devrun.txz, data/moby-dick.txt; the tree trimmed with
# `bash scripts/device_tree.sh trim results/h200-DATE-sN`.
OUT=$OUT ONLY=nemotronh-m2-tiny SKIP_SMOKE=1 M2_INIT_FROM= DRIFT_CHECK=1 CONTEXT_CHECK=1 \
  CONTEXT_TIMEOUT=80 TRAIN_SECONDS=470 CALL_TIMEOUT=560 TAIL_LINES=40 \
  VARIANTS="m2ml123=--cap-memory 16 --slow-per-layer 1 --slow-range 4096:8192 --medium-memory 240,192 --medium-layers 1,2,3 --train-steps 3300" \
  bash scripts/train_device_call.sh
