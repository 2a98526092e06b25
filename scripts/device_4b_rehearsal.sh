#!/bin/bash
# Dress rehearsal at the paper's scale (issue 22, docs/real-checkpoints.md): for Qwen3.5-4B and
# Nemotron-3-Nano-4B, write a random-initialised checkpoint in the released layout (sharded
# bf16, scripts/make_4b_checkpoints.py, on the GPU) into $WORK (not $OUT), then
# `replayssm run --device cuda` of the paper's configuration set (experiments/
# paper_kl_vs_length.ini: reference, control, conventional fp8/sr, shared fp8/sr and nvfp4/sr,
# split nvfp4 with fp32, fp16/sr, fp16 and fp8/sr recurrences) on 1 window x $STEPS tokens of
# data/moby-dick.tok.zst, reading the checkpoint from disk. Records the load time, the device
# memory (nvidia-smi polled every 250 ms, and the runtime's RSSM_CUDA_MEMINFO=1 line with its
# own estimate), the time of every block of steps (RSSM_BLOCK_TIMES=1), the summaries, and at
# the end the runtime's refusal of the paper's full run (4 windows x 131072) on one GPU, which
# names the rows that fit.
#
#   OUT=DIR scripts/device_4b_rehearsal.sh [--smoke]
#
#   --smoke       the same pipeline on tiny checkpoints of the same layouts (make_4b --tiny) and
#                 256 steps: about a minute; run it first
#   STEPS=N       steps of the 4B runs (default 3072; 16384 takes ~7 min for Qwen and ~6 min for
#                 Nemotron: one model per device call, with ONLY)
#   ONLY=M        only model M (qwen or nemotron); the other's log is absent from the summary
#                 (rehearsal_summary.py can be run again on both calls' logs together)
#   BLOCK=N       steps per block (the timing resolution; default 256, --smoke 32)
#   BUDGET_S=S    wall-clock budget of the whole script (default 270): Nemotron's steps are
#                 cut to what fits after Qwen, the refusal check is skipped when it would not
#                 fit, and every run is stopped (SIGINT: the steps so far are kept) at the budget
#   WORK=DIR      where the checkpoints go (default /tmp/rssm4b; removed at the end unless
#                 KEEP=1)
#   FAULTS_ONLY=D only the shard fault checks on checkpoint D (truncates one of its shards)
#   BIN, PY       the replayssm binary (.devrun/bin/replayssm) and python (python3)
#   WRITER=W      make_4b_checkpoints.py --writer: auto (default: transformers' save_pretrained,
#                 falling back to the numpy writer of the same names), transformers or direct
#
# Files in $OUT (8): rehearsal.log (everything, timestamped), checkpoints.json (make_4b's
# reports), MODEL.log (the run's stderr with timestamps, nvidia-smi peak, replayssm summary) and
# MODEL.h5 for both models, summary.md and summary.json (scripts/rehearsal_summary.py: load
# time, memory measured and estimated, ms per step at the start and the end, the fit
# t_step(pos) = a + b pos, the control's KL floor, the projection to 4 x 131072 on 1 and 8
# H200s). Exit status: 0 when both models ran, 1 otherwise (the other model's numbers are kept).
set -u
T_START=$(date +%s.%N)
SMOKE=0
for a in "$@"; do
  case $a in
    --smoke) SMOKE=1 ;;
    *) echo "device_4b_rehearsal: unknown argument '$a' (expected --smoke)" >&2; exit 2 ;;
  esac
done
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT" || exit 2
: "${OUT:?device_4b_rehearsal: set OUT to the folder for the logs}"
BIN=${BIN:-$ROOT/.devrun/bin/replayssm}
PY=${PY:-python3}
WORK=${WORK:-/tmp/rssm4b}
BUDGET_S=${BUDGET_S:-270}
TOKENS=$ROOT/data/moby-dick.tok.zst
INI=$ROOT/experiments/paper_kl_vs_length.ini
if [ "$SMOKE" = 1 ]; then STEPS=${STEPS:-256}; TINY=--tiny; BLOCK=${BLOCK:-32}
else STEPS=${STEPS:-3072}; TINY=; BLOCK=${BLOCK:-256}; fi
export LD_LIBRARY_PATH=$ROOT/.devrun/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
mkdir -p "$OUT" "$WORK" || exit 2
LOG=$OUT/rehearsal.log
: > "$LOG"

elapsed() { echo "$(date +%s.%N) $T_START" | awk '{printf "%.0f", $1 - $2}'; }
left() { echo $((BUDGET_S - $(elapsed))); }
say() { echo "[$(date -u +%H:%M:%S) +$(elapsed)s] $*" | tee -a "$LOG"; }
# prefix every line with the epoch time (the summary computes load and step times from them)
stamp() { while IFS= read -r line; do printf '%s %s\n' "$(date +%s.%N)" "$line"; done; }

for f in "$BIN" "$TOKENS" "$INI" "$ROOT/scripts/make_4b_checkpoints.py"; do
  [ -e "$f" ] || { say "missing $f"; exit 2; }
