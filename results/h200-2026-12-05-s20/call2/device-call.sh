#!/usr/bin/env bash
# session 20, call 2 (issue 15): call 1's s6m128r2 (six slow heads a layer 2048..8192, a fixed
# medium head of 128 tokens, one learned head capped at 16; 330 s, 60.4M tokens: shared growth
# 28.5, split growth 4.16, ratio 34.2, sweep proxy 1.30, 2.140 bits per byte, +0.027 past the
# window) continued alone with the same design for 450 s (780 of its 900 s). Why: its growth has
# ~3x headroom and its split growth is 1.4x over the bar, and every continuation so far (md160,
# s4m160, c4c16) divided both by 1.8-3.4 and 2.1-2.4 (a learned head grows and sets an early level
# under both configurations), while the tokens buy bits per byte (c4c16: 2.146 -> 2.081).
# Call 1's trainings stopped at 330 of 450 s: their cosine's length was fixed from the speed at
# steps 20..40, measured while a third training (GDN) shared the GPU; alone, this one is not.
# Carried: .corpus.txz, .devrun.txz, data/moby-dick.txt, .m2init/s20/s6m128r2 (config.json and
# model.safetensors of call 1's s6m128r2, from scripts/install_trained_models.sh).
OUT=$OUT ONLY=nemotronh-m2-tiny SKIP_SMOKE=1 M2_INIT_FROM= DRIFT_CHECK=1 CONTEXT_CHECK=1 \
  CONTEXT_TIMEOUT=80 TRAIN_SECONDS=450 CALL_TIMEOUT=580 \
  VARIANTS="c6m128r2=--cap-memory 16 --slow-per-layer 6 --slow-range 2048:8192 --medium-memory 128 --warmup 20 --init-from .m2init/s20/s6m128r2/nemotronh-m2-tiny" \
  bash scripts/train_device_call.sh
