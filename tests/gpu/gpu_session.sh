#!/usr/bin/env bash
# The GPU runtime's checks in one go (docs/gpu-runtime.md, "Next GPU session"), from the
# repository root on the device machine, with the executables in $BIN (default .devrun/bin,
# libraries bundled in .devrun/lib). Writes its files to $OUT (default /tmp/rssm-gpu) and prints
# one line per check; exit status = the number of failed checks.
#
#   tests/gpu/gpu_session.sh                  # everything (a few minutes on one H200)
#   DEVICE=cpu tests/gpu/gpu_session.sh       # the same script against the CPU (a dry run of
#                                             # its logic on a machine without a GPU)
#
# 1. gpu_check_quant, gpu_check_mc_kernels, gpu_check_mc_forward (the default step and the
#    plain one), gpu_check_ssm's conventional step (fused, the default,
#    and unfused), gpu_check_attn_lab, gpu_check_gemm_lab (device only);
# 2. `logits --device $DEVICE` on the transformers fixtures against their golden logits
#    (max|d| / max|ref| <= 1e-4 per step; a fixture the GPU refuses, "not supported on the
#    GPU", is a failed check: the GPU runtime covers every fixture layout);
# 3. per fixture (qwen3_5_text, nemotron_h): a run on the CPU and on $DEVICE of the same
#    experiment, compared with tests/gpu/compare_runs.py (per step for the fp32 control,
#    statistically for quantised states); then on $DEVICE: a run killed after block 3 and
#    resumed, two shards merged, and a run replayed from CUDA Graphs, each bit-identical to the
#    plain $DEVICE run.
# 4. spec configurations (issue 19) on both fixtures and both trained models (data/models/*):
#    `spec L=16 T=4 ckpt=fp32 accept=uniform` (the fp32 control) and `spec L=16 T=8 hp=fp32
#    lp=nvfp4 accept=geom:0.7` beside the reference and a standard configuration: CPU against
#    $DEVICE (compare_runs.py; the control's mean KL at most 1e-10 on both devices), then on
#    $DEVICE a killed-and-resumed run and two merged shards, each bit-identical to the plain run;
#    a bad spec request (T > L) gets one line and exit 2, and (cuda only) a batch that does not
#    fit in the device memory (RSSM_TEST_CUDA_FREE_BYTES pretends the free memory) names how
#    many rows fit, exit 2.
set -u
BIN=${BIN:-.devrun/bin}
OUT=${OUT:-/tmp/rssm-gpu}
DEV=${DEVICE:-cuda}
PY=${PY:-python3}
export LD_LIBRARY_PATH=.devrun/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
mkdir -p "$OUT"
fail=0
check() { # NAME COMMAND...: run, report, count failures
  local name=$1; shift
  if "$@" > "$OUT/$name.log" 2>&1; then echo "ok    $name"; else
    echo "FAIL  $name (see $OUT/$name.log)"; tail -5 "$OUT/$name.log" | sed 's/^/      /'
    fail=$((fail + 1)); fi
}

if [ "$DEV" = cuda ]; then
  check quant "$BIN/gpu_check_quant"
  check kernels "$BIN/gpu_check_mc_kernels"
  check forward "$BIN/gpu_check_mc_forward" tests/fixtures 64
  # the step's other modes (mc_fused.h, ssm_cuda_api.cu's fused_step_on): the same bits each
  check forward-plain env RSSM_FUSED_NORMS=0 RSSM_FUSED_STEP=0 "$BIN/gpu_check_mc_forward" tests/fixtures 64
  # the SSM engine's conventional step fused (the default) and as plan + flush + book
  check ssm-conventional timeout 120 "$BIN/gpu_check_ssm" 0.5 conventional
  check ssm-conventional-unfused env RSSM_FUSED_STEP=0 timeout 120 "$BIN/gpu_check_ssm" 0.5 conventional
  check spec-kernels "$BIN/gpu_check_mc_spec"
  check attn-lab "$BIN/gpu_check_attn_lab" # the attention lab (docs/bench-attention.md), self-contained
  # the small-GEMM lab (docs/bench-gemm.md; reads data/models and data/shapes), capped so that a slow
  # host reference cannot eat the session step's limit
  check gemm-lab timeout 150 "$BIN/gpu_check_gemm_lab"
fi

