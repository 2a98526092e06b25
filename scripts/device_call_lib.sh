# Sourced by a device call's script (results/<folder>/callN/device-call.sh) after it has cd'ed to
# the repository root: the frame every call has had since session 29, in one place.
#   OUT         the device tool's return folder (required); at most 8 files come back, so the
#               call's outputs are written under $W and packed into $OUT/call.tgz by `pack`
#   CALL_LIMIT  seconds the call may take (default DEVICE_CALL_LIMIT, set by the script)
# Gives: $W (outputs), $B (the bundle's binaries, unpacked from .devrun.txz, with
# LD_LIBRARY_PATH set to its libraries and CUDA's), left (seconds left), stamp MSG (a timed line
# into $W/stamps.txt and stdout), pack (call.tgz, and e2e.csv beside it when there is one),
# e2e_fixture / e2e_shape / e2e_trace (issue 18's bench e2e runs), gemm_lt_bench (cuBLASLt's ranks) and
# gpu_session_run (every GPU check),
# below; writes the GPU's name into $W/gpu.txt.
: "${OUT:?set OUT}"
T0=$(date +%s)
LIMIT=${CALL_LIMIT:-${DEVICE_CALL_LIMIT:-220}}
W=/tmp/w
rm -rf "$W" && mkdir -p "$W"
left() { echo $((LIMIT - ($(date +%s) - T0))); }
stamp() { echo "[$(($(date +%s) - T0)) s] $*" | tee -a "$W/stamps.txt"; }
pack() { tar czf "$OUT/call.tgz" -C "$W" . ; cp "$W/e2e.csv" "$OUT/" 2>/dev/null; }
tar -xJf .devrun.txz || { echo "cannot unpack the bundle .devrun.txz"; exit 2; }
export LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64
B=.devrun/bin
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee "$W/gpu.txt"

