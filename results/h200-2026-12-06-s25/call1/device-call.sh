#!/usr/bin/env bash
# Session 25, call 1 (refused, 15:16 UTC: never ran). Eleven refused starts (12:44-14:24 UTC) cost 1444 s of the session's 1800,
# leaving no room for a training draw that could meet bits per byte (2600 or even 2200 steps:
# prepared/device-call-m2ml1s2-and-repro.sh). What fits (~250 s) and helps the next session:
# (a) the GPU reproductions (session 23's prepared/device-call-repro.sh: Fig. 5/12 at 4 x 32768,
#     Fig. 13 and Table 11 at 16384, bits per byte) of session 24's short m2ml1s2 draw
#     (.m2init/s24out/m2ml1s2, 1500 steps, 2.145 bits per byte, not installable): does the design
#     hold the ratio (>= 10 in the last bucket of 4 x 32768) and the window sweep (<= 1.5 at
#     Fig. 13's own scale on the GPU) before a longer draw is spent on it?
# (b) in the time left: is training repeatable at full speed with `--deterministic cudnn`? Two
#     runs of 100 steps of the m2ml1s2 design (session 24's prepared/device-call-det-cudnn.sh,
#     shortened), the second only when the first finished at full speed (<= 15 s of training;
#     plain ~13 s).
# Carry .devrun.txz, data/moby-dick.tok.zst, .m2init/s24out/m2ml1s2, .corpus.txz; tree trimmed.
set -uo pipefail
tar -xJf .devrun.txz
scratch=$(mktemp -d)
FROM=${FROM:-.m2init/s24out/m2ml1s2}
bash scripts/install_trained_models.sh "$FROM" "$scratch" || exit 2
cp "$scratch"/nemotronh-m2-tiny/* data/models/nemotronh-m2-tiny/
sha256sum data/models/nemotronh-m2-tiny/model.safetensors
LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64 ONLY=nemotronh-m2-tiny OUT=$OUT/repro \
  STEPS_KL=32768 timeout -s INT -k 10 200 bash scripts/gpu_reproductions.sh
echo "reproductions done after $SECONDS s"
[ $SECONDS -lt 220 ] || { echo "determinism check skipped after $SECONDS s"; exit 0; }
mkdir -p /tmp/c && tar -xJf .corpus.txz -C /tmp/c && gzip -1 -n -f /tmp/c/*.txt
D="--cap-memory 16 --slow-per-layer 2 --slow-range 4096:8192 --medium-memory 240 --medium-layers 1,2,3"
seconds_of() { grep -ho "trained 100 steps ([^)]*) in [0-9.]* s" "$1" | awk '{print $(NF-1)}'; }
hash_of() { grep -ho "fp32 weights sha256 [0-9a-f]*" "$1"; }
for t in cudnn1 cudnn2; do
  timeout 40 python3 scripts/train_fixture_models.py --model nemotronh-m2-tiny --out /tmp/o$t \
    --work /tmp/w$t --corpus /tmp/c $D --warmup 20 --train-steps 100 --deterministic cudnn \
    >"$OUT/$t.log" 2>&1
  rc=$?; s=$(seconds_of "$OUT/$t.log")
  echo "$t exit $rc, trained in ${s:-?} s, $(hash_of "$OUT/$t.log")"
  [ $rc = 0 ] && [ -n "$s" ] && awk -v s="$s" 'BEGIN{exit !(s <= 15)}' || break
done
grep -H "Error\|rror:" "$OUT"/cudnn*.log | cut -c1-240
echo "determinism check done after $SECONDS s"
