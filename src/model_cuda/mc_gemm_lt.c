/* The host rule of the cuBLASLt GEMMs (mc_gemm_lt.h): which weights RSSM_GEMM_LT sends to which
 * ranked algorithm. Pure C, so that the CPU tests hold it to its definition. */
#include "src/model_cuda/mc_gemm_lt.h"

#include "src/io/env_switch.h"

/* index 0 off; 1..8 out0..out7; 9..16 all0..all7 */
static const char *const rules[] = {"off",  "out0", "out1", "out2", "out3", "out4",
                                    "out5", "out6", "out7", "all0", "all1", "all2",
                                    "all3", "all4", "all5", "all6", "all7"};

mc_gemm_lt_rule mc_gemm_lt_rule_from_env(void) {
  const int n = (int)(sizeof rules / sizeof rules[0]);
  const int i = rssm_env_switch("RSSM_GEMM_LT", rules, n, 0);
  mc_gemm_lt_rule r = {-1, 0};
  if (i >= 1 && i <= MC_GEMM_LT_RANKS)
    r.rank = i - 1, r.out_only = 1;
  else if (i > MC_GEMM_LT_RANKS)
    r.rank = i - 1 - MC_GEMM_LT_RANKS, r.out_only = 0;
  return r;
}

int mc_gemm_lt_takes(mc_gemm_lt_rule rule, int64_t rows, int64_t cols) {
  if (rule.rank < 0 || rows <= 0 || cols <= 0) return 0;
  return !rule.out_only || rows < cols;
}
