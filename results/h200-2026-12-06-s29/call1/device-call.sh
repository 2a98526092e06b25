#!/usr/bin/env bash
# Session 29, call 1 (issue 18): Programmatic Dependent Launch in the decode step (every step
# kernel launched by pdl_launch and waiting first in pdl_enter: src/ssm_cuda/cuda_pdl.cuh), one
# binary with the switch RSSM_PDL=0 (plain launches, as before) or RSSM_PDL=1 (PDL):
#   1. gpu_launch_lab: small kernels in a graph, plain and with PDL; fixture GEMM shapes;
#   2. whole runs, RSSM_PDL=0 against PDL, bit for bit (compare_runs.py --exact): both trained
#      models, 2 x 1024 Moby-Dick steps, three standard configurations, and a spec run;
#   3. bench e2e (bf16, K = 16), plain and PDL alternating twice per model, then transformers;
#   3b. nsys (if the machine has it): one fixture step's kernels in the graph, with PDL;
#   4. tests/gpu/gpu_session.sh (every GPU check) with PDL;
#   5. scripts/bench/bench_e2e_session.sh with PDL (fp32 and bf16, the 4B shapes), if time is left.
# Carry .devrun.txz (full executables, only the libraries the machine lacks), .devrun-fuse.txz
# (session 28's replayssm) and data/moby-dick.tok.zst; trimmed tree (results/ but this folder moved away).
set -u
cd "$(dirname "$0")/../../.."
: "${OUT:?set OUT}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
tar -xJf .devrun.txz && tar -xJf .devrun-fuse.txz || { echo "cannot unpack the bundles"; exit 2; }
OLD=.devrun-fuse/bin/replayssm
export LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64
BIN=.devrun/bin/replayssm
export RSSM_PDL=1 # PDL everywhere below unless a command says RSSM_PDL=0
LOG=$OUT/session.log
T0=$SECONDS
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; } | tee "$LOG"

echo "== 1. launch lab" | tee -a "$LOG"
timeout 90 .devrun/bin/gpu_launch_lab 200 > "$OUT/launch-lab.txt" 2>&1
echo "gpu_launch_lab rc=$? ($((SECONDS - T0)) s)" | tee -a "$LOG"
cat "$OUT/launch-lab.txt"

echo "== 2. runs: old, new plain, new PDL" | tee -a "$LOG"
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
  for b in old plain pdl; do
    pdl=1; [ $b = pdl ] || pdl=0
    bin=$BIN; [ $b = old ] && bin=$OLD
    t0=$SECONDS
    RSSM_PDL=$pdl timeout 150 "$bin" run --device cuda --model "data/models/$m" --tokens data/moby-dick.tok.zst \
      --config 'replay L=16 ckpt=fp32' --config 'replay L=16 ckpt=nvfp4/sr' \
      --config 'replay L=16 hp=fp32 lp=nvfp4' --steps 1024 --sequences 2 --seed 1 --quiet --force \
      --out "$W/$m-$b.h5" >> "$OUT/runs.log" 2>&1
    echo "$m $b std rc=$? $((SECONDS - t0)) s" | tee -a "$LOG"
    RSSM_PDL=$pdl timeout 100 "$bin" run "$W/spec-$m.ini" --device cuda --quiet --force --out "$W/spec-$m-$b.h5" >> "$OUT/runs.log" 2>&1
    echo "$m $b spec rc=$?" | tee -a "$LOG"
  done
  python3 tests/gpu/compare_runs.py "$W/$m-old.h5" "$W/$m-plain.h5" --exact >> "$OUT/runs.log" 2>&1
  echo "$m std old == plain: rc=$?" | tee -a "$LOG"
  python3 tests/gpu/compare_runs.py "$W/spec-$m-old.h5" "$W/spec-$m-plain.h5" --exact >> "$OUT/runs.log" 2>&1
  echo "$m spec old == plain: rc=$?" | tee -a "$LOG"
  python3 tests/gpu/compare_runs.py "$W/$m-plain.h5" "$W/$m-pdl.h5" --exact >> "$OUT/runs.log" 2>&1
  echo "$m std plain == pdl: rc=$?" | tee -a "$LOG"
  python3 tests/gpu/compare_runs.py "$W/spec-$m-plain.h5" "$W/spec-$m-pdl.h5" --exact >> "$OUT/runs.log" 2>&1
  echo "$m spec plain == pdl: rc=$?" | tee -a "$LOG"
