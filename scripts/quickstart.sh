#!/usr/bin/env bash
# The CPU quickstart: install and build (scripts/setup.sh), fetch Moby-Dick and build its byte
# token stream (scripts/fetch_data.sh), decode 4 windows of 2048 tokens with the fp32 reference
# and five state configurations in lockstep (experiments/quickstart.ini), and print the per-
# configuration KL summary. The run takes about 1.5 minutes on two idle cores (models/qwen35-gdn-tiny;
# docs/driver.md, section Speed), plus the build.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build}
export BUILD_DIR
BIN="$BUILD_DIR/replayssm"
bash scripts/fetch_data.sh

OUT="$BUILD_DIR/quickstart.h5"
start=$SECONDS
"$BIN" run experiments/quickstart.ini --out "$OUT" --force --threads "${THREADS:-2}"
echo "quickstart run: $((SECONDS - start)) s (the build and downloads before it not counted)"
echo
"$BIN" summary "$OUT"
echo
echo "per-step datasets (kl, nll, dp, top1 per configuration): $OUT (h5py: docs/driver.md)"
