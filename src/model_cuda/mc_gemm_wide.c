/* The host-side rules of the wide tensor-core GEMM (mc_gemm_wide.h): its split count, scratch
 * sizes and the arguments it takes. Pure C, so that the CPU build and its tests have them. */
#include "src/model_cuda/mc_gemm_wide.h"

#include <stdint.h>

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t mc_gemm_wide_tiles_per_split(int64_t cols, int nsplit) {
  const int64_t nkt = ceil_div(cols > 0 ? cols : 1, MC_GEMM_WIDE_KT);
  return ceil_div(nkt, nsplit > 0 ? nsplit : 1);
}

int mc_gemm_wide_splits(int64_t rows, int64_t cols, int sms) {
  if (rows < 1 || cols < 1 || sms < 1) return 1;
  const int64_t tiles = ceil_div(rows, MC_GEMM_WIDE_ROWS), nkt = ceil_div(cols, MC_GEMM_WIDE_KT);
  const int64_t slots = (int64_t)MC_GEMM_WIDE_SM_BLOCKS * sms;
  int64_t n = slots / tiles; /* one wave */
  if (n > nkt / MC_GEMM_WIDE_MIN_TILES) n = nkt / MC_GEMM_WIDE_MIN_TILES;
  if (n > MC_GEMM_WIDE_MAX_SPLITS) n = MC_GEMM_WIDE_MAX_SPLITS;
  if (n < 1) return 1;
  /* the splits ceil(nkt / n) k-tiles long cover nkt in ceil(nkt / per) of them: none empty */
  return (int)ceil_div(nkt, ceil_div(nkt, n));
}

size_t mc_gemm_wide_scratch_floats(int R, int64_t rows, int nsplit) {
  if (nsplit <= 1 || R < 1 || rows < 1) return 0;
  return (size_t)nsplit * (size_t)R * (size_t)rows;
}

/* nsplit > 1 only where tiles nsplit <= slots, and rows <= 128 tiles: nsplit rows <= 128 slots */
size_t mc_gemm_wide_scratch_max(int sms) {
  const int64_t slots = (int64_t)MC_GEMM_WIDE_SM_BLOCKS * (sms > 0 ? sms : 1);
  return (size_t)MC_GEMM_WIDE_MAX_R * MC_GEMM_WIDE_ROWS * (size_t)slots;
}

int mc_gemm_wide_supported(const void *W, const void *X, int R, int64_t rows, int64_t cols,
                           int64_t ldy) {
  if (R < 1 || R > MC_GEMM_WIDE_MAX_R || rows < 1 || cols < 1) return 0;
  if (rows > INT32_MAX || cols > INT32_MAX || ldy < rows || cols % 8 != 0) return 0;
  return ((uintptr_t)W & 15) == 0 && ((uintptr_t)X & 15) == 0;
}
