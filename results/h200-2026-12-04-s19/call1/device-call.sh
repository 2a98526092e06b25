#!/usr/bin/env bash
# session 19, call 1 (issue 15): Mamba-2 with four slow heads a layer (4096..8192) and learned
# heads capped at 16, from scratch, 450 s each at once:
#   s4m168     a fixed medium head of 168 tokens (s4m160 had shared growth 9.0 at 160; the rough
#              model of docs/next-session.md puts 10-11 at 160-176)
#   s4m160s12  fixed heads of 160 and 12 tokens (the 12-token head that continuations grew,
#              fixed, for bits per byte without a learned medium head)
# Carried: .corpus.txz, .devrun.txz (MIN=1 bundle), data/moby-dick.txt; the tree trimmed by
# scripts/device_tree.sh trim results/h200-2026-12-04-s19.
D="--cap-memory 16 --slow-range 4096:8192 --slow-per-layer 4"
OUT=$OUT ONLY=nemotronh-m2-tiny SKIP_SMOKE=1 M2_INIT_FROM= DRIFT_CHECK=1 CONTEXT_CHECK=1 \
  CONTEXT_TIMEOUT=80 TRAIN_SECONDS=450 \
  VARIANTS="s4m168=$D --medium-memory 168;s4m160s12=$D --medium-memory 160,12" \
  bash scripts/train_device_call.sh