done

echo "== 3. bench e2e, bf16 GEMMs, K = 16 ($((SECONDS - T0)) s)" | tee -a "$LOG"
for m in qwen35-gdn-tiny nemotronh-m2-tiny; do
  for rep in 1 2; do
    for b in old plain pdl; do
      pdl=1; [ $b = pdl ] || pdl=0
      bin=$BIN; [ $b = old ] && bin=$OLD
      RSSM_PDL=$pdl timeout 60 "$bin" bench e2e --model "data/models/$m" --streams 16 --steps 64 --warmup 8 \
        --gemm bf16 --configs 'conventional state=fp32' --label "$m-$b-$rep" --out "$OUT/e2e.csv" \
        >> "$OUT/e2e.log" 2>&1
      echo "$m $b rep $rep rc=$? $(tail -1 "$OUT/e2e.csv" | cut -c1-160)" | tee -a "$LOG"
    done
  done
  timeout 150 "$BIN" bench e2e --model "data/models/$m" --streams 16 --steps 64 --warmup 8 \
    --gemm bf16 --configs 'conventional state=fp32' --label "$m-pdl-hf" --out "$OUT/e2e.csv" \
    --transformers python3 --transformers-json "$OUT/hf_$m.json" >> "$OUT/e2e.log" 2>&1
  echo "$m pdl + transformers rc=$?" | tee -a "$LOG"
  grep -iE "speed-?up" "$OUT/e2e.log" | tail -2 | tee -a "$LOG"
done

echo "== 3b. nsys, if the machine has it ($((SECONDS - T0)) s)" | tee -a "$LOG"
NSYS=$(command -v nsys || ls /opt/nvidia/nsight-systems/*/bin/nsys /usr/local/cuda/bin/nsys 2>/dev/null | head -1)
echo "nsys: ${NSYS:-none}" | tee -a "$LOG"
if [ -n "$NSYS" ]; then
  m=nemotronh-m2-tiny
  timeout 50 "$NSYS" profile --cuda-graph-trace=node -t cuda -f true -o /tmp/prof-$m \
    "$BIN" bench e2e --model data/models/$m --streams 16 --steps 32 --warmup 8 \
    --gemm bf16 --configs 'conventional state=fp32' > /tmp/prof-$m.log 2>&1
  echo "nsys profile rc=$?" | tee -a "$LOG"
  timeout 40 "$NSYS" stats -r cuda_gpu_trace -f csv -o /tmp/trace-$m /tmp/prof-$m.nsys-rep >> /tmp/prof-$m.log 2>&1
  echo "nsys stats rc=$?" | tee -a "$LOG"
  tar -C /tmp -cJf "$OUT/nsys.txz" $(cd /tmp && ls trace-* prof-*.log 2>/dev/null)
fi

echo "== 4. gpu_session ($((SECONDS - T0)) s)" | tee -a "$LOG"
OUT=/tmp/gs timeout 240 bash tests/gpu/gpu_session.sh > "$OUT/gpu-session.txt" 2>&1
echo "gpu_session rc=$? ($((SECONDS - T0)) s)" | tee -a "$LOG"
tar -C /tmp -cJf "$OUT/gpu-session-logs.txz" gs
tail -40 "$OUT/gpu-session.txt"

left=$((${CALL_LIMIT:-585} - (SECONDS - T0)))
echo "== 5. bench_e2e_session with $left s left" | tee -a "$LOG"
if [ $left -gt 60 ]; then
  mkdir -p /tmp/e2e
  OUT=/tmp/e2e timeout $left bash scripts/bench/bench_e2e_session.sh > /tmp/e2e/stdout.log 2>&1
  echo "bench_e2e_session rc=$? ($((SECONDS - T0)) s)" | tee -a "$LOG"
  tar -C /tmp -cJf "$OUT/e2e-session.txz" e2e
  grep -E "MISSED|met|byte limit" /tmp/e2e/summary.md | tail -12
fi
echo "call done after $((SECONDS - T0)) s" | tee -a "$LOG"
