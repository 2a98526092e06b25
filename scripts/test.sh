#!/usr/bin/env bash
# Installs what is missing, builds into build/ with warnings as errors, runs every test, then the
# same CPU tests under AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/), then each
# libFuzzer target for a few seconds, and prints the totals. This is what CI runs (.ci/run).
#   RSSM_TEST_QUICK=1  only the first pass (no sanitizer build, no fuzzing)
#   FUZZ_SECONDS       seconds per fuzz target (default 5)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build}

passed=0
failed=0
# run_ctest DIR: runs ctest in DIR, adds its counts to the totals; returns ctest's status.
run_ctest() {
  local dir=$1 log="$1/ctest.log" rc summary f t
  set +e
  (cd "$dir" && ctest --output-on-failure -j"${JOBS:-2}") 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  set -e
  # ctest's summary: "NN% tests passed, F tests failed out of T"
  summary=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)
  if [ -z "$summary" ]; then
    echo "test.sh: ctest ran no tests in $dir (exit status $rc)" >&2
    return 1
  fi
  f=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$summary")
  t=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/' <<<"$summary")
  passed=$((passed + t - f))
  failed=$((failed + f))
  [ "$rc" -eq 0 ] && [ "$f" -eq 0 ] && [ "$t" -gt 0 ]
}

status=0
# The layering (docs/architecture.md): every #include under src/ and quant/ goes downwards (also
# a ctest test, with its negative check; here first, so that a violation is the first thing seen).
if bash scripts/check_layers.sh; then passed=$((passed + 1)); else failed=$((failed + 1)); status=1; fi
run_ctest "$BUILD_DIR" || status=1

if [ "${RSSM_TEST_QUICK:-0}" != 1 ]; then
  # The CPU code again under ASan + UBSan (CUDA off: the sanitizers do not see device code).
  SAN_DIR=${SAN_BUILD_DIR:-build-asan}
  cmake -S . -B "$SAN_DIR" -DRSSM_SANITIZE=ON -DRSSM_CUDA=OFF -DRSSM_WERROR=ON >/dev/null
  cmake --build "$SAN_DIR" -j"${JOBS:-2}"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_ctest "$SAN_DIR" || status=1
  # Every parser of outside input, fuzzed briefly (long runs: docs/fuzzing.md).
  if bash scripts/fuzz.sh "${FUZZ_SECONDS:-5}"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    status=1
  fi
fi

echo
echo "ctest: $passed passed, $failed failed"
exit $status
