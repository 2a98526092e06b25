#!/usr/bin/env bash
# Installs what scripts/train_fixture_session.sh brought back from the GPU machine as model
# directories (docs/trained-models.md), the step that sessions 4 and 8 did by hand:
#   bash scripts/install_trained_models.sh FROM [DEST]
# FROM holds NAME.safetensors and NAME-rest.tar per trained model (and train-logs.tar); DEST
# (default data/models) gets DEST/NAME/model.safetensors, the rest's files (config.json,
# eval.json, loss.csv, loss.png, tokens.npy, ref_logits.npy) and train.log (the real run's log,
# full-NAME.log in train-logs.tar). An existing model card (DEST/NAME/README.md) is kept. Into
# data/models, the card's measured parts and data/README.md's checksums are then refreshed
# (scripts/refresh_model_cards.py, scripts/data_manifest.py --write); a scratch DEST (a model to
# continue with --init-from, or to test before installing) gets the files only.
#   BPB=FILE  the reproductions' bpb.json of these weights (scripts/gpu_reproductions.sh) for the
#             cards' replayssm rows; without it the cards show transformers' numbers only, since
#             an older bpb.json describes other weights.
# A model whose files are incomplete is refused with one line and exit 2, before anything of it
# is written; models are installed one at a time, each through a temporary directory renamed
# into place, so that a failure leaves every model either old or new, never mixed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "install_trained_models: $*" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || die "usage: install_trained_models.sh FROM [DEST] (expected 1 or 2 arguments)"
FROM=$1
DEST=${2:-$ROOT/data/models}
[ -d "$FROM" ] || die "$FROM: not a directory (expected the training call's output folder)"
[ -d "$DEST" ] || die "$DEST: not a directory (expected the models' folder, e.g. data/models)"
shopt -s nullglob
weights=("$FROM"/*.safetensors)
[ ${#weights[@]} -gt 0 ] || die "$FROM: no NAME.safetensors (expected the output of train_fixture_session.sh)"
# every model is checked before any is installed
REST_FILES=(config.json eval.json loss.csv tokens.npy ref_logits.npy)
for w in "${weights[@]}"; do
  name=$(basename "$w" .safetensors)
  rest=$FROM/$name-rest.tar
  [ -f "$rest" ] || die "$rest: missing (expected beside $name.safetensors)"
  [ -s "$w" ] || die "$w: empty (expected the bf16 checkpoint)"
  listing=$(tar -tf "$rest" 2>/dev/null) || die "$rest: not a readable tar archive"
  for f in "${REST_FILES[@]}"; do
    grep -qx "$f" <<<"$listing" || die "$rest: no member '$f' (expected ${REST_FILES[*]})"
  done
done
logs=$FROM/train-logs.tar
for w in "${weights[@]}"; do
  name=$(basename "$w" .safetensors)
  tmp=$(mktemp -d "$DEST/.install-$name.XXXXXX")
  tar -xf "$FROM/$name-rest.tar" -C "$tmp"
  cp "$w" "$tmp/model.safetensors"
  member=
  if [ -f "$logs" ]; then
    member=$(tar -tf "$logs" 2>/dev/null | grep -x "\./full-$name.log\|full-$name.log" | head -1 || true)
  fi
  if [ -n "$member" ]; then tar -xOf "$logs" "$member" >"$tmp/train.log"; fi
  if [ -f "$DEST/$name/README.md" ]; then cp "$DEST/$name/README.md" "$tmp/README.md"; fi
  if [ -d "$DEST/$name" ]; then
    old=$(mktemp -d "$DEST/.old-$name.XXXXXX")
    mv "$DEST/$name" "$old/"
    mv "$tmp" "$DEST/$name"
    rm -rf "$old"
  else
    mv "$tmp" "$DEST/$name"
  fi
  echo "install_trained_models: $DEST/$name: $(ls "$DEST/$name" | tr '\n' ' ')"
done
if [ "$(cd "$DEST" && pwd)" = "$ROOT/data/models" ]; then
  /usr/bin/python3 "$ROOT/scripts/refresh_model_cards.py" --bpb "${BPB:-$DEST/.no-bpb.json}"
  python3 "$ROOT/scripts/data_manifest.py" --write
fi
