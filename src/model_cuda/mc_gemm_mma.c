/* The host-side choices of the tensor-core GEMM (mc_gemm_mma.h): which models use it, its warp
 * count per block and the arguments it takes. Pure C, so that the CPU build and its tests have them. */
#include "src/model_cuda/mc_gemm_mma.h"

#include <stdint.h>

int mc_gemm_mma_warps(int64_t rows, int64_t cols, int sms) {
  const int64_t blocks = (rows + 15) / 16; /* one block per 16 weight rows */
  const int64_t steps = (cols + 31) / 32;  /* 32-k steps of a row */
  if (sms > 0 && blocks >= 4 * (int64_t)sms) return 4;
  if (sms > 0 && blocks <= sms && steps > 8 * MC_GEMM_MMA_PREFETCH) return 16;
  return 8;
}

int mc_gemm_mma_for_model(int64_t gemm_bytes) {
  return gemm_bytes > 0 && gemm_bytes <= MC_GEMM_MMA_MODEL_BYTES;
}

int mc_gemm_mma_supported(const void *W, const void *X, int R, int64_t rows, int64_t cols,
                          int64_t ldy) {
  if (R < 1 || R > MC_GEMM_MMA_MAX_R || rows < 1 || cols < 1) return 0;
  if (rows > INT32_MAX || cols > INT32_MAX || ldy < rows || cols % 8 != 0) return 0;
  /* 16-byte loads of W rows and X rows: the bases aligned, and cols % 8 == 0 keeps every row of
     bf16 W (and of bf16 or fp32 X) on a 16-byte boundary */
  return ((uintptr_t)W & 15) == 0 && ((uintptr_t)X & 15) == 0;
}

int mc_gemm_mma_act_supported(const void *W, const void *X, int R, int64_t rows, int64_t cols,
                              int64_t lda, int act) {
  if (act == MC_GEMM_MMA_ACT_RELU2) return mc_gemm_mma_supported(W, X, R, rows, cols, lda);
  if (act != MC_GEMM_MMA_ACT_SWIGLU || rows % 2 != 0 || lda < rows / 2) return 0;
  return mc_gemm_mma_supported(W, X, R, rows, cols, rows); /* Y's width checked above */
}

int mc_gemm_mma_row_tiles(int R) { return R <= 8 ? 1 : R <= 16 ? 2 : R <= 32 ? 4 : 8; }
