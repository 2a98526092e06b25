#!/usr/bin/env bash
# session 21, call 1 (issue 15): one Mamba-2 design alone, from scratch, 450 s (~217M tokens,
# enough for <= 2.1 bits per byte), so that the drift bars are measured on the model that meets
# bits per byte, with no optimiser restart in between (docs/next-session.md, "What is open").
# Design m2x1s: two fixed medium heads a layer (224 and 288 tokens) and ONE slow head a layer
# (4096..8192 over the four layers), five learned heads capped at 16; fixed memories per layer
# 224, 288 and 4096..8192 (the "roughly 256..8192").
# Why (session 20's curves, docs/trained-models.md "Session 21"): in the continued c6m128r2 the
# shared KL's growth from 64..127 was the 128-token head's own (x6 up to 256..511, then flat):
# a fixed head's shared error keeps growing until ~2 memories, so a head of 224-288 tokens carries
# the shared growth by itself (md256: 16.3x) however the model reweights its heads as it trains,
# while the slow heads' split error, which grows with their fill, is what broke the split bar
# (md256: 5.1x with two slow heads a layer). One slow head a layer beside two medium heads: split
# growth ~ (2 + 0.7) / (0.58 + 0.49) ~ 2.5 by the fills at t ~ 96; the window sweep flat (the
# medium heads' read error barely decays within L = 64).
# Carried: .corpus.txz, .devrun.txz (MIN=1 bundle), data/moby-dick.txt; the tree trimmed by
# scripts/device_tree.sh trim.
OUT=$OUT ONLY=nemotronh-m2-tiny SKIP_SMOKE=1 M2_INIT_FROM= DRIFT_CHECK=1 CONTEXT_CHECK=1 \
  CONTEXT_TIMEOUT=80 TRAIN_SECONDS=450 CALL_TIMEOUT=580 \
  VARIANTS="m2x1s=--cap-memory 16 --slow-per-layer 1 --slow-range 4096:8192 --medium-memory 288,224" \
  bash scripts/train_device_call.sh