done
say "device_4b_rehearsal: smoke=$SMOKE steps=$STEPS budget=${BUDGET_S}s work=$WORK out=$OUT"
{ nvidia-smi -L; nvidia-smi --query-gpu=name,memory.total,memory.used,driver_version --format=csv
  "$BIN" --version; "$PY" --version; df -h "$WORK" | tail -1; free -g | head -2; } >> "$LOG" 2>&1
NVSMI=1
nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits > /dev/null 2>&1 || NVSMI=0

# $1 model key (qwen|nemotron), $2 checkpoint folder name, $3 steps, $4 seconds of the budget
# to leave for what follows (the run is stopped by SIGINT before it would eat them)
run_model() {
  local key=$1 name=$2 steps=$3 reserve=${4:-5}
  local dir=$WORK/$name mlog=$OUT/$name.log ini=$WORK/$name.ini h5=$WORK/$name.h5
  local t0 rc
  say "$name: checkpoint (make_4b_checkpoints.py --model $key $TINY)"
  t0=$(date +%s.%N)
  timeout "$(( $(left) > 30 ? $(left) : 30 ))" "$PY" scripts/make_4b_checkpoints.py "$WORK" \
    --model "$key" $TINY --writer "${WRITER:-auto}" --report "$WORK/$key.report.json" 2>&1 |
    tee -a "$LOG"
  rc=${PIPESTATUS[0]}
  say "$name: make_4b exit $rc after $(echo "$(date +%s.%N) $t0" | awk '{printf "%.1f", $1-$2}') s"
  if [ ! -f "$dir/model.safetensors.index.json" ]; then
    say "$name: no checkpoint written; skipping its run"
    return 1
  fi
  du -sh "$dir" >> "$LOG" 2>&1
  # the paper's experiment file with this model, 1 window, $steps steps, blocks of $BLOCK steps
  sed -e "s#^model = .*#model = $dir#" -e "s#^tokens = .*#tokens = $TOKENS#" \
      -e "s#^sequences = .*#sequences = 1#" -e "s#^steps = .*#steps = $steps#" \
      -e "s#^block = .*#block = $BLOCK#" "$INI" > "$ini"
  local mem=$WORK/$name.mem pid_smi=
  if [ "$NVSMI" = 1 ]; then
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 250 > "$mem" 2>/dev/null &
    pid_smi=$!
    sleep 0.5
  fi
  local lim=$(( $(left) - reserve ))
  [ "$lim" -lt 20 ] && lim=20
  say "$name: replayssm run --device cuda, $steps steps, stopped at $lim s if still running"
  {
    echo "@@ start $(date +%s.%N) steps $steps"
    RSSM_CUDA_MEMINFO=1 RSSM_BLOCK_TIMES=1 RSSM_PROGRESS_SECONDS=30 \
      timeout -s INT -k 30 "$lim" "$BIN" run "$ini" --device cuda --out "$h5" --force 2>&1
    echo "@@ exit $? $(date +%s.%N)"
  } | stamp > "$mlog"
  [ -n "$pid_smi" ] && kill "$pid_smi" 2> /dev/null && wait "$pid_smi" 2> /dev/null
  if [ -s "$mem" ]; then
    sort -n "$mem" | awk 'NR==1{lo=$1} {hi=$1} END{printf "@@ nvidia-smi memory.used MiB: min %d max %d samples %d\n", lo, hi, NR}' >> "$mlog"
  fi
  grep -v "^[0-9.]* replayssm run: [0-9]* s: step" "$mlog" | tail -n 12 | tee -a "$LOG"
  rc=$(awk '/@@ exit/{print $4}' "$mlog" | tail -1)
  if [ -f "$h5" ]; then
    cp "$h5" "$OUT/$name.h5"
    "$BIN" summary "$h5" >> "$mlog" 2>&1
  elif [ -f "$h5.part" ]; then
    say "$name: stopped early; $h5.part holds the steps written"
    cp "$h5.part" "$OUT/$name.h5"
  fi
  say "$name: run exit ${rc:-?}"
  [ "${rc:-1}" = 0 ]
}