logits_vs_golden() { # FIXTURE [CONFIG]
  local f=$1 rc=0 cfg=${2:-conventional state=fp32}
  "$BIN/replayssm" logits --device "$DEV" --model "tests/fixtures/$f" --config "$cfg" \
    --tokens "tests/fixtures/$f/tokens.npy" --out "$OUT/$f.logits.npy" 2> "$OUT/$f.logits.err" || rc=$?
  [ $rc -eq 0 ] || { cat "$OUT/$f.logits.err"; return 1; }
  "$PY" - "$OUT/$f.logits.npy" "tests/fixtures/$f/ref_logits.npy" <<'EOF'
import sys, numpy as np
a, r = np.load(sys.argv[1]).astype(np.float64), np.load(sys.argv[2]).astype(np.float64)
rel = np.abs(a - r).max(axis=1) / np.abs(r).max(axis=1)
print(f"worst relative error per step {rel.max():.3g} (<= 1e-4)")
sys.exit(0 if rel.max() <= 1e-4 else 1)
EOF
}
for f in qwen3_5_text qwen3_5_vl qwen3_next nemotron_h qwen3_5_moe nemotron_h_moe; do
  check "logits-$f" logits_vs_golden "$f"
done
# a spec configuration's accepted positions (the fp32 control) against the same goldens
for f in qwen3_5_text nemotron_h; do
  check "logits-spec-$f" logits_vs_golden "$f" "spec L=16 T=4 ckpt=fp32 accept=uniform"
done

killed_then_resumed() { # INI OUT
  RSSM_TEST_KILL_AFTER_BLOCK=3 "$BIN/replayssm" run "$1" --device "$DEV" --out "$2" --quiet
  local rc=$?
  [ $rc -ne 0 ] || { echo "the run was not killed"; return 1; }
  "$BIN/replayssm" run "$1" --device "$DEV" --out "$2" --resume --quiet
}
sharded() { # INI OUT
  "$BIN/replayssm" run "$1" --device "$DEV" --shard 0/2 --out "$2.s0.h5" --quiet &&
    "$BIN/replayssm" run "$1" --device "$DEV" --shard 1/2 --out "$2.s1.h5" --quiet &&
    "$BIN/replayssm" merge "$2" "$2.s0.h5" "$2.s1.h5"
}

for f in qwen3_5_text nemotron_h; do
  ini="$OUT/$f.ini"
  cat > "$ini" <<EOF
model = $PWD/tests/fixtures/$f
tokens = $PWD/tests/fixtures/$f/tokens.npy
steps = 200
sequences = 2
seed = 5
block = 32
checkpoint_every = 64

[config control]
spec = replay L=16 ckpt=fp32

[config fp8sr]
spec = conventional state=fp8/sr

[config split]
spec = replay L=16 hp=fp32 lp=nvfp4
EOF
  rm -f "$OUT/$f".*.h5 "$OUT/$f".*.h5.*
  check "run-$f-cpu" "$BIN/replayssm" run "$ini" --device cpu --out "$OUT/$f.cpu.h5" --quiet
  check "run-$f-$DEV" env RSSM_CUDA_GRAPH=0 "$BIN/replayssm" run "$ini" --device "$DEV" --out "$OUT/$f.dev.h5" --quiet
  check "agree-$f" "$PY" tests/gpu/compare_runs.py "$OUT/$f.cpu.h5" "$OUT/$f.dev.h5" --fp32 control
  check "resume-$f" killed_then_resumed "$ini" "$OUT/$f.kill.h5"
  check "resume-$f-exact" "$PY" tests/gpu/compare_runs.py "$OUT/$f.dev.h5" "$OUT/$f.kill.h5" --exact
  check "shards-$f" sharded "$ini" "$OUT/$f.merged.h5"
  check "shards-$f-exact" "$PY" tests/gpu/compare_runs.py "$OUT/$f.dev.h5" "$OUT/$f.merged.h5" --exact
  check "graph-$f" env RSSM_CUDA_GRAPH=1 "$BIN/replayssm" run "$ini" --device "$DEV" \
    --out "$OUT/$f.graph.h5" --quiet
  check "graph-$f-exact" "$PY" tests/gpu/compare_runs.py "$OUT/$f.dev.h5" "$OUT/$f.graph.h5" --exact
