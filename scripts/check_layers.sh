#!/bin/bash
# The layering of docs/architecture.md, checked on every #include "..." under src/ and quant/:
#
#   7 src/cli                                   the commands
#   6 src/driver src/bench_e2e src/bench_kernels src/bench_attn src/bench_gemm
#                                               the experiment driver and the benchmarks
#   5 src/decode                                the seam: decoder and engine interfaces, back ends
#   4 src/model_cuda                            the GPU model runtime
#   3 src/model src/ssm_cuda src/sim src/theory the CPU model runtime, the GPU SSM engine, studies
#   2 src/ssm src/tokens                        the SSM state engine, token streams and tokenizers
#   1 quant                                     number formats and rounding
#   0 src/io                                    files, text formats, errors
#
# A file may include a header of its own folder or of a lower layer, never one of a higher layer
# nor of another folder of its own layer, and never another folder's private header (*_internal.h,
# *.cuh). A folder missing from the table is an error too (give it a layer here and in
# docs/architecture.md). System headers (<...>) are not checked.
#
#   scripts/check_layers.sh [ROOT]     ROOT: the repository (default: this script's parent)
# Prints one line per violation and exits 1 when there is any, 0 otherwise.
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2

layer_of() {
  case $1 in
    src/io) echo 0 ;;
    quant) echo 1 ;;
    src/ssm | src/tokens) echo 2 ;;
    src/model | src/ssm_cuda | src/sim | src/theory) echo 3 ;;
    src/model_cuda) echo 4 ;;
    src/decode) echo 5 ;;
    src/driver | src/bench_e2e | src/bench_kernels | src/bench_attn | src/bench_gemm) echo 6 ;;
    src/cli) echo 7 ;;
    *) echo -1 ;;
  esac
}

bad=0
nfiles=0
nincl=0
while IFS= read -r file; do
  nfiles=$((nfiles + 1))
  dir=$(dirname "$file")
  mine=$(layer_of "$dir")
  if [ "$mine" -lt 0 ]; then
    echo "$file: folder $dir has no layer (add it to scripts/check_layers.sh)"
    bad=1
    continue
  fi
  while IFS=: read -r line hdr; do
    nincl=$((nincl + 1))
    hdir=$(dirname "$hdr")
    [ "$hdir" = "$dir" ] && continue
    theirs=$(layer_of "$hdir")
    base=$(basename "$hdr")
    if [ "$theirs" -lt 0 ]; then
      echo "$file:$line: includes $hdr, outside the layered folders"
      bad=1
    elif [ "$theirs" -gt "$mine" ]; then
      echo "$file:$line: includes $hdr of layer $theirs ($hdir) from layer $mine ($dir): a higher layer"
      bad=1
    elif [ "$theirs" -eq "$mine" ]; then
      echo "$file:$line: includes $hdr of $hdir, another folder of its own layer $mine"
      bad=1
    elif [[ $base == *_internal.h || $base == *.cuh ]]; then
      echo "$file:$line: includes $hdr, a private header of $hdir"
      bad=1
    fi
  done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" |
    sed -E 's/^([0-9]+):[[:space:]]*#[[:space:]]*include[[:space:]]*"([^"]+)".*/\1:\2/')
done < <(find src quant -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort)

if [ "$bad" -ne 0 ]; then
  echo "check_layers: FAILED ($nfiles files, $nincl includes; docs/architecture.md has the layers)"
  exit 1
fi
echo "check_layers: ok ($nfiles files, $nincl includes, every one downwards)"
