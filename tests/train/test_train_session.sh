#!/usr/bin/env bash
# scripts/train_fixture_session.sh with stand-ins for python3, nvidia-smi and a CUDA replayssm
# (no GPU, no torch): which options reach each training job (per-model arguments and INIT_FROM,
# VARIANTS' own options and folders), that each variant's outputs install with its own log, that
# DRIFT_CHECK runs the check on every trained checkpoint and packs its verdict (CONTEXT_CHECK
# the context check too), and that bad
# VARIANTS are refused with one line and exit 2 before anything trains; that a packed corpus
# (scripts/pack_corpus.sh) is unpacked with its bytes and sizes checked.
set -euo pipefail
ROOT=$1
S=$ROOT/scripts/train_fixture_session.sh
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "test_train_session: $*"; exit 1; }

mkdir -p "$T/bin"
# python3: the pre-training checks pass; a training job records its options and writes what
# train_fixture_models.py writes; the drift check's analysis prints a verdict
cat >"$T/bin/python3" <<'EOF'
#!/usr/bin/env bash
case $1 in
  tests/train/*) exit 0 ;;
  analysis/longmem_check.py)   # a missed bar; --json FILE as the third and fourth arguments
    [ "$3" = --json ] && echo "[\"drift of $2\"]" >"$4"
    echo "longmem_check: verdict on $2"; exit 1 ;;
  analysis/window_sweep_check.py)   # a missed bar; --json FILE as the third and fourth
    [ "$3" = --json ] && echo "[\"sweep of $2\"]" >"$4"
    echo "window_sweep_check: verdict on $2"; exit 1 ;;
  analysis/context_degradation.py)   # --json FILE as the eighth and ninth
    [ "$8" = --json ] && echo "[\"context of $3\"]" >"$9"
    echo "| context table: $*"; "$5" logits --fake; exit 0 ;;
  scripts/train_fixture_models.py) ;;
  *) echo "fake python3: unexpected $*" >&2; exit 3 ;;
esac
shift
model= out=
args=("$@")
while [ $# -gt 0 ]; do
  case $1 in --model) model=$2; shift ;; --out) out=$2; shift ;; esac
  shift
done
echo "$model ${args[*]}" >>"$FAKE_CALLS"
mkdir -p "$out"
r=$(mktemp -d "$out/.rest-$model.XXXXXX")   # the two models of one call share $out
for f in config.json eval.json loss.csv tokens.npy ref_logits.npy; do echo "$f of $out" >"$r/$f"; done
(cd "$r" && tar -cf "$out/$model-rest.tar" config.json eval.json loss.csv tokens.npy ref_logits.npy)
rm -rf "$r"
echo "weights $out" >"$out/$model.safetensors"
echo "[ 0.1s] Mamba-2 scan against transformers' function: 1e-7 -> on"
echo "[ 0.2s] trained in $out"
echo "[ 0.3s] result: {}"
EOF
printf '#!/bin/sh\necho "fake H200, 1 MiB"\n' >"$T/bin/nvidia-smi"
# replayssm: records its options, writes the --out file
cat >"$T/replayssm" <<'EOF'
#!/usr/bin/env bash
echo "$*" >>"$FAKE_RUNS"
while [ $# -gt 0 ]; do [ "$1" = --out ] && echo h5 >"$2"; shift; done
EOF
chmod +x "$T/bin/python3" "$T/bin/nvidia-smi" "$T/replayssm"
echo tokens >"$T/tokens.zst"
# a corpus as scripts/fetch_corpus.sh leaves it (gzip texts and MANIFEST)
mkdir -p "$T/corpus"
printf 'first text\n' >"$T/a.txt" && printf 'second, longer text\n' >"$T/b.txt"
gzip -c "$T/a.txt" >"$T/corpus/a.txt.gz" && gzip -c "$T/b.txt" >"$T/corpus/b.txt.gz"
printf '# file  bytes(uncompressed)  source\na.txt.gz 11 test\nb.txt.gz 20 test\n' >"$T/corpus/MANIFEST"

session() { # NAME ENV...: runs the script with the stand-ins; output in T/NAME.out, status in rc
  local name=$1; shift
  rc=0
  env PATH="$T/bin:$PATH" FAKE_CALLS="$T/$name.calls" FAKE_RUNS="$T/$name.runs" \
    WORK_ROOT="$T/$name.work" OUT="$T/$name" TRAIN_SECONDS=5 DRIFT_BIN="$T/replayssm" CORPUS="$T/corpus" \
    DRIFT_LIBS=/nonexistent DRIFT_TOKENS="$T/tokens.zst" "$@" bash "$S" >"$T/$name.out" 2>&1 || rc=$?
}

# two designs of one model, with the drift check
session var ONLY=nemotronh-m2-tiny M2_ARGS="--cap-memory 16" DRIFT_CHECK=1 CONTEXT_CHECK=1 \
  VARIANTS="a=--slow-range 2048:8192;b=--slow-range 4096:16384 --warmup 20"
[ "$rc" = 0 ] || fail "variants: exit $rc: $(tail -n 5 "$T/var.out")"
[ "$(grep -c " --train-seconds 12 " "$T/var.calls")" = 2 ] || fail "variants: not one smoke run each"
grep -q -- "--out $T/var/a .*--cap-memory 16 --slow-range 2048:8192\$" "$T/var.calls" ||
  fail "variant a's options or folder: $(cat "$T/var.calls")"
grep -q -- "--out $T/var/b .*--cap-memory 16 --slow-range 4096:16384 --warmup 20\$" "$T/var.calls" ||
  fail "variant b's options or folder: $(cat "$T/var.calls")"
for v in a b; do
  [ -s "$T/var/$v/nemotronh-m2-tiny.safetensors" ] || fail "variant $v: no checkpoint"
  members=$(tar -tf "$T/var/$v/train-logs.tar" | sort | tr '\n' ' ')
  [ "$members" = "./ ./context-nemotronh-m2-tiny.json ./context-nemotronh-m2-tiny.txt ./drift-nemotronh-m2-tiny.json ./drift-nemotronh-m2-tiny.txt ./full-nemotronh-m2-tiny.log ./smoke-nemotronh-m2-tiny.log ./sweep-nemotronh-m2-tiny.json ./sweep-nemotronh-m2-tiny.txt " ] ||
    fail "variant $v's logs: $members"
  # the checks' JSON (analysis/design_table.py reads them), each the variant's own
  js=$(tar -xOf "$T/var/$v/train-logs.tar" ./drift-nemotronh-m2-tiny.json ./context-nemotronh-m2-tiny.json)
  [ "$js" = "$(printf '["drift of %s"]\n["context of %s"]' "$T/var.work/rssm-drift/nemotronh-m2-tiny-$v.h5" \
      "$T/var.work/rssm-drift/nemotronh-m2-tiny-$v/nemotronh-m2-tiny")" ] || fail "variant $v's check JSON: $js"
  # (listings are read whole before grep: grep -q closing the pipe early would fail tar under pipefail)
  verdict=$(tar -xOf "$T/var/$v/train-logs.tar" ./drift-nemotronh-m2-tiny.txt)
  grep -q "verdict on $T/var.work/rssm-drift/nemotronh-m2-tiny-$v.h5" <<<"$verdict" ||
    fail "variant $v: the drift verdict is not its own"
  grep -q "drift check of nemotronh-m2-tiny-$v:" "$T/var.out" || fail "variant $v: no verdict in the output"
  # the window sweep: the variant's own model, its own verdict and JSON, in the output
  sweep=$(tar -xOf "$T/var/$v/train-logs.tar" ./sweep-nemotronh-m2-tiny.txt ./sweep-nemotronh-m2-tiny.json)
  [ "$sweep" = "$(printf 'window_sweep_check: verdict on %s\n["sweep of %s"]' "$T/var.work/rssm-drift/nemotronh-m2-tiny-$v-sweep.h5" \
      "$T/var.work/rssm-drift/nemotronh-m2-tiny-$v-sweep.h5")" ] || fail "variant $v's window sweep: $sweep"
  grep -q "window sweep of nemotronh-m2-tiny-$v:" "$T/var.out" || fail "variant $v: no window sweep in the output"
  # the context check: after the drift check, of the variant's own model, on the GPU, through a
  # wrapper that reaches the CUDA replayssm even though the check runs despite the missed bar
  context=$(tar -xOf "$T/var/$v/train-logs.tar" ./context-nemotronh-m2-tiny.txt)
  grep -q -- "--model $T/var.work/rssm-drift/nemotronh-m2-tiny-$v/nemotronh-m2-tiny --bin .* --device cuda" <<<"$context" ||
    fail "variant $v: the context check's options: $context"
  grep -q "context check of nemotronh-m2-tiny-$v:" "$T/var.out" || fail "variant $v: no context table in the output"
  mkdir -p "$T/dest-$v"
  bash "$ROOT/scripts/install_trained_models.sh" "$T/var/$v" "$T/dest-$v" >/dev/null
  grep -q "trained in $T/var/$v\$" "$T/dest-$v/nemotronh-m2-tiny/train.log" ||
    fail "variant $v: installed with another run's log"
done
[ ! -e "$T/var/train-logs.tar" ] || fail "variants: a shared log archive beside the variants' own"
[ "$(grep -c -- "--device cuda" "$T/var.runs")" = 4 ] || fail "drift check: not two GPU runs per variant (drift, sweep)"
grep -q -- "--model $T/var.work/rssm-drift/nemotronh-m2-tiny-b/nemotronh-m2-tiny --tokens $T/tokens.zst --config replay L=4 hp=fp32 lp=nvfp4 --config replay L=16 hp=fp32 lp=nvfp4 --config replay L=64 hp=fp32 lp=nvfp4 --steps 4096 --sequences 1" "$T/var.runs" ||
  fail "window sweep: the run's options: $(cat "$T/var.runs")"
[ "$(grep -c -- "^logits --fake" "$T/var.runs")" = 2 ] || fail "context check: its wrapper did not run replayssm"
grep -q -- "--model $T/var.work/rssm-drift/nemotronh-m2-tiny-a/nemotronh-m2-tiny --tokens $T/tokens.zst .*--steps 8192 --sequences 1" "$T/var.runs" ||
  fail "drift check: the run's options: $(cat "$T/var.runs")"

# both models: per-model options and INIT_FROM, one log archive, no drift check unless asked
session both INIT_FROM=/prev M2_INIT_FROM= GDN_ARGS="--cap-memory 100" M2_ARGS="--cap-memory 16"
[ "$rc" = 0 ] || fail "both: exit $rc: $(tail -n 5 "$T/both.out")"
grep -q -- "^qwen35-gdn-tiny .*--train-seconds 5 .*--cap-memory 100 --init-from /prev/qwen35-gdn-tiny\$" "$T/both.calls" ||
  fail "both: the GDN job's options: $(cat "$T/both.calls")"
grep -q -- "^nemotronh-m2-tiny .*--train-seconds 5 .*--cap-memory 16\$" "$T/both.calls" ||
  fail "both: the Mamba-2 job (M2_INIT_FROM set and empty: from scratch): $(cat "$T/both.calls")"
for m in qwen35-gdn-tiny nemotronh-m2-tiny; do
  [ -s "$T/both/$m.safetensors" ] || fail "both: no $m checkpoint"
  members=$(tar -tf "$T/both/train-logs.tar")
  grep -qx "./full-$m.log" <<<"$members" || fail "both: no full-$m.log"
done
[ ! -e "$T/both.runs" ] || fail "both: a drift check ran without DRIFT_CHECK=1"
members=$(tar -tf "$T/both/train-logs.tar")
! grep -q "context-" <<<"$members" || fail "both: a context check ran without CONTEXT_CHECK=1"

# the corpus carried packed (scripts/pack_corpus.sh): unpacked into CORPUS as gzip texts with the
# same bytes, and the training told where it is
bash "$ROOT/scripts/pack_corpus.sh" "$T/corpus" "$T/packed.txz" >/dev/null
mkdir -p "$T/p2" && cp "$T/packed.txz" "$T/p2/c.txz"
session packed CORPUS="$T/p2/c" ONLY=nemotronh-m2-tiny
[ "$rc" = 0 ] || fail "packed corpus: exit $rc: $(tail -n 3 "$T/packed.out")"
for f in a b; do
  cmp -s <(gzip -dc "$T/p2/c/$f.txt.gz") "$T/$f.txt" || fail "packed corpus: $f.txt.gz differs"
done
cmp -s "$T/p2/c/MANIFEST" "$T/corpus/MANIFEST" || fail "packed corpus: MANIFEST differs"
grep -q -- "--corpus $T/p2/c\( \|\$\)" "$T/packed.calls" || fail "packed corpus: not passed on: $(cat "$T/packed.calls")"
[ ! -e "$T/p2/c.unpack" ] || fail "packed corpus: scratch folder left"
# a text whose size is not MANIFEST's, or no corpus at all: one line, exit 1, nothing trained
mkdir -p "$T/bad/t" && printf 'x\n' >"$T/bad/t/a.txt"
printf 'a.txt.gz 11 test\n' >"$T/bad/t/MANIFEST"
tar -C "$T/bad/t" -cJf "$T/bad/c.txz" .
for c in "$T/bad/c" "$T/none/c"; do
  session unpack CORPUS="$c" ONLY=nemotronh-m2-tiny
  [ "$rc" = 1 ] || fail "corpus $c: exit $rc, expected 1"
  [ ! -e "$T/unpack.calls" ] || fail "corpus $c: something trained"
  [ ! -e "$c" ] && [ ! -e "$c.unpack" ] || fail "corpus $c: a partial corpus folder was left"
  want="c.txz missing"
  [ "$c" = "$T/none/c" ] || want="c.txz: a.txt: expected 11 bytes (MANIFEST), found 2"
  grep -q "$want" "$T/unpack.out" || fail "corpus $c: '$(cat "$T/unpack.out")' does not say '$want'"
done

# refusals: one line, exit 2, nothing trained
check_refused() { # WHAT EXPECTED-TEXT ENV...
  local what=$1 text=$2; shift 2
  session bad "$@"
  [ "$rc" = 2 ] || fail "$what: exit $rc, expected 2"
  [ "$(wc -l <"$T/bad.out")" = 1 ] || fail "$what: not one line: $(cat "$T/bad.out")"
  grep -q -- "$text" "$T/bad.out" || fail "$what: '$(cat "$T/bad.out")' does not say '$text'"
  [ ! -e "$T/bad.calls" ] || fail "$what: something trained"
}
check_refused "variants of two models" "expected ONLY=one model" VARIANTS="a=--warmup 20"
check_refused "a tag with a space" "expected TAG=OPTIONS" ONLY=nemotronh-m2-tiny VARIANTS="a b=--warmup 20"
check_refused "no options" "expected TAG=OPTIONS" ONLY=nemotronh-m2-tiny VARIANTS="a"
check_refused "a tag twice" "tag 'a' given twice" ONLY=nemotronh-m2-tiny VARIANTS="a=--warmup 20;a=--warmup 30"
check_refused "an unknown model" "ONLY='m3'" ONLY=m3
echo "test_train_session: passed"