done
# H5 CONFIG BOUND: mean kl of CONFIG at most BOUND and above 0: an fp32 control differs from the
# reference in its summation order, so a mean of exactly 0 would mean that its metrics compared
# something with itself (e.g. a reference-ring slot never written: the spec metrics read kl = 0)
kl_floor() {
  "$PY" - "$@" <<'EOF'
import sys, h5py, numpy as np
kl = h5py.File(sys.argv[1], "r")[f"configs/{sys.argv[2]}/kl"][:].astype(np.float64)
m = float(np.mean(kl))
print(f"{sys.argv[2]}: mean kl {m:.3g} (in (0, {sys.argv[3]}]), max {float(kl.max()):.3g}")
sys.exit(0 if np.isfinite(m) and 0 < m <= float(sys.argv[3]) else 1)
EOF
}
refused() { # EXPECTED-TEXT COMMAND...: exit status 2 with one line on stderr naming it
  local want=$1 rc=0; shift
  "$@" > "$OUT/refused.out" 2> "$OUT/refused.err" || rc=$?
  cat "$OUT/refused.err"
  [ $rc -eq 2 ] || { echo "exit status $rc (expected 2)"; return 1; }
  [ "$(wc -l < "$OUT/refused.err")" -eq 1 ] || { echo "expected one line on stderr"; return 1; }
  grep -q -- "$want" "$OUT/refused.err" || { echo "expected '$want' in the message"; return 1; }
}

for m in tests/fixtures/qwen3_5_text tests/fixtures/nemotron_h data/models/qwen35-gdn-tiny \
         data/models/nemotronh-m2-tiny; do
  f=spec-$(basename "$m")
  ini="$OUT/$f.ini"
  cat > "$ini" <<EOF
model = $PWD/$m
tokens = $PWD/$m/tokens.npy
steps = 200
sequences = 2
seed = 5
block = 32
checkpoint_every = 64

[config speccontrol]
spec = spec L=16 T=4 ckpt=fp32 accept=uniform

[config std]
spec = replay L=16 hp=fp32 lp=nvfp4

[config specsplit]
spec = spec L=16 T=8 hp=fp32 lp=nvfp4 accept=geom:0.7
EOF
  rm -f "$OUT/$f".*.h5 "$OUT/$f".*.h5.*
  check "$f-cpu" "$BIN/replayssm" run "$ini" --device cpu --out "$OUT/$f.cpu.h5" --quiet
  check "$f-$DEV" "$BIN/replayssm" run "$ini" --device "$DEV" --out "$OUT/$f.dev.h5" --quiet
  check "$f-agree" "$PY" tests/gpu/compare_runs.py "$OUT/$f.cpu.h5" "$OUT/$f.dev.h5" --fp32 speccontrol
  check "$f-floor-cpu" kl_floor "$OUT/$f.cpu.h5" speccontrol 1e-10
  check "$f-floor-$DEV" kl_floor "$OUT/$f.dev.h5" speccontrol 1e-10
  check "$f-resume" killed_then_resumed "$ini" "$OUT/$f.kill.h5"
  check "$f-resume-exact" "$PY" tests/gpu/compare_runs.py "$OUT/$f.dev.h5" "$OUT/$f.kill.h5" --exact
  check "$f-shards" sharded "$ini" "$OUT/$f.merged.h5"
  check "$f-shards-exact" "$PY" tests/gpu/compare_runs.py "$OUT/$f.dev.h5" "$OUT/$f.merged.h5" --exact
done

bad="$OUT/spec-bad.ini"
sed 's/spec L=16 T=8 hp=fp32/spec L=4 T=8 hp=fp32/' "$OUT/spec-qwen3_5_text.ini" > "$bad"
check spec-refuses-T-over-L refused "T=8 > L=4" "$BIN/replayssm" run "$bad" --device "$DEV" \
  --out "$OUT/spec-bad.h5" --quiet --force
if [ "$DEV" = cuda ]; then
  check spec-refuses-oom refused "rows fit" env RSSM_TEST_CUDA_FREE_BYTES=100000 \
    "$BIN/replayssm" run "$OUT/spec-qwen3_5_text.ini" --device cuda --out "$OUT/spec-oom.h5" \
    --quiet --force
fi

echo "$fail failed check(s); files in $OUT"
exit $fail
