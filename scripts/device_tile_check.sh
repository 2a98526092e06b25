#!/bin/bash
# Row-count invariance on the 16-row GEMM tile (docs/gpu-runtime.md, "GEMMs and the row tile").
# tests/gpu/gpu_session.sh checks shards and resume on the fixtures, whose GEMMs run on 64-row
# tiles; models with over 1 GiB of GEMM weights run on 16-row tiles, and this checks those: a
# random Qwen3.5-4B checkpoint in the released layout (scripts/make_4b_checkpoints.py, on the
# GPU, into $WORK), then `replayssm run --device cuda` of 3 configurations (reference, fp32
# control, fp8/sr) x 6 windows = 18 rows (two tiles of 16), against
#   - its two shards (--shard 0/2, 1/2: 9 rows, one tile each, every row at another position of
#     its tile) merged, and
#   - the same run killed after block 3 and resumed,
# each bit for bit (tests/gpu/compare_runs.py --exact); and the run's RSSM_CUDA_MEMINFO=1 line
# must name the expected tile. Prints one line per check; exit status = the failed checks.
#
#   OUT=DIR scripts/device_tile_check.sh       # ~3-4 min on one H200 (5 loads of the 4B model)
#
#   MODEL=qwen|nemotron  which 4B layout (default qwen)
#   MODEL_DIR=D          use checkpoint D instead of writing one (TILE then says what to expect)
#   TILE=N               the tile the memory line must name (default 16; 64 for a small model)
#   DEVICE=cpu           the same runs on the CPU (a dry run of the script's logic; no memory line
#                        is checked), e.g. DEVICE=cpu MODEL_DIR=data/models/qwen35-gdn-tiny
#   STEPS=N              steps (default 64, at least 64: blocks of 16, killed after block 3,
#                        checkpoints every 32)
#   WORK=DIR             where the checkpoint and the run files go (default /tmp/rssm4b-tile;
#                        removed at the end unless KEEP=1); $OUT gets only the logs (a 4B run's
#                        checkpoints hold every row's SSM states: about 1 GB each)
#   BIN, PY              the replayssm binary (.devrun/bin/replayssm) and python (python3)
#   TOKENS=F             the token file (default MODEL_DIR/tokens.npy when there is one, else
#                        tests/fixtures/qwen3_5_text/tokens.npy)
#   SPEC=1               add a spec configuration (spec L=16 T=4 ckpt=fp32 accept=uniform: a
#                        spec batch of 6 x 4 = 24 token rows, two tiles of 16; a shard's 12, one)
#   RSSM_TEST_ROW_TILE=16  the runtime's tile whatever the weights (checks only): the same checks
#                        on a small model in seconds, e.g. for each fixture layout (MoE included)
#                        RSSM_TEST_ROW_TILE=16 SPEC=1 MODEL_DIR=tests/fixtures/qwen3_5_moe OUT=...
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
: "${OUT:?device_tile_check: set OUT to the folder for the logs}"
BIN=${BIN:-$ROOT/.devrun/bin/replayssm}
PY=${PY:-python3}
DEV=${DEVICE:-cuda}
MODEL=${MODEL:-qwen}
STEPS=${STEPS:-64}
TILE=${TILE:-16}
WORK=${WORK:-/tmp/rssm4b-tile}
export LD_LIBRARY_PATH=$ROOT/.devrun/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
[ "$STEPS" -ge 64 ] 2> /dev/null || { echo "device_tile_check: STEPS=$STEPS (at least 64)" >&2; exit 2; }
RUNS=$WORK/runs
mkdir -p "$OUT" "$WORK" "$RUNS" || exit 2
fail=0
check() { # NAME COMMAND...: run, report, count failures
  local name=$1; shift
  if "$@" > "$OUT/$name.log" 2>&1; then echo "ok    $name"; else
    echo "FAIL  $name (see $OUT/$name.log)"; tail -5 "$OUT/$name.log" | sed 's/^/      /'
    fail=$((fail + 1)); fi
}

