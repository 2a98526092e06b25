#!/usr/bin/env bash
# session 16, call 2: two Mamba-2 designs with a fixed medium head of 128 / 256 tokens, trained at
# once from scratch; drift + context checks, and the window-sweep proxy (split L=4, 16, 64, 1 x 8192)
set -x
date -u
tar -xJf .devrun.txz
L=$PWD/.devrun/lib:/usr/local/cuda/lib64
LD_LIBRARY_PATH=$L .devrun/bin/replayssm tokens --force --out data/moby-dick.tok.zst data/moby-dick.txt
ONLY=nemotronh-m2-tiny SKIP_SMOKE=1 M2_INIT_FROM= DRIFT_CHECK=1 CONTEXT_CHECK=1 CONTEXT_TIMEOUT=90 \
  TRAIN_SECONDS=330 OUT=$OUT \
  VARIANTS="md256=--cap-memory 16 --slow-range 4096:8192 --medium-memory 256;md128=--cap-memory 16 --slow-range 4096:8192 --medium-memory 128" \
  timeout -k 10 520 bash scripts/train_fixture_session.sh > $OUT/session.log 2>&1
echo "rc $?"
for v in md256 md128; do
  d=/tmp/rssm-drift/nemotronh-m2-tiny-$v/nemotronh-m2-tiny
  [ -d $d ] || continue
  LD_LIBRARY_PATH=$L timeout 40 .devrun/bin/replayssm run --model $d --tokens data/moby-dick.tok.zst \
    --config 'replay L=4 hp=fp32 lp=nvfp4' --config 'replay L=16 hp=fp32 lp=nvfp4' --config 'replay L=64 hp=fp32 lp=nvfp4' \
    --steps 8192 --sequences 1 --seed 1 --device cuda --quiet --force --out /tmp/sweep-$v.h5 &&
  python3 scratch_sweep.py /tmp/sweep-$v.h5 | tee -a $OUT/session.log
done
grep -h "bits per byte\|2 x 16384\|memories on" /tmp/rssm-train/*/full-*.log /tmp/*/full-*.log 2>/dev/null | cut -c1-300
tail -n 40 $OUT/session.log
date -u
