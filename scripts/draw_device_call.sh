#!/usr/bin/env bash
# One device call for a training draw of ONE design and, in the same call, that model's GPU
# reproductions: the body that sessions 25-27's call scripts repeated (results/h200-2026-12-06-s2{5,6,7}/),
# so that a good draw is reproduced without a second start or the race for the 30 s the machine
# stays warm. Training from scratch (scripts/train_device_call.sh with VARIANTS=TAG=OPTIONS, the
# GPU drift and sweep checks on, no smoke run, no context check), then, if it gave weights, their
# install into data/models/MODEL on the device and `scripts/gpu_reproductions.sh` (ONLY=MODEL,
# STEPS_KL=32768) in the time left of the call. A call script then holds only its design:
#   OUT=$OUT TAG=m2ml1s2 OPTIONS="--cap-memory 16 ... --train-steps 2600 --seed 1239" \
#     bash scripts/draw_device_call.sh
#   OUT          the device's $OUT (required): OUT/TAG/ the training's files, OUT/repro/ the
#                reproductions' (repro.tar), OUT/session.log
#   TAG          the design's name (letters, digits, - and _; required)
#   OPTIONS      its scripts/train_fixture_models.py options (required)
#   MODEL        nemotronh-m2-tiny (default) or qwen35-gdn-tiny
#   CALL_LIMIT   seconds the whole call may take (default 590: a command has 600)
#   TRAIN_LIMIT  seconds for the training part (default 470)
# Carry .corpus.txz, .devrun.txz (MIN=1 bash scripts/bundle_device.sh), data/moby-dick.txt; trim
# the tree first (bash scripts/device_tree.sh trim results/h200-DATE-sN).
# Exit: 2 for a missing or bad input (nothing runs); 1 when the training gave no weights (no
# reproductions); otherwise the reproductions' status (124 or 130 when they ran out of time).
set -uo pipefail
cd "$(dirname "$0")/.."
die() { echo "draw_device_call: $*" >&2; exit 2; }
[ -n "${OUT:-}" ] || die "OUT: not set (expected the device's \$OUT)"
[[ "${TAG:-}" =~ ^[A-Za-z0-9_-]+$ ]] || die "TAG '${TAG:-}': expected a name of letters, digits, - and _"
[ -n "${OPTIONS:-}" ] || die "OPTIONS: not set (expected the design's train_fixture_models.py options)"
MODEL=${MODEL:-nemotronh-m2-tiny}
case $MODEL in nemotronh-m2-tiny|qwen35-gdn-tiny) ;; *) die "MODEL '$MODEL': expected nemotronh-m2-tiny or qwen35-gdn-tiny";; esac
CALL_LIMIT=${CALL_LIMIT:-590}
TRAIN_LIMIT=${TRAIN_LIMIT:-470}
[[ "$CALL_LIMIT" =~ ^[0-9]+$ && "$TRAIN_LIMIT" =~ ^[0-9]+$ ]] || die "CALL_LIMIT, TRAIN_LIMIT: expected whole seconds"
# the training's own clock limit is 50 s under TRAIN_LIMIT (saving and its checks come after it)
[ "$TRAIN_LIMIT" -gt 50 ] && [ "$TRAIN_LIMIT" -lt "$CALL_LIMIT" ] ||
  die "TRAIN_LIMIT $TRAIN_LIMIT: expected more than 50 s and less than CALL_LIMIT $CALL_LIMIT"

# the training (its own time limit), from scratch: GDN_INIT_FROM and M2_INIT_FROM set and empty
OUT=$OUT ONLY=$MODEL SKIP_SMOKE=1 GDN_INIT_FROM= M2_INIT_FROM= DRIFT_CHECK=1 CONTEXT_CHECK=0 \
  TRAIN_SECONDS=$((TRAIN_LIMIT - 50)) CALL_TIMEOUT=$TRAIN_LIMIT TAIL_LINES=40 \
  VARIANTS="$TAG=$OPTIONS" bash scripts/train_device_call.sh
FROM=$OUT/$TAG
[ -s "$FROM/$MODEL.safetensors" ] || { echo "draw_device_call: no trained model in $FROM: no reproductions"; exit 1; }

# the reproductions on the weights just trained, installed where gpu_reproductions.sh reads them
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
bash scripts/install_trained_models.sh "$FROM" "$scratch" || die "install_trained_models.sh failed on $FROM"
cp "$scratch/$MODEL"/* "data/models/$MODEL/" || die "cannot copy the trained model into data/models/$MODEL"
sha256sum "data/models/$MODEL/model.safetensors"
left=$((CALL_LIMIT - SECONDS))
if [ "$left" -lt 30 ]; then   # (timeout 0 would mean no limit at all)
  echo "draw_device_call: $left s left of CALL_LIMIT $CALL_LIMIT: no time for the reproductions"
  exit 124
fi
echo "draw_device_call: reproductions from $SECONDS s, limit $left s"
LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64 ONLY=$MODEL OUT=$OUT/repro STEPS_KL=32768 \
  timeout -s INT -k 10 "$left" bash scripts/gpu_reproductions.sh
rc=$?
echo "draw_device_call: reproductions exit $rc; call done after $SECONDS s"
exit $rc
