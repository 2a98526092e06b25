#!/usr/bin/env bash
# session 18, call 1 (issue 15): session 17's two medium-head Mamba-2 designs (md160: every
# drift bar but shared growth 6.0x, 2.116 bits per byte; md192: growth 8.9x, split 3.8x, 2.135)
# continued 450 s each, at once (330 + 450 = 780 s of the 900 a model), with the drift
# and context checks on the GPU. Carried: .corpus.txz, .devrun.txz (replayssm, MIN=1),
# data/moby-dick.txt, .m2init/s18 (the two checkpoints: config.json + model.safetensors); the
# installed models' weights, results/ and tests/fixtures were moved out of the tree for the call
# (64 MiB), none of which the training or the checks read.
set -x
date -u
tar -xJf .devrun.txz
L=$PWD/.devrun/lib:/usr/local/cuda/lib64
LD_LIBRARY_PATH=$L .devrun/bin/replayssm tokens --force --out data/moby-dick.tok.zst data/moby-dick.txt
D="--cap-memory 16 --slow-range 4096:8192 --warmup 20"
ONLY=nemotronh-m2-tiny SKIP_SMOKE=1 M2_INIT_FROM= DRIFT_CHECK=1 CONTEXT_CHECK=1 CONTEXT_TIMEOUT=80 \
  TRAIN_SECONDS=450 OUT=$OUT \
  VARIANTS="c160=$D --medium-memory 160 --init-from .m2init/s18/md160/nemotronh-m2-tiny;c192=$D --medium-memory 192 --init-from .m2init/s18/md192/nemotronh-m2-tiny" \
  timeout -k 10 575 bash scripts/train_fixture_session.sh > $OUT/session.log 2>&1
echo "rc $?"
tail -n 60 $OUT/session.log
date -u
