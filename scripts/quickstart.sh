#!/usr/bin/env bash
# A small but complete demonstration: install and build (scripts/setup.sh), make a random stack
# of SSM-state-like float32 matrices, fake-quantise it with `replayssm quant` to every format with
# round-to-nearest and with stochastic rounding, and print the relative RMS error of each.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build}
BIN="$BUILD_DIR/replayssm"
# /usr/bin/python3 is Debian's, with python3-numpy; another python3 may come first on PATH.
PY=/usr/bin/python3
OUT="$BUILD_DIR/quickstart"
mkdir -p "$OUT"

# 8 heads of a [dv=64][dk=128] state; magnitudes vary by e^+-3 from element to element.
"$PY" - "$OUT/state.npy" <<'PYEOF'
import sys
import numpy as np
rng = np.random.default_rng(2024)
shape = (8, 64, 128)
x = rng.standard_normal(shape) * np.exp(rng.uniform(-3.0, 3.0, shape))
np.save(sys.argv[1], x.astype(np.float32))
PYEOF

# The format names come from the tool itself, so the demo follows the code.
formats=$("$BIN" quant --help | sed -n 's/^formats (default block size)://p' | sed -E 's/@[0-9]+//g')
if [ -z "$formats" ]; then
  echo "quickstart: could not read the format list from '$BIN quant --help'" >&2
  exit 1
fi

echo
echo "replayssm quant on $OUT/state.npy (8 matrices of 64 x 128), seed 1:"
for f in $formats; do
  "$BIN" quant --format "$f" "$OUT/state.npy" "$OUT/$f.rtn.npy"
  if [ "$f" != fp32 ]; then  # fp32 is exact: SR does not apply
    "$BIN" quant --format "$f/sr" --seed 1 "$OUT/state.npy" "$OUT/$f.sr.npy"
  fi
done

"$PY" - "$OUT" $formats <<'PYEOF'
import os
import sys
import numpy as np
out, formats = sys.argv[1], sys.argv[2:]
x = np.load(os.path.join(out, "state.npy")).astype(np.float64)
def rel_rms(path):
    if not os.path.exists(path):
        return "-"
    y = np.load(path).astype(np.float64)
    return "%.3e" % np.sqrt(np.sum((y - x) ** 2) / np.sum(x ** 2))
print()
print("%-10s %14s %14s" % ("format", "rel RMS (RTN)", "rel RMS (SR)"))
for f in formats:
    print("%-10s %14s %14s" % (f, rel_rms(os.path.join(out, f + ".rtn.npy")),
                               rel_rms(os.path.join(out, f + ".sr.npy"))))
print()
print("relative RMS error = sqrt(sum (q(x) - x)^2 / sum x^2); outputs are in " + out)
PYEOF
