/* splits_launched (src/model_cuda/attn_lab_stream.cuh), the attention stream kernel's trimmed grid,
 * held to its definition on the host: the most splits_used(p, nsplit) over every position p below
 * max_ctx, for split counts 1..140 and contexts up to past MIN_SPLIT nsplit (where it reaches
 * nsplit). A grid smaller than that would drop a split some position uses; a larger one only
 * launches blocks that return at once. */
#include <criterion/criterion.h>

#include <stdint.h>

#include "src/model_cuda/attn_lab_stream.cuh"

Test(attn_splits, the_grid_is_the_most_splits_any_position_uses) {
  int cases = 0;
  for (int nsplit = 1; nsplit <= 140; nsplit++) {
    int most = 0; /* max of splits_used over p < max_ctx, grown position by position */
    const int64_t top = (int64_t)attn_lab::MIN_SPLIT * nsplit + 100;
    for (int64_t max_ctx = 1; max_ctx <= top; max_ctx++) {
      const int u = attn_lab::splits_used(max_ctx - 1, nsplit);
      cr_assert(u >= 1 && u <= nsplit, "nsplit %d p %lld: splits_used %d", nsplit,
                (long long)(max_ctx - 1), u);
      most = u > most ? u : most;
      cr_assert_eq(attn_lab::splits_launched(max_ctx, nsplit), most, "nsplit %d max_ctx %lld",
                   nsplit, (long long)max_ctx);
      cases++;
    }
    cr_assert_eq(most, nsplit, "nsplit %d: some position uses every split", nsplit);
    /* far contexts (the paper's 131072) launch every split */
    cr_assert_eq(attn_lab::splits_launched(131072, nsplit), nsplit);
  }
  cr_assert_gt(cases, 100000);
}

/* trim_grid: the fixtures' grids (66 splits x 2 kv heads x 16 rows on a 132-SM device) stay
 * whole, the 4B shapes' at K = 64 (33 x 4 x 64) are trimmed, and RSSM_ATTN_TRIM's value wins. */
Test(attn_splits, large_grids_are_trimmed_and_the_switch_forces_it) {
  cr_assert(!attn_lab::trim_grid(66, 2, 16, -1));
  cr_assert(attn_lab::trim_grid(33, 4, 64, -1));
  cr_assert(!attn_lab::trim_grid(33, 4, 64, 0));
  cr_assert(attn_lab::trim_grid(66, 2, 16, 1));
  /* the rule is on the block count: one more block past the bound trims */
  cr_assert(!attn_lab::trim_grid(1, 1, (int)attn_lab::ATTN_TRIM_BLOCKS, -1));
  cr_assert(attn_lab::trim_grid(1, 1, (int)attn_lab::ATTN_TRIM_BLOCKS + 1, -1));
}
