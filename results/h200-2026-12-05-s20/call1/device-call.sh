#!/usr/bin/env bash
# session 20, call 1 (issue 15): three trainings at once on one GPU.
# Mamba-2, from scratch, 450 s each: six slow heads a layer (three whole B/C groups, 4096..8192 or
# 2048..8192) beside a fixed medium head, one learned head a layer (capped at 16). The rough model
# of docs/next-session.md (calibrated on s4m100 / s4m160 / s4m168: x = the slow heads' late split
# error over the medium head's, 0.3 at 100 tokens, 0.7-0.9 at 160-168 with four slow heads) puts
# growth >= 10 with split growth <= 3 at x in 1.04..1.1 for a 160-token head and 0.94..1.34 for
# 128; six slow heads should lift x ~1.35x, a faster-filling slow range ~1.3x:
#   s6m160     six slow heads 4096..8192, medium 160 (model: growth ~10.3, split ~3.0)
#   s6m128r2   six slow heads 2048..8192, medium 128 (model: growth ~9.4, split ~2.4)
# GDN: the installed model (865 of its 900 s spent; every bar but past the window, +0.02003 against
# +0.02) continued for its last 35 s at the learning rate its cosine ended on (2e-4), same design.
# Carried: .corpus.txz, .devrun.txz (MIN=1 bundle), data/moby-dick.txt, .m2init/s20 (the GDN
# model's config.json and model.safetensors); the tree trimmed by scripts/device_tree.sh trim.
# A call returns at most 8 files: each model's NAME-rest.tar and train-logs.tar are packed into
# one bundle.tar at the end (tar -xf it beside NAME.safetensors to install).
set -u
( until [ -f .corpus/MANIFEST ] && [ -s data/moby-dick.tok.zst ]; do sleep 2; done
  OUT=$OUT/gdn WORK_ROOT=/tmp/gdnw ONLY=qwen35-gdn-tiny SKIP_SMOKE=1 GDN_INIT_FROM=.m2init/s20 \
    GDN_ARGS="--warmup 5 --lr 2e-4 --cap-memory 100 --slow-range 1024:8192" TRAIN_SECONDS=35 \
    DRIFT_CHECK=1 CONTEXT_CHECK=1 timeout -k 10 400 bash scripts/train_fixture_session.sh \
    >"$OUT/gdn-session.log" 2>&1
  echo "gdn: exit $?" >>"$OUT/gdn-session.log" ) &
gdn=$!
D="--cap-memory 16 --slow-per-layer 6"
OUT=$OUT ONLY=nemotronh-m2-tiny SKIP_SMOKE=1 M2_INIT_FROM= DRIFT_CHECK=1 CONTEXT_CHECK=1 \
  CONTEXT_TIMEOUT=80 TRAIN_SECONDS=450 \
  VARIANTS="s6m160=$D --slow-range 4096:8192 --medium-memory 160;s6m128r2=$D --slow-range 2048:8192 --medium-memory 128" \
  bash scripts/train_device_call.sh
wait $gdn
echo "=== gdn ==="; tail -n 40 "$OUT/gdn-session.log"
for d in "$OUT/s6m160" "$OUT/s6m128r2" "$OUT/gdn"; do
  [ -d "$d" ] || continue
  (cd "$d" && ls *-rest.tar train-logs.tar >/dev/null 2>&1 && tar -cf bundle.tar *-rest.tar train-logs.tar \
     && rm -f *-rest.tar train-logs.tar)
done
ls -la "$OUT" "$OUT"/*
