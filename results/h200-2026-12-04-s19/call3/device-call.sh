#!/usr/bin/env bash
# session 19, call 3 (issue 15): call 2's s4c16 (four slow heads a layer 4096..8192, no medium
# head, learned heads capped at 16; 443 s, 110.9M tokens; every CPU drift bar met: growth 36.5,
# split 2.0, ratio 41.3; but 2.146 bits per byte) continued alone for 360 s with the same design
# (its 900 s: 443 + 360), for bits per byte. The device time left (572 s) sets the length.
# Carried: .corpus.txz, .devrun.txz, data/moby-dick.txt, .m2init/s19/s4c16 (config.json and
# model.safetensors of call 2's s4c16, from scripts/install_trained_models.sh).
OUT=$OUT ONLY=nemotronh-m2-tiny SKIP_SMOKE=1 M2_INIT_FROM= DRIFT_CHECK=1 CONTEXT_CHECK=1 \
  CONTEXT_TIMEOUT=80 TRAIN_SECONDS=360 CALL_TIMEOUT=470 \
  VARIANTS="c4c16=--cap-memory 16 --slow-range 4096:8192 --slow-per-layer 4 --warmup 20 --init-from .m2init/s19/s4c16/nemotronh-m2-tiny" \
  bash scripts/train_device_call.sh
