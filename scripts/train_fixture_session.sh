#!/usr/bin/env bash
# Trains both fixture models at once on one GPU machine (docs/trained-models.md), as one device
# call: a 12-second smoke run of each model first (the whole pipeline: design, training, bf16
# checkpoint, evaluation), then the real runs. Needs .corpus/ (scripts/fetch_corpus.sh) and
# data/moby-dick.txt (scripts/fetch_data.sh) in the working tree.
#   OUT            folder for the results (default: ./train-out)
#   TRAIN_SECONDS  training budget of each model (default: 470, so that the call fits 10 min)
#   INIT_FROM      continue the models in INIT_FROM/NAME (e.g. data/models) instead of random
#                  weights (--init-from; pass TRAIN_ARGS="--warmup 20" for a short warm-up)
#   GDN_INIT_FROM  per model, in place of INIT_FROM (set and empty: random weights), so that one
#   M2_INIT_FROM   call can continue one model and train the other afresh
#   TRAIN_ARGS     more options for scripts/train_fixture_models.py (e.g. "--warmup 20
#                  --long-beta 256": learned GDN heads that remember past 256 tokens write weakly;
#                  "--cap-memory 100 --slow-range 1024:8192": docs/next-session.md; per model:
#                  GDN_ARGS, M2_ARGS)
#   GDN_ARGS       options for qwen35-gdn-tiny only, after TRAIN_ARGS (e.g. "--cap-memory 100
#                  --slow-range 1024:8192")
#   M2_ARGS        options for nemotronh-m2-tiny only, after TRAIN_ARGS
#   ONLY           one model to train instead of both (qwen35-gdn-tiny or nemotronh-m2-tiny)
#   SKIP_SMOKE     1: no smoke run (a continuation of a call whose smoke run passed)
# Results: OUT/NAME.safetensors, OUT/NAME-rest.tar, OUT/train-logs.tar.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-./train-out}
TRAIN_SECONDS=${TRAIN_SECONDS:-470}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
mkdir -p "$OUT" /tmp/rssm-logs
# ONLY=NAME trains one of the two (e.g. a GDN-only change of the design: --cap-memory)
read -r -a MODELS <<< "${ONLY:-qwen35-gdn-tiny nemotronh-m2-tiny}"
for m in "${MODELS[@]}"; do
  case $m in qwen35-gdn-tiny | nemotronh-m2-tiny) ;;
    *) echo "train_session: ONLY='$m': expected qwen35-gdn-tiny or nemotronh-m2-tiny"; exit 2 ;;
  esac
done

# run_both SECONDS OUTDIR WORKDIR TAG: trains both models concurrently; fails if either did.
run_both() {
  local secs=$1 out=$2 work=$3 tag=$4 pids=() rc=0 m
  for m in "${MODELS[@]}"; do
    local own=${M2_ARGS:-} init=${M2_INIT_FROM-${INIT_FROM:-}}
    if [ "$m" = qwen35-gdn-tiny ]; then
      own=${GDN_ARGS:-}
      init=${GDN_INIT_FROM-${INIT_FROM:-}}
    fi
    # shellcheck disable=SC2086 # TRAIN_ARGS and own are lists of options
    python3 scripts/train_fixture_models.py --model "$m" --train-seconds "$secs" \
      --out "$out" --work "$work" ${TRAIN_ARGS:-} $own \
      $( [ -n "$init" ] && echo --init-from "$init/$m" ) \
      >"/tmp/rssm-logs/$tag-$m.log" 2>&1 &
    pids+=($!)
  done
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || { echo "train_session: $tag ${MODELS[$i]} failed"; rc=1; }
    grep -q '\] result: ' "/tmp/rssm-logs/$tag-${MODELS[$i]}.log" || rc=1
    tail -n 25 "/tmp/rssm-logs/$tag-${MODELS[$i]}.log" | cut -c1-300
  done
  return $rc
}

nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
# the training script's own checks first (a second; torch only)
for t in tests/train/test_slow_beta.py tests/train/test_m2_chunk.py \
         tests/train/test_train_scans.py tests/train/test_fast_scans.py; do
  if ! python3 "$t"; then
    echo "train_session: $t failed; no training"
    exit 1
  fi
done
if [ "${SKIP_SMOKE:-0}" = 1 ]; then
  echo "train_session: SKIP_SMOKE=1: no smoke run"
elif ! run_both 12 /tmp/rssm-smoke /tmp/rssm-smoke-work smoke; then
  tar -cf "$OUT/train-logs.tar" -C /tmp/rssm-logs .
  echo "train_session: smoke run failed; no real run"
  exit 1
fi
# the fast scans are what make the budget go far: a real run without them is not worth the call
if [ "${SKIP_SMOKE:-0}" != 1 ] && [[ " ${TRAIN_ARGS:-} " != *" --no-fast-scans "* ]]; then
  for m in "${MODELS[@]}"; do
    if ! grep -q "scan against transformers'.*-> on" "/tmp/rssm-logs/smoke-$m.log"; then
      tar -cf "$OUT/train-logs.tar" -C /tmp/rssm-logs .
      echo "train_session: $m: the fast scan did not switch on in the smoke run; no real run"
      exit 1
    fi
  done
fi
echo "train_session: smoke runs passed; training ${TRAIN_SECONDS} s each"
run_both "$TRAIN_SECONDS" "$OUT" /tmp/rssm-train full
rc=$?
tar -cf "$OUT/train-logs.tar" -C /tmp/rssm-logs .
ls -la "$OUT"
exit $rc
