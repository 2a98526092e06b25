#!/usr/bin/env bash
# Packs a CUDA build of replayssm for the GPU machine as .devrun.txz (ignored by git; a device call
# carries it and unpacks it with `tar -xJf .devrun.txz`, then runs with
# LD_LIBRARY_PATH=$PWD/.devrun/lib:/usr/local/cuda/lib64, set explicitly: the machine presets its own).
#   bash scripts/bundle_device.sh            replayssm, the GPU checks (build/tests/gpu) and every
#                                            library bundle-libs.sh finds: ~18 MB
#   MIN=1 bash scripts/bundle_device.sh      replayssm alone, with only the libraries the machine
#                                            lacks: ~5 MB, so that it fits beside .corpus/ in one
#                                            call's 64 MiB (training with DRIFT_CHECK=1)
#   BUILD_DIR    the CUDA build (default build-cuda: BUILD_DIR=build-cuda bash scripts/setup.sh)
#   BUNDLE_LIBS  the workplace's bundle-libs.sh (default ../shared/device/bundle-libs.sh)
# The machine (Ubuntu 24.04, CUDA 13) has libzstd, libhdf5_serial and its dependencies, but not
# GSL, cJSON, libinih or GLib: session 11's first cut bundle lacked libglib-2.0, which replayssm
# links, and its runs exited 127 (docs/gpu-results.md, "Session 11").
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-cuda}
BUNDLE_LIBS=${BUNDLE_LIBS:-../shared/device/bundle-libs.sh}
MISSING_ON_DEVICE=(libcjson.so.1 libgsl.so.27 libgslcblas.so.0 libinih.so.1 libglib-2.0.so.0
                   libpcre2-8.so.0)
die() { echo "bundle_device: $*" >&2; exit 2; }
[ -x "$BUILD_DIR/replayssm" ] || die "$BUILD_DIR/replayssm: not found (expected a CUDA build: BUILD_DIR=$BUILD_DIR bash scripts/setup.sh)"
[ -f "$BUNDLE_LIBS" ] || die "$BUNDLE_LIBS: not found (expected the workplace's bundle-libs.sh; set BUNDLE_LIBS)"
rm -rf .devrun .devrun.txz
mkdir -p .devrun/bin
cp "$BUILD_DIR/replayssm" .devrun/bin/
if [ "${MIN:-0}" != 1 ]; then
  cp "$BUILD_DIR"/tests/gpu/gpu_check_* "$BUILD_DIR"/tests/gpu/gpu_golden_bytes .devrun/bin/
fi
strip .devrun/bin/*
bash "$BUNDLE_LIBS" .devrun .devrun/bin/*
if [ "${MIN:-0}" = 1 ]; then
  for lib in .devrun/lib/*; do
    keep=0
    for m in "${MISSING_ON_DEVICE[@]}"; do [ "$(basename "$lib")" = "$m" ] && keep=1; done
    [ $keep = 1 ] || rm -f "$lib"
  done
  for m in "${MISSING_ON_DEVICE[@]}"; do
    [ -f ".devrun/lib/$m" ] || die "$m: not bundled (ldd of replayssm does not name it; update MISSING_ON_DEVICE)"
  done
fi
tar -I 'xz -T2 -6' -cf .devrun.txz .devrun
echo "bundle_device: .devrun.txz $(du -h .devrun.txz | cut -f1) ($(ls .devrun/bin | wc -l) executables, $(ls .devrun/lib | wc -l) libraries)"
