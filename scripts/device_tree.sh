#!/usr/bin/env bash
# Trims the working tree for a device call that carries large ignored files (a training call:
# .corpus.txz, a bundle, a starting checkpoint), and puts it back afterwards. The device tool
# copies the tracked files (~50 MB, 30 of them the two installed models) and at most 64 MiB in
# all, so sessions 16-18 moved the installed weights, results/ and tests/fixtures out of the
# tree by hand for each call; forgetting to move them back leaves a tree whose next commit
# deletes the models. This does both halves with one record of what moved.
#
#   bash scripts/device_tree.sh trim [KEEP ...]   move data/models/*/model.safetensors,
#       tests/fixtures and every folder under results/ except the KEEP paths (e.g. the call's own
#       folder, results/h200-DATE-sN) into .device-trim/, listed in .device-trim/MANIFEST; then
#       print what the device would carry of the tree (tracked files left + untracked ones)
#   bash scripts/device_tree.sh restore           move every MANIFEST path back and remove
#       .device-trim/
#   bash scripts/device_tree.sh status            say whether a trim is waiting to be restored
#
# A second trim before a restore is refused (exit 2), as is a restore onto a path that exists
# again (exit 2, nothing moved: the tree and .device-trim/ are left as they are for a look).
# .device-trim/ is ignored by git (.gitignore), so it is never carried or committed.
set -euo pipefail
cd "$(dirname "$0")/.."
STASH=.device-trim
die() { echo "device_tree: $*" >&2; exit 2; }

carried_bytes() {  # the tree as the device tool sends it: tracked files present + untracked
  { git ls-files -z; git ls-files -z --others --exclude-standard; } |
    { xargs -0 -r stat -c %s 2>/dev/null || true; } | awk '{s += $1} END {print s + 0}'
}

trim() {
  [ ! -e "$STASH" ] || die "$STASH/ exists: a trim is not restored yet (bash scripts/device_tree.sh restore)"
  local keep=() k p paths=()
  for k in "$@"; do
    [ -e "$k" ] || die "KEEP '$k': no such path (expected e.g. the call's results folder)"
    keep+=("${k%/}")
  done
  shopt -s nullglob
  for p in data/models/*/model.safetensors tests/fixtures results/*; do
    for k in "${keep[@]}"; do [ "$p" != "$k" ] || continue 2; done
    paths+=("$p")
  done
  [ ${#paths[@]} -gt 0 ] || die "nothing to move (expected data/models/*/model.safetensors, tests/fixtures, results/)"
  mkdir -p "$STASH"
  : >"$STASH/MANIFEST"
  for p in "${paths[@]}"; do
    mkdir -p "$STASH/tree/$(dirname "$p")"
    mv "$p" "$STASH/tree/$p"
    printf '%s\n' "$p" >>"$STASH/MANIFEST"
  done
  echo "device_tree: moved ${#paths[@]} path(s) to $STASH/; the tree now carries $(carried_bytes) bytes" \
       "(plus the ignored paths named in carry)"
}

restore() {
  [ -f "$STASH/MANIFEST" ] || die "$STASH/MANIFEST: missing (expected a trim to restore)"
  local p clash=0
  while IFS= read -r p; do
    [ -e "$STASH/tree/$p" ] || die "$STASH/tree/$p: missing (MANIFEST lists it); nothing moved"
    if [ -e "$p" ]; then echo "device_tree: $p exists again; not overwritten" >&2; clash=1; fi
  done <"$STASH/MANIFEST"
  [ $clash = 0 ] || die "restore refused: move the path(s) above aside first; nothing moved"
  while IFS= read -r p; do
    mkdir -p "$(dirname "$p")"
    mv "$STASH/tree/$p" "$p"
  done <"$STASH/MANIFEST"
  local n
  n=$(wc -l <"$STASH/MANIFEST")
  rm -rf "$STASH"
  echo "device_tree: restored $n path(s)"
}

case ${1:-} in
  trim) shift; trim "$@" ;;
  restore) [ $# = 1 ] || die "restore takes no arguments"; restore ;;
  status)
    if [ -f "$STASH/MANIFEST" ]; then
      echo "device_tree: $(wc -l <"$STASH/MANIFEST") path(s) trimmed, waiting for restore"; exit 1
    fi
    echo "device_tree: nothing trimmed" ;;
  *) die "usage: device_tree.sh trim [KEEP ...] | restore | status (got '${1:-}')" ;;
esac
