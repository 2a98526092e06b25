/* src/model_cuda/mc_prefetch.c: the L2 prefetch's budget from RSSM_L2_PREFETCH and the bytes of
 * each weight row it asks for, held to their definitions (mc_prefetch.h). */
#include <criterion/criterion.h>

#include <stdint.h>

#include "src/model_cuda/mc_prefetch.h"

Test(prefetch, budget_is_whole_mib_or_refused) {
  int bad = 0;
  cr_assert_eq(mc_l2_prefetch_parse(NULL, &bad), 0);
  cr_assert_eq(bad, 0, "unset is off, not an error");
  cr_assert_eq(mc_l2_prefetch_parse("0", &bad), 0);
  cr_assert_eq(mc_l2_prefetch_parse("16", &bad), (int64_t)16 << 20);
  cr_assert_eq(mc_l2_prefetch_parse("1024", &bad), (int64_t)1024 << 20);
  cr_assert_eq(bad, 0);
  const char *wrong[] = {"", "x", "8M", "-1", "1025", "1.5", " 8", "99999999999999999999"};
  for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
    bad = 0;
    cr_assert_eq(mc_l2_prefetch_parse(wrong[i], &bad), 0, "\"%s\" gives no budget", wrong[i]);
    cr_assert_eq(bad, 1, "\"%s\" is reported", wrong[i]);
  }
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
