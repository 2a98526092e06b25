/* src/model_cuda/mc_gemm_lt.c: the rule RSSM_GEMM_LT names (which weights go to which of
 * cuBLASLt's ranked algorithms), held to its definition (mc_gemm_lt.h). */
#include <criterion/criterion.h>

#include <stdlib.h>

#include "src/model_cuda/mc_gemm_lt.h"

/* Criterion runs each test in its own process, so each reads the switch afresh. */
Test(gemm_lt, output_projections_only) {
  setenv("RSSM_GEMM_LT", "out3", 1);
  const mc_gemm_lt_rule r = mc_gemm_lt_rule_from_env();
  cr_assert(r.rank == 3 && r.out_only == 1);
  /* qwen3.5-4b: the MLP's down projection (2560 x 9216) goes, its input projection does not */
  cr_assert(mc_gemm_lt_takes(r, 2560, 9216));
  cr_assert(mc_gemm_lt_takes(r, 2560, 4096));
  cr_assert(!mc_gemm_lt_takes(r, 18432, 2560));
  cr_assert(!mc_gemm_lt_takes(r, 248320, 2560)); /* the lm_head */
  cr_assert(!mc_gemm_lt_takes(r, 2560, 2560));   /* square: not fewer rows than columns */
}

Test(gemm_lt, every_gemm) {
  setenv("RSSM_GEMM_LT", "all7", 1);
  const mc_gemm_lt_rule r = mc_gemm_lt_rule_from_env();
  cr_assert(r.rank == 7 && r.out_only == 0);
  cr_assert(mc_gemm_lt_takes(r, 18432, 2560) && mc_gemm_lt_takes(r, 2560, 9216));
  cr_assert(!mc_gemm_lt_takes(r, 0, 2560) && !mc_gemm_lt_takes(r, 2560, 0));
}

Test(gemm_lt, unset_off_or_unknown_takes_nothing) {
  const char *values[] = {NULL, "off", "out8", "all", "lt0", "out-1"};
  for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
    if (values[i])
      setenv("RSSM_GEMM_LT", values[i], 1);
    else
      unsetenv("RSSM_GEMM_LT");
    const mc_gemm_lt_rule r = mc_gemm_lt_rule_from_env();
    cr_assert_eq(r.rank, -1, "%s", values[i] ? values[i] : "(unset)");
    cr_assert(!mc_gemm_lt_takes(r, 2560, 9216), "%s", values[i] ? values[i] : "(unset)");
  }
}

Test(gemm_lt, the_first_rank_of_each_form) {
  setenv("RSSM_GEMM_LT", "out0", 1);
  mc_gemm_lt_rule r = mc_gemm_lt_rule_from_env();
  cr_assert(r.rank == 0 && r.out_only == 1);
  setenv("RSSM_GEMM_LT", "all0", 1);
  r = mc_gemm_lt_rule_from_env();
  cr_assert(r.rank == 0 && r.out_only == 0);
}
