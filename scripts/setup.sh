#!/usr/bin/env bash
# Installs the Debian packages that the build, the tests, the demo and the analysis need (skipped
# when all are present), then configures and builds into build/ with warnings as errors, as CI
# does. Works on a fresh Debian 12 machine as root (or with sudo). CUDA code is compiled when
# /usr/local/cuda/bin/nvcc exists.
#   bash scripts/setup.sh [--target NAME]   build only NAME (e.g. replayssm: the tool without
#                                           the tests, what the quickstart runs); default: all
#   BUILD_DIR  build tree (default: build)      JOBS  parallel build jobs (default: 2)
#   CMAKE_ARGS extra configure arguments, e.g. -DRSSM_CUDA=OFF (a CPU-only build where nvcc exists)
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=()
while (($#)); do
  case "$1" in
    --target) TARGET=(--target "$2"); shift 2 ;;
    *) echo "setup: unknown argument '$1' (expected --target NAME)" >&2; exit 2 ;;
  esac
done

# python3-*: the analysis scripts (analysis/, Debian's /usr/bin/python3; docs in analysis/README.md)
PKGS=(build-essential cmake pkg-config libhdf5-dev libgsl-dev libzstd-dev zlib1g-dev libcriterion-dev
      libcjson-dev libinih-dev libpcre2-dev libglib2.0-dev python3-numpy python3-h5py
      python3-pandas python3-matplotlib clang libclang-rt-14-dev)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=()
  if [ "$(id -u)" -ne 0 ]; then SUDO=(sudo); fi
  "${SUDO[@]}" apt-get update
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y --no-install-recommends "${PKGS[@]}"
fi

BUILD_DIR=${BUILD_DIR:-build}
read -r -a EXTRA <<<"${CMAKE_ARGS:-}"
# the CUDA paths unless asked otherwise (a cache that a CPU-only quickstart left is switched back)
if [[ " ${CMAKE_ARGS:-} " != *" -DRSSM_CUDA="* ]]; then EXTRA+=(-DRSSM_CUDA=ON); fi
cmake -S . -B "$BUILD_DIR" -DRSSM_WERROR=ON "${EXTRA[@]}"
cmake --build "$BUILD_DIR" -j"${JOBS:-2}" "${TARGET[@]}"