# Shard faults on the 4B checkpoint itself (docs/real-checkpoints.md; issue 22): each must be
# exit 2 with one line naming the file, before any weight is converted (well under a second).
# $1 checkpoint folder, $2 the model's log. The last one truncates a shard in place.
fault_checks() {
  local dir=$1 mlog=$2 f=$WORK/faults shard2 rc line
  shard2=$(ls "$dir"/model-*-of-*.safetensors 2> /dev/null | sed -n 2p)
  [ -n "$shard2" ] || shard2=$(ls "$dir"/model-*-of-*.safetensors 2> /dev/null | sed -n 1p)
  [ -n "$shard2" ] || { say "fault checks skipped: no shard files in $dir"; return; }
  run_fault() { # $1 name, $2 model folder
    "$BIN" logits --model "$2" --tokens "$TOKENS" --steps 1 --out "$WORK/fault.npy" \
      > "$WORK/fault.txt" 2>&1
    rc=$?
    line=$(grep -v "warning:" "$WORK/fault.txt" | tail -n 2 | tr '\n' ' ')
    echo "@@ fault $1: exit $rc: $line" | tee -a "$LOG" >> "$mlog"
  }
  rm -rf "$f" && mkdir -p "$f/missing" "$f/absent"
  ln -s "$dir"/* "$f/missing/" && rm "$f/missing/$(basename "$shard2")"
  run_fault missing-shard "$f/missing"
  ln -s "$dir"/* "$f/absent/" && rm "$f/absent/model.safetensors.index.json"
  "$PY" -c 'import json, sys
m = json.load(open(sys.argv[1])); k = sorted(m["weight_map"])[-1]
m["weight_map"][k] = "model-00009-of-00002.safetensors"; json.dump(m, open(sys.argv[2], "w"))' \
    "$dir/model.safetensors.index.json" "$f/absent/model.safetensors.index.json"
  run_fault index-names-absent-file "$f/absent"
  truncate -s -1000 "$shard2" && run_fault truncated-shard "$dir"
  rm -rf "$f"
}

# FAULTS_ONLY=DIR: only the shard fault checks, on (a copy you can spare of) checkpoint DIR
if [ -n "${FAULTS_ONLY:-}" ]; then
  fault_checks "$FAULTS_ONLY" "$OUT/faults.log"
  exit 0
fi

if [ "$SMOKE" = 1 ]; then
  Q=qwen3.5-tiny; N=nemotron-h-tiny
else
  Q=qwen3.5-4b; N=nemotron-3-nano-4b
fi
ONLY=${ONLY:-}
case $ONLY in
  ''|qwen|nemotron) ;;
  *) echo "device_4b_rehearsal: ONLY='$ONLY' (expected qwen or nemotron)" >&2; exit 2 ;;
esac
want() { [ -z "$ONLY" ] || [ "$ONLY" = "$1" ]; }
ok=0
# Qwen leaves ~100 s for Nemotron (checkpoint, load, a few blocks)
if want qwen; then
  run_model qwen "$Q" "$STEPS" "$([ "$SMOKE" = 1 ] && echo 20 || echo 100)" && ok=$((ok + 1))
fi
[ -d "$WORK/$Q" ] && [ "${KEEP:-0}" != 1 ] && fault_checks "$WORK/$Q" "$OUT/$Q.log"
[ "${KEEP:-0}" = 1 ] || rm -rf "${WORK:?}/$Q"

# Nemotron's steps: what fits in the budget after Qwen (Qwen's load and step times as bounds)
STEPS_N=$STEPS
if [ -f "$OUT/$Q.log" ] && want nemotron; then
  STEPS_N=$("$PY" scripts/rehearsal_summary.py --plan "$OUT/$Q.log" --steps "$STEPS" \
    --left "$(left)" --reserve 10 $([ "$SMOKE" = 1 ] || echo --refusal) 2>> "$LOG" || echo "$STEPS")
fi
[ "$STEPS_N" != "$STEPS" ] && say "$N: $STEPS_N steps (cut from $STEPS to fit the budget)"
if want nemotron; then
  run_model nemotron "$N" "$STEPS_N" 40 && ok=$((ok + 1))
fi

# The paper's full run on one GPU (4 windows x 131072, 36 rows): refused before allocating, the
# message naming the rows that fit (needs the checkpoint's load again, ~the load time above).
if [ "$SMOKE" = 1 ]; then
  say "refusal check skipped (--smoke: the tiny models fit at any length)"
elif [ -d "$WORK/$N" ] && [ "$(left)" -gt 40 ]; then
  say "$N: the paper's full run (4 x 131072) on one GPU: expect a refusal naming what fits"
  {
    RSSM_CUDA_MEMINFO=1 timeout -s INT -k 5 "$(( $(left) - 12 ))" "$BIN" run "$INI" \
      --device cuda --model "$WORK/$N" --tokens "$TOKENS" --out "$WORK/refusal.h5" --force 2>&1
    echo "@@ exit $?"
  } | stamp | tee -a "$OUT/$N.log" >> "$LOG"
  tail -n 3 "$LOG"
else
  say "refusal check skipped ($(left) s left)"
fi
[ "${KEEP:-0}" = 1 ] || rm -rf "${WORK:?}/$N"

"$PY" -c 'import glob, json, sys
print(json.dumps([json.load(open(p)) for p in sorted(glob.glob(sys.argv[1] + "/*.report.json"))], indent=1))' \
  "$WORK" > "$OUT/checkpoints.json" 2>> "$LOG"
"$PY" scripts/rehearsal_summary.py --out-dir "$OUT" --steps "$STEPS" "$OUT/$Q.log" \
  "$OUT/$N.log" 2>&1 | tee -a "$LOG"
wanted=$([ -n "$ONLY" ] && echo 1 || echo 2)
say "done: $ok of $wanted models ran; files: $(ls "$OUT" | tr '\n' ' ')"
[ "$ok" = "$wanted" ]
