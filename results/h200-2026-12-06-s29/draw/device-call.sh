#!/usr/bin/env bash
# Session 29, issue 15: one more m2ml1s2 draw (a new seed) stopped at the first held-out
# evaluation <= 2.095 bits per byte, with its GPU drift and sweep checks and reproductions in the
# same call (scripts/draw_device_call.sh; session 28's call 2 with seed 1240). Carry
# .devrun-min.txz (MIN=1 bundle of HEAD), .corpus.txz, data/moby-dick.txt; trimmed tree.
set -u
cd "$(dirname "$0")/../../.."
: "${OUT:?set OUT}"
cp .devrun-min.txz .devrun.txz || { echo "no .devrun-min.txz"; exit 2; }
OUT=$OUT TAG=m2ml1s2 OPTIONS="--cap-memory 16 --slow-per-layer 2 --slow-range 4096:8192 --medium-memory 240 --medium-layers 1,2,3 --train-steps 2600 --seed ${SEED:-1240} --stop-below 2.095" \
  CALL_LIMIT=${CALL_LIMIT:-590} TRAIN_LIMIT=${TRAIN_LIMIT:-400} bash scripts/draw_device_call.sh
