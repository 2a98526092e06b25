/* The row tile of a device model's GEMMs (mc_tile.h). */
#include "src/model_cuda/mc_tile.h"

/* Why two tiles: cuBLAS is always called with n = tile rows (row-count invariance), so a batch
 * of R rows pays for mc_rows_pad(R, tile) rows of GEMM work.
 *  - Large models (GEMM weights over 1 GiB: the 4B checkpoints carry ~16.8 GB fp32, ~8.4 GB
 *    bf16) run a few rows per step (the 4B rehearsal: 9) and are weight-bandwidth-bound at a
 *    few rows: at 64 rows the fp32 GEMMs are compute-bound (Qwen3.5-4B: 16.1 ms per step on an
 *    H200 against 3.8 ms for reading the weights once), so a 9-row batch wastes most of its
 *    GEMM time on padding rows. A tile of 16 keeps a 9-row step near the weight-read time.
 *  - Small models (the test fixtures, the trained tiny models) are launch-bound: fewer, larger
 *    GEMM calls are faster, and keeping 64 keeps their GPU results and golden comparisons as
 *    they were. */
int mc_row_tile_for(int64_t gemm_weight_bytes) {
  return gemm_weight_bytes > MC_ROW_TILE_SMALL_ABOVE_BYTES ? MC_ROW_TILE_SMALL
                                                          : MC_ROW_TILE_LARGE;
}

int64_t mc_rows_pad(int64_t rows, int tile) {
  if (tile < 1) tile = 1;
  return (rows + tile - 1) / tile * tile;
}
