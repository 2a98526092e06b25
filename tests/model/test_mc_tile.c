/* src/model_cuda/mc_tile.c: the GEMM row tile of a device model (docs/gpu-runtime.md, "GEMMs and
 * the row tile"). The tile is a function of the model's GEMM weight bytes alone (never of a
 * batch's rows), so every batch of a model calls cuBLAS with the same n; here the rule at its
 * threshold and on the sizes of the models the harness runs, and the padding it implies. The
 * 4B shapes' own GEMM bytes (from their config.json) are checked through `bench e2e --dry-run`
 * (tests/bench_e2e/test_bench_e2e_cli.c), which calls the same function. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "src/model_cuda/mc_tile.h"

Test(mc_tile, threshold_is_one_gib_of_fp32_gemm_weights) {
  const int64_t gib = (int64_t)1 << 30;
  cr_expect_eq(MC_ROW_TILE_SMALL_ABOVE_BYTES, gib);
  cr_expect_eq(mc_row_tile_for(0, 0), 64);
  cr_expect_eq(mc_row_tile_for(gib, 0), 64, "at the threshold: still the large tile");
  cr_expect_eq(mc_row_tile_for(gib + 1, 0), 16, "above it: the small tile");
  /* the transformers fixtures and trained tiny models: kilobytes to a few megabytes */
  cr_expect_eq(mc_row_tile_for(300 * 1024, 0), 64);
  cr_expect_eq(mc_row_tile_for((int64_t)40 << 20, 0), 64);
  /* Qwen3.5-4B / Nemotron-3-Nano-4B: ~4.2 G GEMM weights, 16.8 GB fp32 and 8.4 GB bf16 */
  const int64_t floats_4b = 4200000000LL;
  cr_expect_eq(mc_row_tile_for(4 * floats_4b, 0), 16);
  cr_expect_eq(mc_row_tile_for(2 * floats_4b, 0), 16);
  /* bf16 GEMMs keep 64 at every size: already weight-bandwidth-bound at 64 rows */
  cr_expect_eq(mc_row_tile_for(2 * floats_4b, 1), 64);
  cr_expect_eq(mc_row_tile_for(gib + 1, 1), 64);
  cr_expect_eq(mc_row_tile_for(300 * 1024, 1), 64);
}

Test(mc_tile, padding_is_a_multiple_of_the_tile) {
  const int tiles[] = {MC_ROW_TILE_SMALL, MC_ROW_TILE_LARGE};
  for (int t = 0; t < 2; t++) {
    const int tile = tiles[t];
    for (int64_t R = 1; R <= 300; R++) {
      const int64_t p = mc_rows_pad(R, tile);
      cr_assert(p >= R && p < R + tile && p % tile == 0, "R %lld tile %d: %lld", (long long)R,
                tile, (long long)p);
    }
  }
  /* the 4B rehearsal's 9 rows: one tile of 16 instead of 64 (what the small tile saves) */
  cr_expect_eq(mc_rows_pad(9, 16), 16);
  cr_expect_eq(mc_rows_pad(9, 64), 64);
  cr_expect_eq(mc_rows_pad(17, 16), 32);
  cr_expect_eq(mc_rows_pad(65535, 16), 65536);
  cr_expect_eq(mc_rows_pad(0, 16), 0);
}
