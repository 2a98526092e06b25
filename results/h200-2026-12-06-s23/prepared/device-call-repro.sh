#!/usr/bin/env bash
# Prepared in session 23 as its call 2, NOT RUN (call 1's retrained m2x1s192 missed four bars):
# the GPU reproductions (Fig. 5/12 at 4 x 32768, the Fig. 13 window sweep and Table 11 at
# 4 x 16384, bits per byte) of a Mamba-2 model that a training call of the same session
# returned, so that a second call can start within the 30 s the machine stays warm: session 22's
# prepared/device-call-repro.sh with the install done on the device. Before the call: copy the
# training call's files (NAME.safetensors, NAME-rest.tar, train-logs.tar) into FROM (default
# .m2init/s23out/m2x1s192), keep the tree trimmed as for the training call, and carry
# .devrun.txz, data/moby-dick.tok.zst and FROM. Here the files are installed into a scratch
# folder (files only) and copied over data/models/nemotronh-m2-tiny/.
set -uo pipefail
tar -xJf .devrun.txz
scratch=$(mktemp -d)
FROM=${FROM:-.m2init/s23out/m2x1s192}
bash scripts/install_trained_models.sh "$FROM" "$scratch" || exit 2
cp "$scratch"/nemotronh-m2-tiny/* data/models/nemotronh-m2-tiny/
sha256sum data/models/nemotronh-m2-tiny/model.safetensors
LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64 ONLY=nemotronh-m2-tiny OUT=$OUT/repro \
  STEPS_KL=32768 timeout 520 bash scripts/gpu_reproductions.sh
