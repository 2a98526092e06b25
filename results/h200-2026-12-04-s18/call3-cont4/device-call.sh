#!/usr/bin/env bash
# session 18, call 3 (issue 15): call 2's s4m160 (four slow heads a layer, medium 160: shared
# growth 9.0x, split 2.6x, ratio 16.7, 2.131 bits per byte, +0.028 past the window) continued
# alone for 360 s (450 + 360 = 810 s of the 900), at half the peak learning rate and with
# the learned heads' cap at 8 tokens: session 18's call 1 showed a continuation at cap 16 growing
# a learned head from 4 to 12 tokens, whose early shared error took the growth from 6.0x to 2.4x.
# Carried: .corpus.txz, .devrun.txz, data/moby-dick.txt, .m2init/s18/s4m160 (config.json +
# model.safetensors); the installed weights, results/ (but this session's) and tests/fixtures
# moved out of the tree for the call.
set -x
date -u
tar -xJf .devrun.txz
L=$PWD/.devrun/lib:/usr/local/cuda/lib64
LD_LIBRARY_PATH=$L .devrun/bin/replayssm tokens --force --out data/moby-dick.tok.zst data/moby-dick.txt
ONLY=nemotronh-m2-tiny SKIP_SMOKE=1 M2_INIT_FROM= DRIFT_CHECK=1 CONTEXT_CHECK=1 CONTEXT_TIMEOUT=70 \
  TRAIN_SECONDS=360 OUT=$OUT \
  VARIANTS="c4m160=--cap-memory 8 --slow-range 4096:8192 --slow-per-layer 4 --medium-memory 160 --warmup 20 --lr 1e-3 --init-from .m2init/s18/s4m160/nemotronh-m2-tiny" \
  timeout -k 10 470 bash scripts/train_fixture_session.sh > $OUT/session.log 2>&1
echo "rc $?"
tail -n 40 $OUT/session.log
date -u
