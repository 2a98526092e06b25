#!/usr/bin/env bash
# Installs what is missing, builds into build/ with warnings as errors, runs every test, and
# prints the totals. This is what CI runs (.ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
BUILD_DIR=${BUILD_DIR:-build}

log="$BUILD_DIR/ctest.log"
set +e
(cd "$BUILD_DIR" && ctest --output-on-failure -j"${JOBS:-2}") 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e

# ctest's summary: "NN% tests passed, F tests failed out of T"
summary=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)
if [ -z "$summary" ]; then
  echo "test.sh: ctest ran no tests (exit status $rc)" >&2
  exit 1
fi
failed=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$summary")
total=$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/' <<<"$summary")
echo
echo "ctest: $((total - failed)) passed, $failed failed"
if [ "$rc" -ne 0 ] || [ "$failed" -ne 0 ] || [ "$total" -eq 0 ]; then
  exit 1
fi
