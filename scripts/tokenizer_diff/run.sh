#!/usr/bin/env bash
# Differential check of the C byte-level BPE against the tokenizers library on random texts
# (docs/tokenizer.md): bash scripts/tokenizer_diff/run.sh TOKENIZER_JSON [COUNT] [SEED]
# Needs node and the npm package tokenizers@0.23.2 unpacked in $TOKENIZERS_PKG (default
# .cache/tokenizers-npm/package: fetched with npm pack when missing), and a build in
# $BUILD_DIR (default build). Prints how many texts differ; exit 1 when any does.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
json=$1 count=${2:-3000} seed=${3:-1}
build=${BUILD_DIR:-$root/build}
pkg=${TOKENIZERS_PKG:-$root/.cache/tokenizers-npm/package}
if [ ! -f "$pkg/index.js" ]; then
  mkdir -p "$root/.cache/tokenizers-npm"
  (cd "$root/.cache/tokenizers-npm" && npm pack --silent tokenizers@0.23.2 >/dev/null &&
     tar xzf tokenizers-0.23.2.tgz)
  pkg=$root/.cache/tokenizers-npm/package
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -I"$root" "$here/encode_texts.c" "$build/libreplayssm_core.a" \
  $(pkg-config --libs libpcre2-8 glib-2.0 libzstd libcjson zlib) -lhdf5_serial -lgsl -lm \
  -o "$tmp/encode_texts"
python3 "$here/gen_texts.py" "$seed" "$count" "$tmp/texts.bin"
node "$here/encode_texts.js" "$pkg" "$json" "$tmp/texts.bin" "$tmp/lib.txt"
"$tmp/encode_texts" "$json" "$tmp/texts.bin" "$tmp/c.txt"
ndiff=$(diff "$tmp/lib.txt" "$tmp/c.txt" | grep -c '^<' || true)
echo "$json: $ndiff of $count random texts differ from the tokenizers library"
[ "$ndiff" -eq 0 ]
