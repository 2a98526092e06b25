/* The row tile of a device model's GEMMs (docs/gpu-runtime.md, "GEMMs and the row tile"). Plain
 * C, built with or without CUDA: the runtime (mc_model.cu), `bench e2e` (its isolated GEMM
 * timings and its dry run) and the CPU tests call the same rule. */
#ifndef RSSM_MODEL_CUDA_MC_TILE_H
#define RSSM_MODEL_CUDA_MC_TILE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The two tiles, and the fp32 GEMM weight bytes above which a model gets the small one. */
#define MC_ROW_TILE_LARGE 64
#define MC_ROW_TILE_SMALL 16
#define MC_ROW_TILE_SMALL_ABOVE_BYTES ((int64_t)1 << 30)

/* Rows per cuBLAS call for a model whose GEMM weights (every matrix a GEMM reads, in the GEMM
 * precision, the lm_head included even when it is the tied embedding) take gemm_weight_bytes on
 * the device, with fp32 GEMMs (bf16 = 0) or bf16 ones (bf16 = 1): MC_ROW_TILE_SMALL for fp32
 * GEMMs above MC_ROW_TILE_SMALL_ABOVE_BYTES, MC_ROW_TILE_LARGE otherwise. A property of the
 * model, never of a batch: every batch of the model calls cuBLAS with the same n, so a row's
 * bits do not depend on how many rows share the step. */
int mc_row_tile_for(int64_t gemm_weight_bytes, int bf16);
/* rows rounded up to a multiple of tile (tile >= 1) */
int64_t mc_rows_pad(int64_t rows, int tile);

#ifdef __cplusplus
}
#endif
#endif
