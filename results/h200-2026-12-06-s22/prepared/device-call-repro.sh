#!/usr/bin/env bash
# Prepared in session 22, NOT RUN: the GPU reproductions of an installed Mamba-2 model (issue 15's
# GPU bars: Fig. 5/12 at 4 x 32768, the Fig. 13 window sweep and Table 11 at 4 x 16384), for
# m2x1s192 once it is in data/models (`bash scripts/install_trained_models.sh
# .m2init/s22out/m2x1s192 data/models`, or the files of a call that retrained it). ~250 s on an
# H200 (session 13); an H100 may take longer. Carry .devrun.txz and data/moby-dick.tok.zst, the tree
# trimmed with its weights kept: `bash scripts/device_tree.sh trim results/h200-DATE-sN
# data/models/nemotronh-m2-tiny/model.safetensors` (KEEP paths stay; ~20 MB carried).
# Then: results/of-record.txt -> the new figures folder, the GDN model's files copied beside them
# (as results/h200-2026-12-03-s13/repro/README.md did), `cmake --build build --target figures`
# for docs/results.md, scripts/refresh_model_cards.py, docs/trained-models.md's first table.
# (session 13's call 2 ran it so: results/h200-2026-12-03-s13/, docs/gpu-results.md "Session 13")
tar -xJf .devrun.txz
LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64 ONLY=nemotronh-m2-tiny OUT=$OUT/repro \
  STEPS_KL=32768 timeout 500 bash scripts/gpu_reproductions.sh
