#!/usr/bin/env bash
# session 16, call 1: two Mamba-2 designs with a fixed medium head, trained at once from scratch
set -x
date -u
tar -xJf .devrun.txz
L=$PWD/.devrun/lib:/usr/local/cuda/lib64
LD_LIBRARY_PATH=$L .devrun/bin/replayssm tokens --force --out data/moby-dick.tok.zst data/moby-dick.txt
ONLY=nemotronh-m2-tiny SKIP_SMOKE=1 M2_INIT_FROM= DRIFT_CHECK=1 CONTEXT_CHECK=1 CONTEXT_TIMEOUT=90 \
  TRAIN_SECONDS=330 OUT=$OUT \
  VARIANTS="m8=--cap-memory 16 --slow-range 4096:8192 --medium-memory 8;m10=--cap-memory 10 --cap-weight 0.5 --slow-range 4096:8192 --medium-memory 10" \
  timeout -k 10 570 bash scripts/train_fixture_session.sh > $OUT/session.log 2>&1
echo "rc $?"
tail -n 60 $OUT/session.log
date -u
