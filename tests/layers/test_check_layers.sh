#!/bin/bash
# scripts/check_layers.sh must fail on a wrong include: on a scratch copy of src/ and quant/,
# (1) a bottom-layer file (src/io) including a driver header, (2) a driver file including the
# SSM engine's private header, (3) a model file including another folder of its own layer; each
# alone must make the check exit 1 naming the file and line, and the untouched copy must pass.
#   test_check_layers.sh REPO
set -u
repo=$1
scratch=$(mktemp -d /tmp/rssm-layers-XXXXXX)
trap 'rm -rf "$scratch"' EXIT
fail() {
  echo "test_check_layers: $*"
  exit 1
}
fresh() {
  rm -rf "$scratch/src" "$scratch/quant"
  cp -r "$repo/src" "$repo/quant" "$scratch/"
}
fresh
bash "$repo/scripts/check_layers.sh" "$scratch" > "$scratch/out" || fail "the untouched copy fails: $(cat "$scratch/out")"

expect_fail() { # FILE INCLUDE WHAT
  fresh
  printf '#include "%s"\n' "$2" >> "$scratch/$1"
  local n
  n=$(wc -l < "$scratch/$1")
  if bash "$repo/scripts/check_layers.sh" "$scratch" > "$scratch/out"; then
    fail "$3: $1 including $2 passed"
  fi
  grep -q "^$1:$n: includes $2" "$scratch/out" || fail "$3: no line for $1:$n in: $(cat "$scratch/out")"
  echo "ok: $3 ($1:$n includes $2) -> $(grep "^$1:$n" "$scratch/out")"
}
expect_fail src/io/errbuf.c src/driver/run.h "a higher layer"
expect_fail src/driver/run.c src/ssm/ssm_internal.h "a private header"
expect_fail src/model/forward.c src/sim/ssm_sim.h "another folder of the same layer"
echo "test_check_layers: ok"