# e2e_fixture REPLAYSSM MODEL LABEL [HF_JSON]: issue 18's fixture figure (bench e2e bf16, K = 16,
# 64 steps after 8) into $W/e2e.csv and e2e.log, followed by transformers' decode of the same
# model when HF_JSON is given (the same-call ratio); stamps ms a step, transformers' ms, ratio.
e2e_fixture() {
  local hf=(); [ -n "${4:-}" ] && hf=(--transformers python3 --transformers-json "$4")
  timeout 90 "$1" bench e2e --model "data/models/$2" --streams 16 --steps 64 --warmup 8 \
    --gemm bf16 --configs 'conventional state=fp32' --label "$3" "${hf[@]}" \
    --out "$W/e2e.csv" >> "$W/e2e.log" 2>&1
  stamp "e2e $3 rc=$? $(tail -n 1 "$W/e2e.csv" | cut -d, -f11,26,27)"
}
# e2e_shape REPLAYSSM SHAPE LABEL: the 4B shapes' figure (K = 64, bf16, 32 steps after 4); stamps
# ms a step and the fraction of the byte limit.
e2e_shape() {
  timeout "${E2E_SHAPE_TIMEOUT:-30}" "$1" bench e2e --shape "$2" --streams 64 --steps 32 --warmup 4 --gemm bf16 \
    --micro off --configs 'conventional state=fp32' --label "$3" --out "$W/e2e.csv" \
    >> "$W/e2e.log" 2>&1
  stamp "e2e $3 rc=$? $(tail -n 1 "$W/e2e.csv" | cut -d, -f11,20)"
}
# gpu_session_run SECONDS: tests/gpu/gpu_session.sh on the bundle into $W/gpu-session.txt, the
# logs of failed checks into $W/failed/ (its other files dropped: the 8-file return limit).
gpu_session_run() {
  HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 OUT=$W/gs BIN=$B timeout "$1" bash tests/gpu/gpu_session.sh \
    > "$W/gpu-session.txt" 2>&1
  stamp "gpu_session rc=$? $(tail -n 1 "$W/gpu-session.txt")"
  mkdir -p "$W/failed"
  for n in $(grep '^FAIL' "$W/gpu-session.txt" | awk '{print $2}'); do
    cp "$W/gs/$n.log" "$W/failed/" 2>/dev/null
  done
  rm -rf "$W/gs"
}
# e2e_trace REPLAYSSM MODEL LABEL: e2e_fixture's run (no transformers; label trace-LABEL) under
# tests/gpu/kernel_trace.c (.devrun/lib/librssm_kernel_trace.so, with libcupti.so.13 beside it),
# the graph's timeline into $W/trace-LABEL.txt (tests/gpu/kernel_trace.py; the raw CSV dropped:
# the return limit); stamps the step's sum.
e2e_trace() {
  CUDA_INJECTION64_PATH=$PWD/.devrun/lib/librssm_kernel_trace.so RSSM_TRACE_OUT=$W/trace-$3.csv \
    e2e_fixture "$1" "$2" "trace-$3"
  python3 tests/gpu/kernel_trace.py "$W/trace-$3.csv" > "$W/trace-$3.txt" 2>&1
  stamp "trace $3: $(grep '^step' "$W/trace-$3.txt")"
  rm -f "$W/trace-$3.csv"
}
# e2e_trace_shape REPLAYSSM SHAPE LABEL: e2e_shape's run (label trace-LABEL) under the kernel
# tracer, as e2e_trace: the 4B step's timeline by kernel into $W/trace-LABEL.txt.
e2e_trace_shape() {
  CUDA_INJECTION64_PATH=$PWD/.devrun/lib/librssm_kernel_trace.so RSSM_TRACE_OUT=$W/trace-$3.csv \
    E2E_SHAPE_TIMEOUT=60 e2e_shape "$1" "$2" "trace-$3"
  python3 tests/gpu/kernel_trace.py "$W/trace-$3.csv" > "$W/trace-$3.txt" 2>&1
  stamp "trace $3: $(grep '^step' "$W/trace-$3.txt")"
  rm -f "$W/trace-$3.csv"
}
# ab_rounds N OLD_BIN NEW_BIN MODEL...: N rounds of e2e_fixture per model on both builds, old
# first (labels old-MODEL-ROUND, new-MODEL-ROUND): the same-call A/B of a change.
ab_rounds() {
  local n=$1 old=$2 new=$3 rep m
  shift 3
  for rep in $(seq 1 "$n"); do
    for m in "$@"; do
      e2e_fixture "$old" "$m" "old-$m-$rep"
      e2e_fixture "$new" "$m" "new-$m-$rep"
    done
  done
}
# gpu_check NAME SECONDS COMMAND...: one GPU check under a time limit into $W/chk-NAME.log;
# stamps its exit status and last line.
gpu_check() {
  local n=$1 t=$2
  shift 2
  timeout "$t" "$@" > "$W/chk-$n.log" 2>&1
  stamp "check $n rc=$? $(tail -n 1 "$W/chk-$n.log")"
}
# hf_rounds N MODEL...: N rounds of e2e_fixture with transformers after it, per model, on
# $B/replayssm (issue 18's same-call ratio; labels hf-MODEL-ROUND, transformers' JSON beside
# them); a run is skipped when 25 s or less are left.
hf_rounds() {
  local n=$1 rep m
  shift
  for rep in $(seq 1 "$n"); do
    for m in "$@"; do
      [ "$(left)" -gt 25 ] || { stamp "skip $m"; continue; }
      e2e_fixture $B/replayssm "$m" "hf-$m-$rep" "$W/hf_$m-$rep.json"
    done
  done
}
# gemm_lt_bench SECONDS: `bench gemm` of cublasGemmEx and cuBLASLt's ranks lt0..lt7 on the 4B
# GEMMs (64 rows, bf16, each variant checked against fp64 first) into $W/bench-gemm-lt.txt; sets
# OUTR, the rank taking least time on the output projections (rows < cols, calls x us summed over
# both shapes), and ALLR, the rank whose whole step in a graph takes least (summed); each
# variant's totals go to stamps.txt. Empty when no lt variant was timed.
gemm_lt_bench() {
  timeout "$1" $B/replayssm bench gemm --shape qwen4b,nano4b --rows 64 --prec bf16 \
    --variants cublas,lt0,lt1,lt2,lt3,lt4,lt5,lt6,lt7 --reps 10 > "$W/bench-gemm-lt.txt" 2>&1
  stamp "bench gemm lt rc=$? $(grep -c 'check.*pass' "$W/bench-gemm-lt.txt") checks passed, $(grep -c 'check.*FAIL' "$W/bench-gemm-lt.txt") failed"
  local best='END {b=""; for (v in t) if (v ~ /^lt/ && (b=="" || t[v]<t[b])) b=v;
    printf "%s", substr(b,3); for (v in t) printf " %s=%.1f", v, t[v] > "/dev/stderr"}'
  OUTR=$(awk '$2=="bf16" && $4!="step" && $4!="best:" && $5+0>0 && $5+0<$7+0 {t[$9]+=$8*$10} '"$best" \
    "$W/bench-gemm-lt.txt" 2>>"$W/stamps.txt")
  ALLR=$(awk '$4=="step" && $5=="in" {t[$8]+=$9} '"$best" "$W/bench-gemm-lt.txt" 2>>"$W/stamps.txt")
  echo >> "$W/stamps.txt"
  stamp "best lt rank: out ${OUTR:-none}, all ${ALLR:-none}"
}