dir=${MODEL_DIR:-}
if [ -z "$dir" ]; then
  case $MODEL in
    qwen) dir=$WORK/qwen3.5-4b ;;
    nemotron) dir=$WORK/nemotron-3-nano-4b ;;
    *) echo "device_tile_check: MODEL '$MODEL' (expected qwen or nemotron)" >&2; exit 2 ;;
  esac
  check "checkpoint-$MODEL" "$PY" scripts/make_4b_checkpoints.py "$WORK" --model "$MODEL"
  [ -f "$dir/model.safetensors.index.json" ] || { echo "no checkpoint in $dir"; exit 1; }
fi

tokens=${TOKENS:-}
if [ -z "$tokens" ]; then
  if [ -f "$dir/tokens.npy" ]; then tokens=$(cd "$dir" && pwd)/tokens.npy
  else tokens=$ROOT/tests/fixtures/qwen3_5_text/tokens.npy; fi
fi
ini=$OUT/tile.ini
cat > "$ini" <<EOF
model = $(cd "$dir" && pwd)
tokens = $tokens
steps = $STEPS
sequences = 6
seed = 7
block = 16
checkpoint_every = 32

[config control]
spec = replay L=16 ckpt=fp32

[config fp8sr]
spec = conventional state=fp8/sr
EOF
if [ "${SPEC:-0}" = 1 ]; then
  printf '\n[config spec]\nspec = spec L=16 T=4 ckpt=fp32 accept=uniform\n' >> "$ini"
fi
rm -f "$RUNS"/tile.*.h5 "$RUNS"/tile.*.h5.*

plain() { # the 18-row run, with the memory line on stderr
  RSSM_CUDA_MEMINFO=1 "$BIN" run "$ini" --device "$DEV" --out "$RUNS/tile.plain.h5" --quiet
}
tile_line() { # the memory line names GEMM row tile $TILE
  [ "$DEV" != cuda ] && { echo "device $DEV: no memory line"; return 0; }
  grep "cuda memory:" "$OUT/plain.log" || { echo "no RSSM_CUDA_MEMINFO line"; return 1; }
  grep -q "GEMM row tile $TILE " "$OUT/plain.log" || { echo "expected 'GEMM row tile $TILE'"; return 1; }
}
sharded() {
  "$BIN" run "$ini" --device "$DEV" --shard 0/2 --out "$RUNS/tile.s0.h5" --quiet &&
    "$BIN" run "$ini" --device "$DEV" --shard 1/2 --out "$RUNS/tile.s1.h5" --quiet &&
    "$BIN" merge "$RUNS/tile.merged.h5" "$RUNS/tile.s0.h5" "$RUNS/tile.s1.h5"
}
killed_then_resumed() {
  RSSM_TEST_KILL_AFTER_BLOCK=3 "$BIN" run "$ini" --device "$DEV" --out "$RUNS/tile.kill.h5" --quiet
  local rc=$?
  [ $rc -ne 0 ] || { echo "the run was not killed"; return 1; }
  "$BIN" run "$ini" --device "$DEV" --out "$RUNS/tile.kill.h5" --resume --quiet
}

check plain plain
check tile-line tile_line
check shards sharded
check shards-exact "$PY" tests/gpu/compare_runs.py "$RUNS/tile.plain.h5" "$RUNS/tile.merged.h5" --exact
check resume killed_then_resumed
check resume-exact "$PY" tests/gpu/compare_runs.py "$RUNS/tile.plain.h5" "$RUNS/tile.kill.h5" --exact

if [ "${KEEP:-0}" != 1 ]; then
  rm -rf "$RUNS"
  [ -z "${MODEL_DIR:-}" ] && rm -rf "$WORK"
fi
echo "$fail failed check(s)"
exit "$fail"
