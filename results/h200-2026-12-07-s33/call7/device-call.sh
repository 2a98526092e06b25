#!/usr/bin/env bash
# Session 33, call 7 (issue 18): call 6's script again, one change later. The tensor-core GEMM
# keeps 8 k-steps of W a warp in flight where the block has <= 2 tiles of X (prefetch_of), so
# that Nemotron's MLP down projection (1920 columns) is loaded whole before the PDL wait; the
# order of the sums is unchanged, so the bits must be too.
#   old  .devrun/old: a91b65e (call 6's new build)
#   new  .devrun/bin: the change
# Carry .devrun.txz; trim as call 6. ~100 s.
exec bash "$(dirname "$0")/../call6/device-call.sh"
