#!/usr/bin/env bash
# Session 28, issue 18 point 2: the fused SSM-block glue of branch s28-fuse (Mamba-2 and GDN conv +
# prep in one launch, Mamba-2's output gate + group norm in one: 3 launches fewer a GDN block, 4 a
# Mamba-2 block) against the shipped build (57546ec's C sources), both on this device in one call:
#   1. gpu_check_mc_kernels of the branch: every kernel against the CPU, and the fused kernels
#      against the unfused ones bit for bit (window, cv, every prep output, gate + norm, bf16 copy);
#   2. whole runs, old binary against new, bit for bit (tests/gpu/compare_runs.py --exact): both
#      trained models, 2 x 1024 Moby-Dick steps, three standard configurations, and a spec run
#      (the spec path keeps the unfused conv + prep, shares the fused gate + norm);
#   3. `bench e2e` (bf16 GEMMs, K = 16, C = 1), old and new alternating twice per model, then
#      transformers' own decode of the same model and K (--transformers) with the new build.
# Carry .devrun.txz (the shipped build, MIN=1) and .devrun-fuse.txz (the branch's replayssm and
# gpu_check_mc_kernels), data/moby-dick.tok.zst. Files in $OUT: kernels.log, runs.log, e2e.csv,
# hf_<model>.json, session.log. About 2-3 minutes.
set -u
cd "$(dirname "$0")/../../.."
: "${OUT:?set OUT}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
tar -xJf .devrun.txz && tar -xJf .devrun-fuse.txz || { echo "cannot unpack the bundles"; exit 2; }
export LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64
OLD=.devrun/bin/replayssm
NEW=.devrun-fuse/bin/replayssm
LOG=$OUT/session.log
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; } | tee "$LOG"

echo "== 1. kernels" | tee -a "$LOG"
timeout 120 .devrun-fuse/bin/gpu_check_mc_kernels > "$OUT/kernels.log" 2>&1
echo "gpu_check_mc_kernels rc=$?" | tee -a "$LOG"
grep -E "fused|FAIL|failing" "$OUT/kernels.log" | tee -a "$LOG" | tail -12

echo "== 2. runs, old against new" | tee -a "$LOG"
W=$(mktemp -d)
for m in nemotronh-m2-tiny qwen35-gdn-tiny; do
  cat > "$W/spec-$m.ini" <<INI
model = $PWD/data/models/$m
tokens = $PWD/data/moby-dick.tok.zst
steps = 256
sequences = 2
seed = 5
block = 64

[config speccontrol]
spec = spec L=16 T=4 ckpt=fp32 accept=uniform

[config std]
spec = replay L=16 hp=fp32 lp=nvfp4

[config specsplit]
spec = spec L=16 T=8 hp=fp32 lp=nvfp4 accept=geom:0.7
INI
  for b in old new; do
    bin=$OLD; [ $b = new ] && bin=$NEW
    t0=$SECONDS
    timeout 150 "$bin" run --device cuda --model "data/models/$m" --tokens data/moby-dick.tok.zst \
      --config 'replay L=16 ckpt=fp32' --config 'replay L=16 ckpt=nvfp4/sr' \
      --config 'replay L=16 hp=fp32 lp=nvfp4' --steps 1024 --sequences 2 --seed 1 --quiet --force \
      --out "$W/$m-$b.h5" >> "$OUT/runs.log" 2>&1
    echo "$m $b std rc=$? $((SECONDS - t0)) s" | tee -a "$LOG"
    timeout 100 "$bin" run "$W/spec-$m.ini" --device cuda --quiet --force --out "$W/spec-$m-$b.h5" >> "$OUT/runs.log" 2>&1
    echo "$m $b spec rc=$?" | tee -a "$LOG"
  done
  python3 tests/gpu/compare_runs.py "$W/$m-old.h5" "$W/$m-new.h5" --exact >> "$OUT/runs.log" 2>&1
  echo "$m std old == new: rc=$?" | tee -a "$LOG"
  python3 tests/gpu/compare_runs.py "$W/spec-$m-old.h5" "$W/spec-$m-new.h5" --exact >> "$OUT/runs.log" 2>&1
  echo "$m spec old == new: rc=$?" | tee -a "$LOG"
done

echo "== 3. bench e2e, bf16 GEMMs, K = 16" | tee -a "$LOG"
for m in qwen35-gdn-tiny nemotronh-m2-tiny; do
  for rep in 1 2; do
    for b in old new; do
      bin=$OLD; [ $b = new ] && bin=$NEW
      timeout 60 "$bin" bench e2e --model "data/models/$m" --streams 16 --steps 64 --warmup 8 \
        --gemm bf16 --configs 'conventional state=fp32' --label "$m-$b-$rep" --out "$OUT/e2e.csv" \
        >> "$OUT/e2e.log" 2>&1
      echo "$m $b rep $rep rc=$? $(tail -1 "$OUT/e2e.csv" | cut -c1-200)" | tee -a "$LOG"
    done
  done
  timeout 150 "$NEW" bench e2e --model "data/models/$m" --streams 16 --steps 64 --warmup 8 \
    --gemm bf16 --configs 'conventional state=fp32' --label "$m-new-hf" --out "$OUT/e2e.csv" \
    --transformers python3 --transformers-json "$OUT/hf_$m.json" >> "$OUT/e2e.log" 2>&1
  echo "$m new + transformers rc=$?" | tee -a "$LOG"
  grep -iE "speed-?up|transformers" "$OUT/e2e.log" | tail -3 | tee -a "$LOG"
done
echo "call done after $SECONDS s" | tee -a "$LOG"
