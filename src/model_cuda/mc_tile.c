/* The row tile of a device model's GEMMs (mc_tile.h). */
#include "src/model_cuda/mc_tile.h"

/* Why two tiles: cuBLAS is always called with n = tile rows (row-count invariance), so a batch
 * of R rows pays for mc_rows_pad(R, tile) rows of GEMM work, and reads the weights once per tile.
 *  - Large models with fp32 GEMMs (over 1 GiB: the 4B checkpoints carry ~16.8 GB fp32) run a
 *    few rows per step (the 4B rehearsal: 9): at 64 rows their GEMMs are compute-bound
 *    (Qwen3.5-4B: 16.1 ms per step on an H200 against 3.8 ms for reading the weights once), so a
 *    9-row batch wastes most of its GEMM time on padding rows. A tile of 16 should keep a 9-row
 *    step near the weight-read time, and a 64-row batch should pay four such tiles, about what
 *    one compute-bound 64-row call costs (expectations from those two figures, to be measured:
 *    docs/next-session.md).
 *  - bf16 GEMMs (~8.4 GB for the 4B models) are already weight-bandwidth-bound at 64 rows (4.4
 *    ms per step, docs/gpu-results.md "End-to-end benchmark"): a tile of 16 could save at most
 *    half of that at 9 rows and would read the weights four times at 64, so they keep 64.
 *  - Small models (the test fixtures, the trained tiny models) are launch-bound: fewer, larger
 *    GEMM calls are faster, and keeping 64 keeps their GPU results and golden comparisons as
 *    they were. */
int mc_row_tile_for(int64_t gemm_weight_bytes, int bf16) {
  return !bf16 && gemm_weight_bytes > MC_ROW_TILE_SMALL_ABOVE_BYTES ? MC_ROW_TILE_SMALL
                                                                   : MC_ROW_TILE_LARGE;
}

int64_t mc_rows_pad(int64_t rows, int tile) {
  if (tile < 1) tile = 1;
  return (rows + tile - 1) / tile * tile;
}
