#!/usr/bin/env bash
# session 17, call 5 (issue 15): two Mamba-2 designs with a fixed medium head between session
# 16's 128 (split growth 2.0x, shared growth 4.9x) and 256 tokens (16.3x, 5.1x), trained at once
# from scratch as session 16's; the drift and context checks on the GPU
set -x
date -u
tar -xJf .devrun.txz
L=$PWD/.devrun/lib:/usr/local/cuda/lib64
LD_LIBRARY_PATH=$L .devrun/bin/replayssm tokens --force --out data/moby-dick.tok.zst data/moby-dick.txt
ONLY=nemotronh-m2-tiny SKIP_SMOKE=1 M2_INIT_FROM= DRIFT_CHECK=1 CONTEXT_CHECK=1 CONTEXT_TIMEOUT=90 \
  TRAIN_SECONDS=330 OUT=$OUT \
  VARIANTS="md160=--cap-memory 16 --slow-range 4096:8192 --medium-memory 160;md192=--cap-memory 16 --slow-range 4096:8192 --medium-memory 192" \
  timeout -k 10 500 bash scripts/train_fixture_session.sh > $OUT/session.log 2>&1
echo "rc $?"
tail -n 60 $OUT/session.log
date -u
