#!/usr/bin/env bash
# Packs the training corpus (scripts/fetch_corpus.sh's .corpus/: gzip-compressed texts and
# MANIFEST) for a device call as one xz archive of the plain texts, which is 3.6 MB smaller than
# the gzip files (8.9 against 12.5 MB), so that a training call fits its 64 MiB carry beside the
# tracked files, the Moby-Dick files and the small replayssm bundle (docs/next-session.md):
#   bash scripts/pack_corpus.sh [CORPUS_DIR] [OUT]     (defaults .corpus and CORPUS_DIR.txz)
# scripts/train_fixture_session.sh unpacks OUT into CORPUS_DIR (gzip again) when CORPUS_DIR has
# no MANIFEST; the texts' bytes are unchanged (MANIFEST's byte counts are checked there).
set -euo pipefail
SRC=${1:-.corpus}
OUT=${2:-$SRC.txz}
die() { echo "pack_corpus: $*" >&2; exit 2; }
[ -f "$SRC/MANIFEST" ] || die "$SRC/MANIFEST: missing (run scripts/fetch_corpus.sh first)"
T=$(mktemp -d)
trap 'rm -rf "$T" "$OUT.part"' EXIT
mkdir "$T/texts"
n=0
for f in "$SRC"/*.txt.gz; do
  [ -e "$f" ] || die "$SRC: no *.txt.gz files"
  gzip -dc "$f" >"$T/texts/$(basename "$f" .gz)"
  n=$((n + 1))
done
cp "$SRC/MANIFEST" "$T/texts/"
# written beside OUT and renamed, so that an interrupted run leaves no partial archive
tar -C "$T/texts" -cf - . | xz -9e -T1 >"$OUT.part"
mv "$OUT.part" "$OUT"
echo "pack_corpus: $OUT $(du -h "$OUT" | cut -f1) ($n texts)"
