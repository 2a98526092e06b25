#!/usr/bin/env bash
# session 14, device call: two Mamba-2 continuations, drift/context checks, a 1 x 8192 window-sweep
# proxy (split L=4 vs L=64), then the reproductions of the better one
set -u
date -u; nvidia-smi --query-gpu=name --format=csv,noheader
V=${V:-"a=--cap-memory 11;b=--cap-memory 11 --slow-range 2048:8192"}
ONLY=nemotronh-m2-tiny SKIP_SMOKE=1 M2_INIT_FROM=data/models \
  M2_ARGS="--warmup 20 --cap-memory 16 --slow-range 4096:8192 --m2-groups 4" DRIFT_CHECK=1 CONTEXT_CHECK=1 \
  CONTEXT_TIMEOUT=80 TRAIN_SECONDS=${TS:-340} OUT=$OUT/train VARIANTS="$V" \
  bash scripts/train_fixture_session.sh > $OUT/train-session.log 2>&1
echo "train rc=$? at ${SECONDS}s"; date -u
TAGS=$(echo "$V" | tr ';' '\n' | sed 's/=.*//')
for t in $TAGS; do
  d=/tmp/rssm-drift/nemotronh-m2-tiny-$t
  [ -x $d.bin ] && $d.bin run --model $d/nemotronh-m2-tiny --tokens data/moby-dick.tok.zst \
    --config 'replay L=4 hp=fp32 lp=nvfp4' --config 'replay L=64 hp=fp32 lp=nvfp4' --steps 8192 --sequences 1 \
    --seed 1 --device cuda --quiet --force --out $d-sweep.h5 > /tmp/rssm-logs/sweep-$t.txt 2>&1 &
done; wait
best= bestkey=
for t in $TAGS; do
  d=/tmp/rssm-logs/drift-nemotronh-m2-tiny-$t.txt
  bpb=$(grep -o '"heldout_bpb_fp32": [0-9.]*' /tmp/rssm-logs/full-nemotronh-m2-tiny-$t.log | tail -1 | awk '{print $2}')
  [ -n "$bpb" ] || continue
  miss=$(grep -c 'missed)' "$d" 2>/dev/null)
  sw=$(cd analysis && python3 -c "
import sys,numpy as np
from rssm_common import load_run
r=load_run('/tmp/rssm-drift/nemotronh-m2-tiny-$t-sweep.h5'); m=[float(np.nanmean(c.kl)) for c in r.configs]; print(f'{m[0]/m[1]:.3f}')" 2>/dev/null || echo 9)
  echo "sweep proxy $sw" >> /tmp/rssm-logs/sweep-$t.txt
  key=$(awk -v m="$miss" -v s="$sw" -v b="$bpb" 'BEGIN{printf "%d%d%d%.5f", m, (s > 1.5), (b > 2.1), b}')
  echo "variant $t: bpb $bpb, drift bars missed $miss, sweep proxy L4/L64 $sw"; grep -E "growth|shared / split" "$d"
  tail -1 /tmp/rssm-logs/context-nemotronh-m2-tiny-$t.txt 2>/dev/null
  if [ -z "$best" ] || [[ "$key" < "$bestkey" ]]; then best=$t bestkey=$key; fi
done
echo "chosen: ${best:-none}"
tar -cf $OUT/sweep-proxy.tar -C /tmp/rssm-logs $(cd /tmp/rssm-logs && ls sweep-*.txt) 2>/dev/null
[ -n "$best" ] || exit 1
for t in $TAGS; do [ "$t" = "$best" ] || rm -f $OUT/train/$t/nemotronh-m2-tiny.safetensors $OUT/train/$t/nemotronh-m2-tiny-rest.tar; done
mkdir -p data/models && rm -rf data/models/nemotronh-m2-tiny && cp -r /tmp/rssm-drift/nemotronh-m2-tiny-$best/nemotronh-m2-tiny data/models/
left=$((${END_S:-585} - SECONDS)); echo "repro with ${left}s"
LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64 ONLY=nemotronh-m2-tiny OUT=$OUT/repro-$best \
  STEPS_KL=32768 timeout $left bash scripts/gpu_reproductions.sh > $OUT/repro-$best.log 2>&1
echo "repro rc=$? at ${SECONDS}s"; tail -5 $OUT/repro-$best.log
rm -f $OUT/repro-$best/h5-*.tar.gz
