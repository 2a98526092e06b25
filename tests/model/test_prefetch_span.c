/* src/model_cuda/mc_prefetch.c: the L2 prefetch's budgets from RSSM_L2_PREFETCH(_STATE) and the
 * bytes of each weight row it asks for, held to their definitions (mc_prefetch.h). */
#include <criterion/criterion.h>

#include <stdint.h>
#include <stdlib.h>

#include "src/model_cuda/mc_prefetch.h"

/* Criterion runs each test in its own process, so each reads the switch afresh. */
Test(prefetch, budget_from_the_switch) {
  setenv("RSSM_L2_PREFETCH", "16", 1);
  setenv("RSSM_L2_PREFETCH_STATE", "64", 1);
  cr_assert_eq(mc_l2_prefetch_budget(), (int64_t)16 << 20);
  cr_assert_eq(mc_l2_prefetch_state_budget(), (int64_t)64 << 20);
  setenv("RSSM_L2_PREFETCH", "8", 1);
  cr_assert_eq(mc_l2_prefetch_budget(), (int64_t)16 << 20, "read once: a graph launches alike");
}

Test(prefetch, unset_or_unknown_is_off) {
  unsetenv("RSSM_L2_PREFETCH");
  setenv("RSSM_L2_PREFETCH_STATE", "16M", 1); /* not one of the values: off, with a line */
  cr_assert_eq(mc_l2_prefetch_budget(), 0);
  cr_assert_eq(mc_l2_prefetch_state_budget(), 0);
}

Test(prefetch, span_divides_the_budget_over_the_rows) {
  const int64_t MiB = (int64_t)1 << 20;
  /* qwen3.5-4b's GDN input projection: 12352 rows of 2560 bf16, 16 MiB ahead: 1358 -> 1344 */
  cr_assert_eq(mc_l2_prefetch_span(12352, 5120, 16 * MiB), 1344);
  /* a budget above the matrix: whole rows (rounded down to 16 bytes) */
  cr_assert_eq(mc_l2_prefetch_span(100, 5120, 1024 * MiB), 5120);
  cr_assert_eq(mc_l2_prefetch_span(100, 5128, 1024 * MiB), 5120);
  /* the lm_head of a 248320-token vocabulary: 67 bytes a row at 16 MiB, below the minimum */
  cr_assert_eq(mc_l2_prefetch_span(248320, 5120, 16 * MiB), 0);
  cr_assert_eq(mc_l2_prefetch_span(65536, 5120, 16 * MiB), 256); /* exactly the minimum */
  cr_assert_eq(mc_l2_prefetch_span(65537, 5120, 16 * MiB), 0);
  /* every span is a multiple of 16, at most the row, and within the budget */
  for (int64_t rows = 1; rows < 5000; rows += 37)
    for (int64_t row_bytes = 16; row_bytes < 20000; row_bytes += 1111) {
      const int64_t s = mc_l2_prefetch_span(rows, row_bytes, 4 * MiB);
      cr_assert(s == 0 || (s % 16 == 0 && s >= 256 && s <= row_bytes && s * rows <= 4 * MiB),
                "rows %lld row_bytes %lld: span %lld", (long long)rows, (long long)row_bytes,
                (long long)s);
    }
  cr_assert_eq(mc_l2_prefetch_span(0, 5120, MiB), 0);
  cr_assert_eq(mc_l2_prefetch_span(10, 0, MiB), 0);
  cr_assert_eq(mc_l2_prefetch_span(10, 5120, 0), 0);
}
