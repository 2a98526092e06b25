#!/usr/bin/env bash
# The CPU quickstart: install the packages and build the tool alone (scripts/setup.sh --target
# replayssm; the tests build in scripts/test.sh), fetch Moby-Dick and build its byte token
# stream (scripts/fetch_data.sh), decode 4 windows of 2048 tokens with the fp32 reference and five
# state configurations in lockstep (experiments/quickstart.ini; a progress line every 5 s), print
# the per-configuration summary and a paragraph that reads it, and draw the KL-against-length
# figure. On two idle cores: about 1 minute of build and 1.5 minutes of run (README, "Quickstart").
set -euo pipefail
cd "$(dirname "$0")/.."

t0=$SECONDS
BUILD_DIR=${BUILD_DIR:-build}
export BUILD_DIR
# the demo runs on the CPU: without a GPU, the CUDA paths are not built (minutes of nvcc)
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "quickstart: no GPU here: building the CPU paths only (-DRSSM_CUDA=OFF)"
  export CMAKE_ARGS="-DRSSM_CUDA=OFF ${CMAKE_ARGS:-}"
fi
bash scripts/setup.sh --target replayssm
t_build=$((SECONDS - t0))
BIN="$BUILD_DIR/replayssm"
bash scripts/fetch_data.sh

OUT="$BUILD_DIR/quickstart.h5"
start=$SECONDS
"$BIN" run experiments/quickstart.ini --out "$OUT" --force --threads "${THREADS:-2}"
t_run=$((SECONDS - start))
echo
"$BIN" summary "$OUT"
echo
if command -v python3 >/dev/null; then
  "$BIN" summary --format json "$OUT" | python3 analysis/summary_reading.py
  echo
fi
FIG="$BUILD_DIR/figures"
if /usr/bin/python3 -c "import h5py, numpy, matplotlib" 2>/dev/null; then
  /usr/bin/python3 analysis/plot_kl_length.py "$OUT" --out-dir "$FIG" | sed 's/^/figure: /'
else
  echo "figure: skipped (/usr/bin/python3 lacks h5py, numpy or matplotlib: bash scripts/setup.sh)"
fi
echo "quickstart: setup and build $t_build s, run $t_run s, $((SECONDS - t0)) s in all"
echo "per-step datasets (kl, nll, dp, top1 per configuration): $OUT (h5py: docs/driver.md);"
echo "summary as CSV/JSON: $BIN summary --format csv|json $OUT"
