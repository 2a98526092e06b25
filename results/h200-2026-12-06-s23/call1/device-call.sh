#!/usr/bin/env bash
# session 23, call 1 (issue 15): session 22's call 2 (results/h200-2026-12-06-s22/call2/) again, on a new
# machine where its weights were lost: m2x1s192 retrained so that call 2 can run its GPU reproductions.
# session 22's header follows.
# Design m2x1s192 alone, from scratch, 450 s.
# Shorter fixed heads than call 1's m2x1s (240 and 192 instead of 288 and 224): they fill more by
# t ~ 96 (split growth ~(2 + 0.7) / (0.63 + 0.55) ~ 2.3) and carry read errors forward less far
# (m2x1s's window sweep rose 2.58x from L = 4 to 64; md160's was 1.22), at some cost in shared
# growth (m2x1s 22.4).
# Carried as call 1 (.corpus.txz, .devrun.txz, data/moby-dick.txt; the tree trimmed).
OUT=$OUT ONLY=nemotronh-m2-tiny SKIP_SMOKE=1 M2_INIT_FROM= DRIFT_CHECK=1 CONTEXT_CHECK=1 \
  CONTEXT_TIMEOUT=80 TRAIN_SECONDS=450 CALL_TIMEOUT=580 \
  VARIANTS="m2x1s192=--cap-memory 16 --slow-per-layer 1 --slow-range 4096:8192 --medium-memory 240,192" \
  bash scripts/train_device_call.sh
