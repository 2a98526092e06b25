#!/usr/bin/env bash
# session 18, call 2 (issue 15): four slow heads a Mamba-2 layer (--slow-per-layer 4: the last two
# B/C groups whole, 16 slow memories over 4096..8192) beside a fixed medium head of 100 or 160
# tokens, from scratch, 450 s each at once; the drift and context checks on the GPU. Why: in
# session 17's designs the shared growth is set by the slow heads' share of the split error
# (x = slow / medium split KL late); md160 had x ~ 0.5 and needs ~1 (docs/trained-models.md,
# "Session 18"). Carried: .corpus.txz, .devrun.txz (replayssm, MIN=1), data/moby-dick.txt; the
# installed models' weights, results/ (but this call's folder) and tests/fixtures were moved out
# of the tree for the call.
set -x
date -u
tar -xJf .devrun.txz
L=$PWD/.devrun/lib:/usr/local/cuda/lib64
LD_LIBRARY_PATH=$L .devrun/bin/replayssm tokens --force --out data/moby-dick.tok.zst data/moby-dick.txt
D="--cap-memory 16 --slow-range 4096:8192 --slow-per-layer 4"
ONLY=nemotronh-m2-tiny SKIP_SMOKE=1 M2_INIT_FROM= DRIFT_CHECK=1 CONTEXT_CHECK=1 CONTEXT_TIMEOUT=80 \
  TRAIN_SECONDS=450 OUT=$OUT \
  VARIANTS="s4m100=$D --medium-memory 100;s4m160=$D --medium-memory 160" \
  timeout -k 10 575 bash scripts/train_fixture_session.sh > $OUT/session.log 2>&1
echo "rc $?"
tail -n 60 $OUT/session.log
date -u
